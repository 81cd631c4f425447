"""torch.compile read from a stack: the main thread compiling, a child a compile worker."""

from __future__ import annotations

from gputop_hints.stacks import Frame
from gputop_hints.stacks.classify import _Lines as Lines
from gputop_hints.stacks.classify import categorise, worker_kind

SITE = "/venv/lib/python3.10/site-packages"
USER = Frame("main", "/home/me/train.py", 40)


def test_a_main_thread_waiting_on_inductor_is_compiling() -> None:
    frames = (
        Frame("wait", "/usr/lib/python3.10/threading.py", 320),
        Frame("AsyncCompile.wait", f"{SITE}/torch/_inductor/async_compile.py", 250),
        Frame("compile_fx", f"{SITE}/torch/_inductor/compile_fx.py", 1100),
        Frame("Model.forward", "/home/me/model.py", 12),
        USER,
    )
    name, frame = categorise(frames, Lines(0))
    assert name == "compiling" and frame == Frame("Model.forward", "/home/me/model.py", 12)


def test_a_forked_child_is_told_by_the_loop_it_runs() -> None:
    """torch <= 2.3 forks the compile pool from inside inductor: the child's stack keeps
    the parent's frames down to the fork. A DataLoader worker runs the worker loop."""
    compile_child = (
        Frame("_process_worker", "/usr/lib/python3.10/concurrent/futures/process.py", 240),
        Frame("_warm_pool", f"{SITE}/torch/_inductor/codecache.py", 2400),
        USER,
    )
    loader_child = (
        Frame("_worker_loop", f"{SITE}/torch/utils/data/_utils/worker.py", 308),
        Frame("Loader.__iter__", f"{SITE}/torch/utils/data/dataloader.py", 440),
        USER,
    )
    assert worker_kind(compile_child) == "compile"
    assert worker_kind(loader_child) == "dataloader"
    assert worker_kind((USER,)) is None
