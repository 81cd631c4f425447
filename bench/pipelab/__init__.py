"""The lab (issue 12): a real data pipeline drives a simulated GPU, the real monitor names
the bottleneck, and the lab follows its advice (docs/lab.md, ``python bench/lab.py``).

:mod:`.trainer` is the training-loop-shaped program (a child process with real
DataLoader-like worker processes); :mod:`.board` is the shared memory it records its
simulated GPU use in; :mod:`.monitor` runs the project's live source and hint engine on
a fake NVML fed from that memory; :mod:`.scenarios` holds the configurations and the
closed loop (advice -> changed configuration).
"""
