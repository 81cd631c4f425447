"""NVML's shutdown at exit, skipped while one of our NVML calls is stuck.

nvitop registers an ``atexit`` hook that waits -- up to two minutes -- for every
NVML call in flight to return, then shuts NVML down. A call that never returns
(a wedged driver) would hold the process that long after the user quit, and a
real ``nvmlShutdown`` could block on the lock the stuck call holds. So
:func:`install` puts our own hook in its place: when a registered check says a
call is in flight, NVML is left as it is (the OS reclaims it with the process);
otherwise nvitop's hook runs, waiting at most :data:`DRAIN_TIMEOUT_S`. The
checks are the GPU workers passed to :func:`watch`, held weakly: a worker's own
thread keeps it alive while it is in a call, even after its source is gone.

No Textual here.
"""

from __future__ import annotations

import atexit
import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any, Protocol

from nvitop.api import libnvml

log = logging.getLogger(__name__)

DRAIN_TIMEOUT_S = 0.5
"""How long the exit hook lets calls that are not known to be stuck finish."""



class InFlight(Protocol):
    @property
    def in_flight(self) -> bool: ...


_lock = threading.Lock()
_installed = False
_watched: weakref.WeakSet[Any] = weakref.WeakSet()


def watch(worker: InFlight) -> None:
    """Count ``worker``'s calls (``worker.in_flight``) as ours at exit; held weakly."""
    with _lock:
        _watched.add(worker)


def install() -> None:
    """Take over nvitop's exit hook.

    Ours is registered once per process; nvitop's is unregistered on every
    call -- call it again after NVML's init may have returned (nvitop registers
    its hook then), even from another thread."""
    global _installed
    nvitop_hook: Any = getattr(libnvml, "_atexit_shutdown", None)
    with _lock:
        if nvitop_hook is not None:
            atexit.unregister(nvitop_hook)
        if _installed:
            return
        _installed = True
        atexit.register(_at_exit, nvitop_hook)


def stuck() -> bool:
    """Whether one of the watched workers is in an NVML call now."""
    with _lock:
        workers = list(_watched)
    return any(worker.in_flight for worker in workers)


def _at_exit(nvitop_hook: Callable[..., None] | None) -> None:
    if stuck():
        log.debug("NVML left initialised at exit: a call on a GPU has not returned")
        return
    if nvitop_hook is not None:
        nvitop_hook(timeout=DRAIN_TIMEOUT_S)
