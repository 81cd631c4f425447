"""The lab (issue 12, first part): a real data pipeline drives a simulated GPU, and
the real monitor names the bottleneck.

:mod:`.trainer` is the training-loop-shaped program (a child process with real
DataLoader-like worker processes); :mod:`.board` is the shared memory it records its
simulated GPU use in; :mod:`.monitor` runs the project's live source and hint engine on
a fake NVML fed from that memory.

Status: ``num_workers=0`` runs end to end (the verdict comes out of the pipeline:
input-starved, ``cpu-bound`` on a contended 2-core host where the main process gets
under 85 % of a core). Not done yet: runs with workers hang (the trainer never sets
its done flag; suspect the results-queue wait in ``Loader.next_batch`` or the drain in
``Loader.close``), so there are no healthy / fixed / small-batch scenarios, no closed
loop, no ``bench/lab.py`` table, no CI test and no docs/lab.md.
"""
