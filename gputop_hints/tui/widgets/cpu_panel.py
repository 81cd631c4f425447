"""Host CPU: a summary line, then the load of every core.

Rich shape: one cell per core -- its number and a small bar -- wrapped into as
many columns as fit. Compact shape: one block character per core (a 64-core
node fits on one 80-column line), wrapped when narrower. The cores this job
may run on (``HostSample.allowed_cores``) are drawn in the ``core-allowed``
colour; the others are muted, since the job cannot use them.

Attached to a job (``Snapshot.job``), the summary names the job's cores and
their load apart from the rest of the node -- ``job cores 8-15 96% · rest of
node 12%`` -- and, when known, how much of the job's cores processes outside
the job use (``others on job cores 30%``): another job oversubscribing them.
That figure is drawn as a warning only while the hint engine's
``cores-contended`` finding holds (its threshold is in the YAML), never by a
threshold of the panel's own.
"""

from __future__ import annotations

import math

from rich.style import Style
from textual.strip import Strip

from gputop_hints.hints.findings import Finding
from gputop_hints.model import HostSample, JobInfo
from gputop_hints.tui import glyphs
from gputop_hints.tui.palette import Palette
from gputop_hints.tui.render import (
    Line,
    Piece,
    bar,
    fit_pieces,
    level,
)
from gputop_hints.tui.widgets.base import StripWidget
from gputop_hints.units import UNKNOWN, core_ranges, human_bytes, percent

_BAR = 5
_COMPACT_LABEL = " cores "
_PERCENT_W = len("100%")
_BYTES_W = len("23.5GiB")
"""The summary line's numbers keep their width ("  5%", " 435MiB") as they change, so
a value that gains or loses a digit rewrites itself, not the rest of the line after it."""

CORES_CONTENDED_RULE = "cores-contended"
"""The finding that says the job's cores are loaded by processes outside the job."""


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _cell_look(value: float | None, compact: bool) -> object:
    """What a core's cell draws for ``value``: its block (compact), or its bar in
    eighths of a cell (-1: unknown), as :func:`level` and :func:`bar` draw them."""
    if value is None:
        return None
    if compact:
        return level(value, 100.0)
    fraction = value / 100
    if fraction != fraction:
        return -1
    return round(max(0.0, min(1.0, fraction)) * _BAR * 8)


def _cell_width(cores: int) -> int:
    return len(str(max(0, cores - 1))) + 1 + _BAR + 1


