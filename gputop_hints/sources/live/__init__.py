"""The live source: this machine's GPUs through NVML (nvitop's ``api``) and its
host through psutil and /proc. Import :class:`~gputop_hints.sources.live.source.LiveSource`
from ``source``; this package's ``__init__`` stays empty so that the SLURM helpers
below it can be imported without loading NVML.
"""
