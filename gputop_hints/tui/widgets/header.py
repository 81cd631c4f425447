"""The top line: host, driver, interval, source, DEMO/REPLAY/PAUSED badges and the
sample time; in replay the recorded date and time and the recording's span; the
GPU-time lost so far under the findings (hints.costs, worded by outputs.cost_text)."""

from __future__ import annotations

import time
from dataclasses import dataclass

from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from gputop_hints.model import JobInfo, Snapshot
from gputop_hints.sampling.replay_time import date_time_text, span_text, speed_text
from gputop_hints.tui import glyphs
from gputop_hints.tui.palette import Palette
from gputop_hints.tui.render import (
    Line,
    Piece,
    fit_pieces,
    fitted_strip,
    merge_onto,
    merge_segments,
)
from gputop_hints.tui.widgets.base import StripWidget
from gputop_hints.units import core_ranges

APP_NAME = "gputop-hints"


def clock_text(timestamp: float) -> str:
    """The sample's own time of day (never the wall clock: snapshots stay reproducible)."""
    return time.strftime("%H:%M:%S", time.localtime(timestamp))


END_OF_RECORDING = "end of recording"


@dataclass(frozen=True, slots=True)
class ReplayStatus:
    """What the header says about a replay besides the tick's own time."""

    speed: float
    start_time: float
    end_time: float | None
    """None until known (a compressed recording not yet read to its end)."""
    ended: bool
    """The last tick is on screen and playback stopped there."""
    read_percent: int | None = None
    """How far into the file reading has got (whole %), shown while the end is unknown."""


def job_text(job: JobInfo) -> str:
    """'job 1234.0 (train)': the id, the step and the name when known."""
    text = f"job {job.job_id}"
    if job.step_id and job.step_id not in ("batch", "extern", "interactive"):
        text += f".{job.step_id}"
    if job.name:
        text += f" ({job.name})"
    return text


def job_pieces(job: JobInfo, p: Palette) -> list[Piece]:
    """The job, its cores and its GPUs, for the header (least important dropped first)."""
    pieces = [Piece(job_text(job), p.core_allowed, 1)]
    if job.cpus:
        pieces.append(Piece(f"cores {core_ranges(job.cpus)}", p.text, 3))
    if job.gpu_indices is not None:
        gpus = ",".join(str(i) for i in job.gpu_indices) if job.gpu_indices else "none"
        pieces.append(Piece(f"GPUs {gpus}", p.text, 3))
    return pieces


class HeaderBar(StripWidget):
    """One line: what is being watched, how, and whether the view is live."""

    DEFAULT_CSS = """
    HeaderBar {
        height: 1;
        background: $panel;
    }
    """

    def __init__(self, interval_s: float) -> None:
        super().__init__(id="header")
        self.snapshot: Snapshot | None = None
        self.interval_s = interval_s
        self.paused = False
        self.source_kind = ""
        self.replay: ReplayStatus | None = None
        self.cost: tuple[str, bool] | None = None
        """The running cost line and whether anything was lost (None: not yet known)."""
        self._left: tuple[tuple[object, ...], list[Segment], int] | None = None
        """The left part as last drawn (its pieces fitted, merged, padded up to the right
        part), with what it was drawn from: the clock moves every tick, the rest seldom."""

    def set_cost(self, text: str, lost: bool) -> None:
        if (text, lost) != self.cost:
            self.cost = (text, lost)
            self.invalidate()

    def set_replay(self, status: ReplayStatus | None) -> None:
        if status != self.replay:
            self.replay = status
            self.invalidate()

    def update_from(self, snapshot: Snapshot) -> None:
        self.snapshot = snapshot
        self.invalidate()

    def set_paused(self, paused: bool) -> None:
        self.paused = paused
        self.invalidate()

    def build_lines(self, width: int, height: int, base: Style, palette: Palette) -> list[Strip]:
        snap = self.snapshot
        p = palette
        left: list[Piece] = [Piece(f" {APP_NAME}", p.header_accent, 0)]
        right: list[Piece] = []
        source = snap.source if snap is not None else self.source_kind
        replay = self.replay
        if source == "demo":
            right.append(Piece(" DEMO ", p.badge_demo, 0))
        elif replay is not None:
            right.append(Piece(f" REPLAY {speed_text(replay.speed)} ", p.badge_demo, 0))
        elif source == "replay":
            right.append(Piece(" REPLAY ", p.badge_demo, 0))
        elif source == "prometheus":
            right.append(Piece(" PROMETHEUS ", p.badge_demo, 0))
        if self.paused:
            right.append(Piece(" PAUSED ", p.badge_paused, 0))
        if replay is not None and replay.ended:
            right.append(Piece(END_OF_RECORDING, p.warning, 1))
        if snap is None:
            left.append(Piece("waiting for the first sample…", p.muted, 1))
        else:
            left.append(Piece(f"host {snap.host.hostname}", p.text, 1))
            if snap.job is not None:
                left.extend(job_pieces(snap.job, p))
            if snap.driver_version:
                cuda = f" · CUDA {snap.cuda_driver_version}" if snap.cuda_driver_version else ""
                left.append(Piece(f"driver {snap.driver_version}{cuda}", p.text, 4))
            elif snap.gpu_unavailable_reason:
                down = "Prometheus not answering" if source == "prometheus" else "no NVIDIA driver"
                left.append(Piece(down, p.warning, 2))
            detail = f" {snap.source_detail}" if snap.source_detail else ""
            if self.cost is not None:
                text, lost = self.cost
                left.append(Piece(text, p.warning if lost else p.muted, 2))
            left.append(Piece(f"every {snap.interval_s:g}s", p.text, 3))
            left.append(Piece(f"source {snap.source}{detail}", p.muted, 5))
            if replay is None:
                right.append(Piece(clock_text(snap.timestamp), p.text, 2))
            else:
                right.append(Piece(date_time_text(snap.timestamp), p.text, 2))
                span = span_text(replay.start_time, replay.end_time, snap.timestamp)
                if replay.end_time is None and replay.read_percent is not None:
                    span += f" (read {replay.read_percent} %)"
                right.append(Piece(f"/ {span}", p.muted, 6))
        # One cell of margin at the right edge.
        right_kept = fit_pieces(right, width - 1)
        right_width = sum(len(piece.text) for piece in right_kept) + len(right_kept) + 1
        right_line = Line()
        for piece in right_kept:
            right_line.add(" ", base).add_text(piece.text, piece.style)
        if right_kept:
            right_line.add(" ", base)
        # The left part merged once and kept (merge_onto: the same strip as merging the
        # whole line) while its pieces, the width and where the right part starts are.
        key = (tuple(left), width, right_width, right_line.cells, base, glyphs.active())
        cached = self._left
        if cached is None or cached[0] != key:
            left_kept = fit_pieces(left, width - right_width - 1, separator=2)
            line = Line()
            for i, piece in enumerate(left_kept):
                if i:
                    line.add("  ", base)
                line.add_text(piece.text, piece.style)
            line.pad_to(width - right_line.cells, base)
            cached = self._left = (key, merge_segments(line.segments, base), line.cells)
        merged = merge_onto(cached[1].copy(), right_line.segments, base)
        return [fitted_strip(merged, cached[2] + right_line.cells, width, base)]