def cores_per_row(cores: int, width: int, compact: bool) -> int:
    if compact:
        return max(1, width - len(_COMPACT_LABEL) - 1)
    return max(1, (width - 1) // _cell_width(cores))


def lines_needed(cores: int, width: int, compact: bool) -> int:
    """Height of the panel for ``cores`` cores at ``width`` (summary line included)."""
    if cores <= 0:
        return 1
    return 1 + math.ceil(cores / cores_per_row(cores, width, compact))


class CpuPanel(StripWidget):
    """Per-core load, iowait, memory and load average of the host."""

    DEFAULT_CSS = """
    CpuPanel {
        height: 2;
        background: $surface;
    }
    """

    def __init__(self) -> None:
        super().__init__(id="cpu")
        self.host: HostSample | None = None
        self.job: JobInfo | None = None
        self.contended = False
        """The engine says others load the job's cores (a ``cores-contended`` finding)."""
        self.compact = False
        self._core_rows: dict[int, tuple[tuple[object, ...], Strip]] = {}
        """Each row of cores as last drawn, by its first core, with what it was drawn
        from: a row whose cells look the same is kept, not built again."""
        self._core_rows_for: tuple[object, ...] | None = None
        self._core_cells: dict[tuple[int, tuple[object, bool]], Line] = {}
        """Each core's cell by what it draws, for the rows that changed."""

    def update_from(
        self,
        host: HostSample | None,
        job: JobInfo | None = None,
        findings: tuple[Finding, ...] = (),
    ) -> None:
        """``findings``: the engine's visible findings (the panel shows whether
        the job's cores are contended from them)."""
        self.host = host
        self.job = job
        self.contended = any(f.rule == CORES_CONTENDED_RULE for f in findings)
        self.invalidate()

    def job_cores(self) -> tuple[int, ...]:
        """The cores drawn as the job's: its cpuset, else what this process may use."""
        host = self.host
        if self.job is not None and self.job.cpus:
            return self.job.cpus
        return host.allowed_cores if host is not None else ()

    def set_compact(self, compact: bool) -> None:
        if compact != self.compact:
            self.compact = compact
            self.invalidate()

    def build_lines(self, width: int, height: int, base: Style, palette: Palette) -> list[Strip]:
        host = self.host
        if host is None:
            return [
                Line().add(" CPU: waiting for the first sample", palette.muted).strip(width, base)
            ]
        if not host.core_count:
            # A replayed GPU-only log: no host side at all, not "0 cores n/a".
            return [Line().add(" CPU: n/a (no host data)", palette.muted).strip(width, base)]
        lines = [self._summary(host, width, base, palette)]
        allowed = set(self.job_cores())
        # A panel squeezed below its natural height falls back to the compact shape.
        compact = self.compact or height < lines_needed(host.core_count, width, False)
        per_row = cores_per_row(host.core_count, width, compact)
        cores = host.cpu_percent_per_core
        drawn_for = (width, compact, per_row, len(cores), base, palette, glyphs.active())
        if drawn_for != self._core_rows_for:
            self._core_rows.clear()
            self._core_cells.clear()
            self._core_rows_for = drawn_for
        rows = self._core_rows
        cells = self._core_cells
        digits = len(str(max(0, len(cores) - 1)))
        for start in range(0, len(cores), per_row):
            chunk = range(start, min(len(cores), start + per_row))
            looks = tuple((_cell_look(cores[core], compact), core in allowed) for core in chunk)
            kept = rows.get(start)
            if kept is not None and kept[0] == looks:
                lines.append(kept[1])
                continue
            line = Line()
            if compact:
                line.add(_COMPACT_LABEL if start == 0 else " " * len(_COMPACT_LABEL), palette.label)
            else:
                line.add(" ")
            segments = line.segments
            for core, look in zip(chunk, looks, strict=True):
                cell = cells.get((core, look))
                if cell is None:
                    cell = cells[(core, look)] = self._cell(
                        core, cores[core], look[1], compact, digits, palette
                    )
                segments.extend(cell.segments)
                line.cells += cell.cells
            strip = line.strip(width, base)
            rows[start] = (looks, strip)
            lines.append(strip)
        return lines

    @staticmethod
    def _cell(
        core: int,
        value: float | None,
        is_allowed: bool,
        compact: bool,
        digits: int,
        palette: Palette,
    ) -> Line:
        """One core's cell: its block (compact), or its number and bar."""
        cell = Line()
        if compact:
            char = " " if value is None else level(value, 100.0)
            cell.add(char, (palette.core_allowed if is_allowed else palette.track))
            return cell
        cell.add(f"{core:>{digits}} ", (palette.core_allowed if is_allowed else palette.muted))
        filled, track = bar(None if value is None else value / 100, _BAR)
        cell.add(filled, (palette.cpu if is_allowed else palette.muted))
        cell.add(track + " ", palette.track)
        return cell

    def _job_pieces(self, host: HostSample, job: JobInfo, p: Palette) -> list[Piece]:
        cores = set(self.job_cores())
        per_core = list(enumerate(host.cpu_percent_per_core))
        inside = [v for i, v in per_core if i in cores and v is not None]
        outside = [v for i, v in per_core if i not in cores and v is not None]
        text = f"job cores {core_ranges(cores)} {percent(_mean(inside), width=_PERCENT_W)}"
        if outside:
            text += f" · rest of node {percent(_mean(outside), width=_PERCENT_W)}"
        pieces = [Piece(text, p.core_allowed, 1)]
        if job.foreign_cpu_percent is not None:
            style = p.warning if self.contended else p.muted
            pieces.append(
                Piece(
                    f"others on job cores {percent(job.foreign_cpu_percent, width=_PERCENT_W)}",
                    style,
                    2,
                )
            )
        return pieces

    def _summary(self, host: HostSample, width: int, base: Style, p: Palette) -> Strip:
        allowed = host.allowed_cores
        known = [v for v in host.cpu_percent_per_core if v is not None]
        mean_all = sum(known) / len(known) if known else None
        pieces = [
            Piece(" CPU", p.header_accent, 0),
            Piece(f"{host.core_count} cores {percent(mean_all, width=_PERCENT_W)}", p.text, 1),
        ]
        job = self.job
        if job is not None:
            pieces.extend(self._job_pieces(host, job, p))
        elif allowed and len(allowed) != host.core_count:
            pieces.append(
                Piece(
                    f"job may use {len(allowed)}: {core_ranges(allowed)}"
                    f" busy {percent(host.allowed_cores_busy_percent(), width=_PERCENT_W)}",
                    p.core_allowed,
                    2,
                )
            )
        pieces.append(Piece(f"iowait {percent(host.iowait_percent, width=_PERCENT_W)}", p.text, 3))
        if host.memory_total_bytes is not None or host.memory_used_bytes is not None:
            pieces.append(
                Piece(
                    f"mem {human_bytes(host.memory_used_bytes):>{_BYTES_W}}/"
                    f"{human_bytes(host.memory_total_bytes)}",
                    p.text,
                    4,
                )
            )
        load = host.load_average
        load_text = UNKNOWN if load is None else " ".join(f"{v:.1f}" for v in load)
        pieces.append(Piece(f"load {load_text}", p.muted, 5))
        kept = fit_pieces(pieces, width - 1, separator=2)
        line = Line()
        for i, piece in enumerate(kept):
            if i:
                line.add("  ", base)
            line.add_text(piece.text, piece.style)
        return line.strip(width, base)
