"""Plain ``nvidia-smi`` tables, any number appended, line by line.

A :class:`TableReader` is fed one line at a time and hands back each snapshot
when it is complete, so a multi-GB log costs one snapshot of memory. What it
accepts between snapshots: nothing at all, blank lines, ``date`` output or any
separator holding a date (``==== Sun May  4 11:57:03 PM EDT 2025 ====``), shell
prompts and commands. The last date line before a table is its time --
nvidia-smi's own line when present, being the nearest.

A snapshot is complete when its GPU box and its Processes box are closed (or,
in a log whose tables have no Processes box at all, when its GPU box is). One
cut short -- at the end of the file, by the next snapshot's date, or with the
next one glued onto a half-written line -- is a bad record counted at the line
where it started, never a failure of the whole file.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

from gputop_hints.sources.files import _datelines as dates
from gputop_hints.sources.files import _nvsmi_rows as rows
from gputop_hints.sources.files._nvsmi_rows import RowError, TableGpu, TableSnapshot

BadRecord = Callable[[int, str], None]


class _Part(Enum):
    """Where in a table the reader is; the value names it in messages."""

    HEAD = "title"
    GPUS = "GPU box"
    BETWEEN = "space between boxes"
    MIG_HEAD = "MIG devices title"
    MIG_ROWS = "MIG devices box"
    PROC_HEAD = "Processes title"
    PROC_ROWS = "Processes box"


class TableReader:
    """Turns the lines of appended ``nvidia-smi`` tables into :class:`TableSnapshot`.

    ``expect_processes`` says whether the log's tables carry a Processes box
    (false for a ``watch`` screen of 24 rows): when they do, a table that ends
    without one was cut short."""

    def __init__(self, on_bad: BadRecord, *, expect_processes: bool = True) -> None:
        self.on_bad = on_bad
        self.expect_processes = expect_processes
        self.bad_cells = 0
        """Rows inside a snapshot that did not read (the rest of the snapshot is kept)."""
        self.values_rows: dict[int, TableGpu] | None = None
        """Where a caller sets it (the ``watch`` reader, one screen at a time): by line
        number, each GPU whose values row read whole in one match
        (:func:`~._nvsmi_rows.read_values_fast`), all that row told of it. None, as a
        whole log is read, keeps nothing: a line number is never seen twice there."""
        self._date: float | None = None
        self._date_line: int | None = None
        self._snap: TableSnapshot | None = None
        self._part = _Part.HEAD
        self._gpu: TableGpu | None = None
        self._gpu_box_closed = False
        self._processes_closed = False

    # --- feeding ---------------------------------------------------------------

    def feed(self, number: int, line: str) -> TableSnapshot | None:
        """Read one line; returns a snapshot when this line completed one."""
        text = line.strip()
        if not text:
            if self._part is _Part.GPUS and self._gpu_box_closed:
                self._part = _Part.BETWEEN
            return None
        first = text[0]
        if first not in "|+":
            return self._other_line(number, text)
        if text[-1] != first and (at := dates.glued_date(text)) is not None:
            # Half a table line with the next snapshot's date glued on.
            if self._snap is not None:
                self._drop(f"cut short at line {number} (the next snapshot is glued onto it)")
            return self._other_line(number, text[at:])
        if first == "+":
            return self._border(text)
        return self._row(number, text)

    def finish(self) -> TableSnapshot | None:
        """The end of the input: the last snapshot if complete (else counted as bad)."""
        return self._close("cut short at the end of the file")

    # --- line kinds --------------------------------------------------------------

    def _other_line(self, number: int, text: str) -> TableSnapshot | None:
        stamp = dates.date_line(text)
        if stamp is None:
            return None  # a prompt, a command, a message between snapshots
        done = self._close(f"cut short at line {number} by the next date line")
        self._date, self._date_line = stamp, number
        return done

    def _border(self, text: str) -> TableSnapshot | None:
        part = self._part
        if self._snap is None:
            return None
        if part is _Part.GPUS:
            inner = "+" in text[1:-1]
            if self._gpu is not None:
                self._end_gpu()
                self._gpu_box_closed = bool(self._snap.gpus)
            elif not inner and self._gpu_box_closed:
                self._part = _Part.BETWEEN  # the top of the next box
        elif part is _Part.PROC_ROWS:
            self._processes_closed = True
            return self._close("")
        elif part is _Part.MIG_ROWS and "+" not in text[1:-1]:
            self._part = _Part.BETWEEN
        return None

    def _row(self, number: int, text: str) -> TableSnapshot | None:
        if "NVIDIA-SMI" in text[:24]:
            done = self._close(f"cut short at line {number} by the next table")
            self._start(number, text)
            return done
        snap = self._snap
        if snap is None:
            return None
        part = self._part
        if text.startswith("|="):
            if part is _Part.HEAD:
                self._part = _Part.GPUS
            elif part is _Part.PROC_HEAD:
                self._part = _Part.PROC_ROWS
            elif part is _Part.MIG_HEAD:
                self._part = _Part.MIG_ROWS
            return None
        if part in (_Part.BETWEEN, _Part.GPUS) and self._gpu_box_closed:
            if "Processes:" in text:
                self._part = _Part.PROC_HEAD
                snap.processes = []
                return None
            if "MIG devices:" in text:
                self._part = _Part.MIG_HEAD
                return None
        if part is _Part.GPUS:
            gpu = self._gpu
            if gpu is not None and not gpu.has_values and rows.read_values_fast(gpu, text):
                if self.values_rows is not None:
                    self.values_rows[number] = gpu
                return None
            self._gpu_row(number, rows.cells(text))
        elif part is _Part.PROC_ROWS:
            self._process_row(number, text[1:-1])
        elif part is _Part.MIG_ROWS and rows.is_mig_device_row(rows.cells(text)):
            snap.mig_devices += 1
        return None

    def _gpu_row(self, number: int, row: list[str]) -> None:
        if not row:
            return
        gpu = rows.read_name_row(row)
        if gpu is not None:
            if self._gpu is not None:
                self._end_gpu()
            self._gpu = gpu
            self._gpu_box_closed = False
            return
        if self._gpu is None or self._gpu.has_values:
            return  # the MIG M. row, or a row we do not need
        try:
            rows.read_values_row(self._gpu, row)
        except RowError as exc:
            self._gpu.has_values = True  # keep the GPU with what did read
            self._bad_cell(number, f"GPU {self._gpu.index}: {exc}")

    def _process_row(self, number: int, text: str) -> None:
        assert self._snap is not None and self._snap.processes is not None
        try:
            proc = rows.read_process_row(text)
        except RowError as exc:
            self._bad_cell(number, f"Processes: {exc}")
            return
        if proc is not None:
            self._snap.processes.append(proc)

    # --- snapshot bookkeeping ---------------------------------------------------------

    def _start(self, number: int, title: str) -> None:
        driver = rows.DRIVER.search(title)
        cuda = rows.CUDA.search(title)
        start = self._date_line if self._date_line is not None else number
        self._snap = TableSnapshot(
            line=start,
            timestamp=self._date,
            driver=driver.group(1) if driver else None,
            cuda=cuda.group(1) if cuda else None,
        )
        self._date = self._date_line = None
        self._part = _Part.HEAD
        self._gpu = None
        self._gpu_box_closed = False
        self._processes_closed = False

    def _end_gpu(self) -> None:
        gpu, self._gpu = self._gpu, None
        if gpu is not None and self._snap is not None:
            self._snap.gpus.append(gpu)

    def _close(self, why_bad: str) -> TableSnapshot | None:
        """End the open snapshot: hand it back when complete, else count it as bad."""
        snap = self._snap
        if snap is None:
            return None
        complete = (
            self._gpu_box_closed
            and self._gpu is None
            and all(g.has_values for g in snap.gpus)
            and (self._processes_closed or (not self.expect_processes and snap.processes is None))
        )
        if complete:
            self._snap = None
            return snap
        where = self._part.value
        self._drop(f"{why_bad} (in its {where})" if why_bad else f"incomplete {where}")
        return None

    def _drop(self, reason: str) -> None:
        snap, self._snap = self._snap, None
        self._gpu = None
        self._part = _Part.HEAD
        if snap is not None:
            self.on_bad(snap.line, f"nvidia-smi snapshot {reason}")

    def _bad_cell(self, number: int, reason: str) -> None:
        self.bad_cells += 1
        self.on_bad(number, reason)
