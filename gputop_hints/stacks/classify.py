"""Reading samples: where the main thread spends them, in the user's words.

Each main-thread sample falls in one category, checked in this order (the first that
matches wins; docs/stacks.md cites torch's files and functions):

* ``collective-wait``: a torch.distributed collective or wait (``torch/distributed/``
  ``barrier``, ``all_reduce``, ``Work.wait`` ...) or an NCCL-named frame;
* ``waiting-for-batch``: torch's DataLoader fetching from its workers
  (``torch/utils/data/dataloader.py`` ``_get_data`` / ``_try_get_data``, the
  multiprocessing iterator's ``_next_data``), or generically a blocking ``get`` /
  ``recv`` / ``poll`` / ``wait`` of ``queue``, ``multiprocessing``, ``threading`` or
  ``selectors`` called under an iterator's ``__next__`` or a function whose name says
  next batch;
* ``loading-in-main``: building a batch in this process -- a ``__getitem__``, a
  ``collate``, torch's fetcher (``torch/utils/data/_utils/fetch.py``), torchvision,
  PIL or numpy under a next-batch frame, or any work under a next-batch frame that is
  not a blocking receive;
* ``host-device-sync``: the innermost user frame's source line calls ``.item()``,
  ``.cpu()``, ``.tolist()``, ``.numpy()``, ``torch.cuda.synchronize`` or
  ``.to("cpu")`` (read from the file py-spy names; when that frame is itself a method
  named like one of those -- a wrapper -- its caller's line);
* ``copying-to-gpu``: the innermost user frame's source line copies to the device --
  ``.cuda(`` or ``.to(`` naming a device (``device``, ``"cuda``, a rank,
  ``non_blocking``), not ``"cpu"`` (when that frame is itself a method named ``to`` or
  ``cuda`` -- a wrapper -- its caller's line): from pageable memory the host stages the
  copy itself, so the time shows on the main thread;
* ``python-launch``: in torch.nn modules, autograd or the optimizers, or a
  ``forward`` / ``backward``: the host is busy issuing the model's work from Python;
* ``other``: anything else, named by its top user frame.

The main thread is counted on every sample, idle or not: a thread waiting for its
next batch is exactly what py-spy calls idle. Workers are counted on their busy
samples only (an idle worker waits for work: it is not where it spends its time).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from gputop_hints.stacks.sampler import Frame, ProcessSamples, StackSamples

CATEGORIES = (
    "compiling",
    "waiting-for-batch",
    "loading-in-main",
    "host-device-sync",
    "collective-wait",
    "copying-to-gpu",
    "python-launch",
    "other",
)

WORDS = {
    "compiling": "compiling (torch.compile)",
    "waiting-for-batch": "waiting for the next batch",
    "loading-in-main": "loading batches itself",
    "host-device-sync": "waiting on the GPU (sync)",
    "collective-wait": "waiting on other ranks",
    "copying-to-gpu": "copying to the GPU",
    "python-launch": "launching work from Python",
    "other": "elsewhere",
}
"""Each of :data:`CATEGORIES` in words, as the views and the findings write it."""

TOP_FRAMES = 5
_LINE_BYTES = 4 * 1024 * 1024
"""The most of a source file read to find one line (a generated file can be huge)."""

_STDLIB = re.compile(r"/lib(?:64)?/python\d+(?:\.\d+)?t?/")
_SITE = ("site-packages", "dist-packages")

_RECEIVES = {"get", "recv", "recv_bytes", "_recv_bytes", "_recv", "poll", "_poll", "wait", "select"}
_RECEIVE_FILES = (
    "/queue.py",
    "/multiprocessing/",
    "/threading.py",
    "/selectors.py",
    "/torch/multiprocessing/",
)
_TORCH_DATALOADER = "torch/utils/data/dataloader.py"
_NEXT_BATCH = re.compile(
    r"next.?batch|batch.?next|(get|fetch|load).?batch|next_data", re.IGNORECASE
)
_LOADING_FILES = (
    "torch/utils/data/_utils/fetch.py",
    "torch/utils/data/_utils/collate.py",
    "/torchvision/",
    "/PIL/",
    "/numpy/",
    "/albumentations/",
)
_COLLECTIVES = {
    "barrier",
    "monitored_barrier",
    "all_reduce",
    "all_gather",
    "all_gather_into_tensor",
    "all_gather_object",
    "reduce_scatter",
    "reduce_scatter_tensor",
    "broadcast",
    "broadcast_object_list",
    "all_to_all",
    "all_to_all_single",
    "reduce",
    "gather",
    "scatter",
    "send",
    "recv",
    "wait",
    "synchronize",
}
_LAUNCH_FILES = ("torch/nn/", "torch/autograd/", "torch/optim/", "torch/_tensor.py")
_SYNC_CALL = re.compile(
    r"\.(item|cpu|tolist|numpy)\(\s*\)|cuda\.synchronize\(|\.to\(\s*(device\s*=\s*)?"
    r"""(["']cpu["']|torch\.device\(\s*["']cpu["']\s*\))"""
)
_SYNC_NAMES = {"item", "cpu", "tolist", "numpy", "synchronize", "to"}
_COPY_CALL = re.compile(
    r"""\.cuda\(|\.to\((?!\s*(device\s*=\s*)?(["']cpu["']|torch\.device\(\s*["']cpu))"""
    r"""[^)]*(device|cuda|rank|non_blocking)"""
)
_COPY_NAMES = {"to", "cuda"}


@dataclass(frozen=True)
class FrameCount:
    """A frame and how many of a category's samples it was the one named for."""

    frame: Frame
    samples: int
    user: bool

    def to_dict(self) -> dict[str, Any]:
        f = self.frame
        return {
            "function": f.function,
            "file": f.file,
            "line": f.line,
            "samples": self.samples,
            "user": self.user,
        }


@dataclass(frozen=True)
class Category:
    """One category's share of the main thread's samples and its top frames, user code
    first (for host-device-sync the frame is the line that syncs)."""

    name: str
    samples: int
    share: float
    top_frames: tuple[FrameCount, ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "words": WORDS.get(self.name, self.name),
            "samples": self.samples,
            "share": self.share,
            "top_frames": [f.to_dict() for f in self.top_frames],
        }


@dataclass(frozen=True)
class WorkerReading:
    """Where one worker spends its busy samples: its innermost user frames."""

    pid: int
    samples: int
    busy_samples: int
    top_frames: tuple[FrameCount, ...]
    reason: str | None = None
    kind: str | None = None
    """"compile" or "dataloader" as its stack tells (:func:`worker_kind`), else None."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "pid": self.pid,
            "samples": self.samples,
            "busy_samples": self.busy_samples,
            "kind": self.kind,
            "reason": self.reason,
            "top_frames": [f.to_dict() for f in self.top_frames],
        }


@dataclass(frozen=True)
class StackReading:
    """The main thread's samples by category (largest share first), and the workers'."""

    pid: int
    samples: int
    categories: tuple[Category, ...]
    workers: tuple[WorkerReading, ...] = ()
    reason: str | None = None
    notes: tuple[str, ...] = field(default=())

    def share(self, name: str) -> float:
        return next((c.share for c in self.categories if c.name == name), 0.0)

    def category(self, name: str) -> Category | None:
        return next((c for c in self.categories if c.name == name), None)

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON (``--json``'s ``stacks[]``, docs/json.md): the strings are the
        target's own (function and file names), data here, never printed raw."""
        return {
            "pid": self.pid,
            "samples": self.samples,
            "reason": self.reason,
            "notes": list(self.notes),
            "categories": [c.to_dict() for c in self.categories],
            "workers": [w.to_dict() for w in self.workers],
        }

    @classmethod
    def from_dict(cls, data: Any) -> StackReading:
        """The reading :meth:`to_dict` wrote (:func:`reading_from_dict`); raises
        :class:`BadReading` (a ValueError) naming the key of a value of the wrong type."""
        return reading_from_dict(data)


class BadReading(ValueError):
    """A stack reading's JSON (a recording's ``stack`` line) with a value of the wrong
    type; the message names the key."""


def _want(data: Any, key: str, kinds: tuple[type, ...], where: str) -> Any:
    """``data[key]``, checked to be one of ``kinds`` (a bool is never a number here)."""
    if data.__class__ is not dict:
        raise BadReading(f"{where} is not an object")
    value = data.get(key)
    if value.__class__ not in kinds:
        raise BadReading(f"key {where}.{key} is not {' or '.join(_KIND_WORDS[k] for k in kinds)}")
    return value


_KIND_WORDS = {int: "an integer", float: "a number", str: "text", list: "a list",
               bool: "true/false", type(None): "null"}  # fmt: skip


def _count(data: Any, key: str, where: str) -> int:
    value = _want(data, key, (int,), where)
    if value < 0:
        raise BadReading(f"key {where}.{key} is negative")
    return int(value)


def _frames_from(data: Any, where: str) -> tuple[FrameCount, ...]:
    out = []
    for i, f in enumerate(_want(data, "top_frames", (list,), where)):
        here = f"{where}.top_frames[{i}]"
        out.append(
            FrameCount(
                Frame(
                    _want(f, "function", (str,), here),
                    _want(f, "file", (str,), here),
                    _count(f, "line", here),
                ),
                _count(f, "samples", here),
                _want(f, "user", (bool,), here),
            )
        )
    return tuple(out)


def _share(data: Any, where: str) -> float:
    value = _want(data, "share", (int, float), where)
    if not 0.0 <= value <= 1.0:
        raise BadReading(f"key {where}.share is not between 0 and 1")
    return float(value)


def reading_from_dict(data: Any) -> StackReading:
    """The :class:`StackReading` that :meth:`StackReading.to_dict` wrote (a recording's
    ``stack`` line). Raises :class:`BadReading` naming the key at fault; keys it does not
    know are ignored (a newer writer may add some)."""
    where = "stack"
    categories = []
    for i, c in enumerate(_want(data, "categories", (list,), where)):
        here = f"{where}.categories[{i}]"
        categories.append(
            Category(
                _want(c, "name", (str,), here),
                _count(c, "samples", here),
                _share(c, here),
                _frames_from(c, here),
            )
        )
    workers = []
    for i, w in enumerate(_want(data, "workers", (list,), where)):
        here = f"{where}.workers[{i}]"
        workers.append(
            WorkerReading(
                _count(w, "pid", here),
                _count(w, "samples", here),
                _count(w, "busy_samples", here),
                _frames_from(w, here),
                reason=_want(w, "reason", (str, type(None)), here),
                kind=_want(w, "kind", (str, type(None)), here),
            )
        )
    notes = _want(data, "notes", (list,), where)
    if any(n.__class__ is not str for n in notes):
        raise BadReading(f"key {where}.notes holds a value that is not text")
    return StackReading(
        _count(data, "pid", where),
        _count(data, "samples", where),
        tuple(categories),
        tuple(workers),
        reason=_want(data, "reason", (str, type(None)), where),
        notes=tuple(notes),
    )


def is_user_code(frame: Frame) -> bool:
    """Outside site-packages / dist-packages and the standard library (and not one of
    the interpreter's own ``<frozen ...>`` or ``<string>`` frames)."""
    path = frame.file
    if path.startswith("<") or any(s in path for s in _SITE):
        return False
    return not _STDLIB.search(path)


def _short(function: str) -> str:
    return function.rsplit(".", 1)[-1]


def _is_receive(frame: Frame) -> bool:
    return _short(frame.function) in _RECEIVES and any(f in frame.file for f in _RECEIVE_FILES)


def _is_next_batch(frame: Frame) -> bool:
    name = _short(frame.function)
    return name == "__next__" or bool(_NEXT_BATCH.search(name))


def _is_torch_wait(frame: Frame) -> bool:
    if not frame.file.endswith(_TORCH_DATALOADER):
        return False
    name = _short(frame.function)
    return name in ("_get_data", "_try_get_data") or (
        name == "_next_data" and "MultiProcessing" in frame.function
    )


def _is_loading(frame: Frame) -> bool:
    name = _short(frame.function)
    return (
        name in ("__getitem__", "__getitems__")
        or "collate" in name.lower()
        or any(f in frame.file for f in _LOADING_FILES)
    )


def _is_collective(frame: Frame) -> bool:
    if "nccl" in frame.function.lower() or "nccl" in frame.file.lower():
        return True
    if "torch/distributed/" not in frame.file:
        return False
    return _short(frame.function) in _COLLECTIVES or "ProcessGroup" in frame.function


_COMPILE_FILES = ("torch/_dynamo/", "torch/_inductor/", "triton/compiler/", "triton/runtime/build")
"""torch.compile's tracer (dynamo), its compiler (inductor, whose AsyncCompile also waits
on its compile workers there) and triton's kernel compiler: a stack through them is
compiling, not training -- whatever process it is in."""

_LOADER_WORKER = "torch/utils/data/_utils/worker.py"
"""A DataLoader worker's loop (``_worker_loop``): every DataLoader worker's stack runs
through it."""


def _is_compiling(frame: Frame) -> bool:
    return any(f in frame.file for f in _COMPILE_FILES)


def worker_kind(frames: Sequence[Frame]) -> str | None:
    """What a child process is, from its stack: "compile" (torch.compile's workers --
    torch <= 2.3 forks them from the main process, with its command line, so /proc cannot
    tell them from DataLoader workers), "dataloader", or None (not told)."""
    if any(f.file.endswith(_LOADER_WORKER) for f in frames):
        return "dataloader"
    if any(_is_compiling(f) for f in frames):
        return "compile"
    return None


def _is_launch(frame: Frame) -> bool:
    name = _short(frame.function)
    return any(f in frame.file for f in _LAUNCH_FILES) or name in ("forward", "backward")


class _Lines:
    """Source lines read from the files py-spy names, at most :data:`_LINE_BYTES` of
    each, cached for one reading; never raises. The path is tried as seen from the
    target (``/proc/<pid>/root``: its container's files) and as given."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.cache: dict[str, list[str]] = {}

    def line(self, path: str, number: int) -> str:
        if path not in self.cache:
            self.cache[path] = self._read(path)
        lines = self.cache[path]
        return lines[number - 1] if 0 < number <= len(lines) else ""

    def _read(self, path: str) -> list[str]:
        if not path.startswith("/"):
            return []
        for candidate in (f"/proc/{self.pid}/root{path}", path):
            try:
                with open(candidate, "rb") as f:
                    data = f.read(_LINE_BYTES)
            except OSError:
                continue
            return data.decode("utf-8", "replace").splitlines()
        return []


def _line_frame(
    frames: Sequence[Frame], lines: _Lines, call: re.Pattern[str], wrappers: set[str]
) -> Frame | None:
    """The innermost user frame whose source line makes ``call`` (or, where that frame
    is a method named in ``wrappers``, its caller's), or None."""
    users = [f for f in frames if is_user_code(f)]
    if not users:
        return None
    inner = users[0]
    if call.search(lines.line(inner.file, inner.line)):
        return inner
    if _short(inner.function) in wrappers and len(users) > 1:
        caller = users[1]
        if call.search(lines.line(caller.file, caller.line)):
            return caller
    return None


def _sync_frame(frames: Sequence[Frame], lines: _Lines) -> Frame | None:
    """The user frame whose line syncs with the device, or None."""
    return _line_frame(frames, lines, _SYNC_CALL, _SYNC_NAMES)


def _named(frames: Sequence[Frame]) -> Frame | None:
    """The frame a sample is named by: its innermost user frame, else its innermost."""
    return next((f for f in frames if is_user_code(f)), frames[0] if frames else None)


def categorise(frames: Sequence[Frame], lines: _Lines) -> tuple[str, Frame | None]:
    """One main-thread stack (innermost first): its category and the frame naming it."""
    named = _named(frames)
    if any(_is_collective(f) for f in frames):
        return "collective-wait", named
    if any(_is_compiling(f) for f in frames):
        return "compiling", named
    for depth, frame in enumerate(frames):
        if _is_torch_wait(frame):
            return "waiting-for-batch", named
        if _is_next_batch(frame):
            inner = frames[:depth]
            if any(_is_receive(f) for f in inner):
                return "waiting-for-batch", named
            return "loading-in-main", named
    if any(_is_loading(f) for f in frames):
        return "loading-in-main", named
    synced = _sync_frame(frames, lines)
    if synced is not None:
        return "host-device-sync", synced
    copying = _line_frame(frames, lines, _COPY_CALL, _COPY_NAMES)
    if copying is not None:
        return "copying-to-gpu", copying
    if any(_is_launch(f) for f in frames):
        return "python-launch", named
    return "other", named


def _top(counts: Counter[Frame]) -> tuple[FrameCount, ...]:
    ranked = sorted(counts.items(), key=lambda kv: (not is_user_code(kv[0]), -kv[1]))
    return tuple(FrameCount(f, n, is_user_code(f)) for f, n in ranked[:TOP_FRAMES])


def _worker(samples: ProcessSamples) -> WorkerReading:
    counts: Counter[Frame] = Counter()
    kinds: Counter[str] = Counter()
    busy = 0
    for dump in samples.dumps:
        main = samples.main_thread(dump)
        kind = worker_kind(main.frames) if main is not None else None
        if kind is not None:
            kinds[kind] += 1
        for thread in samples.busy_threads(dump):
            named = _named(thread.frames)
            if named is not None:
                counts[named] += 1
                busy += 1
    told = kinds.most_common(1)[0][0] if kinds else None
    return WorkerReading(samples.pid, len(samples.dumps), busy, _top(counts), samples.reason, told)


def classify(samples: StackSamples) -> StackReading:
    """The main thread's samples by category, and each worker's busy frames."""
    main = samples.main
    lines = _Lines(main.pid)
    counts: dict[str, Counter[Frame]] = {name: Counter() for name in CATEGORIES}
    totals: Counter[str] = Counter()
    for dump in main.dumps:
        thread = main.main_thread(dump)
        if thread is None or not thread.frames:
            continue
        name, frame = categorise(thread.frames, lines)
        totals[name] += 1
        if frame is not None:
            counts[name][frame] += 1
    total = sum(totals.values())
    categories = tuple(
        sorted(
            (
                Category(name, totals[name], totals[name] / total, _top(counts[name]))
                for name in CATEGORIES
                if totals[name]
            ),
            key=lambda c: -c.samples,
        )
    )
    notes: list[str] = []
    if main.failed:
        notes.append(f"{main.failed} of the main process's dumps came back empty")
    return StackReading(
        pid=main.pid,
        samples=total,
        categories=categories,
        workers=tuple(_worker(w) for w in samples.workers),
        reason=main.reason or samples.reason,
        notes=tuple(notes),
    )
