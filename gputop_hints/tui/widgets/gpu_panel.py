"""One GPU: SM %, memory-access %, VRAM against its limit, PCIe Rx/Tx.

Two shapes, chosen by the height the layout gives the widget:

* rich (``RICH_HEIGHT`` lines): a title row (name, temperature, power, clock,
  throttle, SM+MEM sum) and one row per metric -- label, fixed-scale
  sparkline, current value, scale note;
* compact (one line): mini bars and numbers, least important parts dropped
  first when the line is narrow.

GPU-level findings (the engine's ``for_gpu``) show in both: the worst one's
label, in its severity's colour, at the end of the rich title row with ``+N``
for the others; in compact mode a marker (severity mark and rule id). The
overlap finding has its own place: while the engine reports it for the sample
on screen (SM % + memory % past the ``overlap_explained`` threshold, 100 by
default) the MEM row's note carries its label (compact: ``Σ`` and the sum), so
the sum never stands unexplained. The panel itself judges nothing: what it marks comes from
findings and model properties.
"""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from gputop_hints.hints.findings import Finding
from gputop_hints.hints.phases import Verdict
from gputop_hints.history import GpuHistory
from gputop_hints.model import LOST_GPU_TEXT, GpuSample, MigInstance, not_answering_text
from gputop_hints.tui import glyphs
from gputop_hints.tui.hint_text import (
    OVERLAP_RULE,
    SEVERITY_STYLE,
    findings_text,
    panel_findings,
)
from gputop_hints.tui.palette import Palette
from gputop_hints.tui.render import (
    Line,
    Piece,
    add_pieces,
    bar,
    bucketed,
    fit_pieces,
    fitted_strip,
    merge_onto,
    merge_segments,
    samples_per_cell,
    short_gpu_name,
    sparkline,
)
from gputop_hints.tui.widgets.base import StripWidget
from gputop_hints.units import UNKNOWN, human_bytes, human_rate, percent

RICH_HEIGHT = 6
"""Lines of a rich panel, before one line per MIG instance (see :func:`panel_height`)."""
MIG_NOTE = "n/a under MIG"
"""The note of the SM and MEM rows of a GPU in MIG mode: NVML gives no utilization."""


PROFILING_ROWS: tuple[tuple[str, str, str], ...] = (
    ("sm_active_percent", "SMACT", "of SM cycles w/ warps"),
    ("sm_occupancy_percent", "OCC", "of max warps resident"),
    ("tensor_active_percent", "TENS", "tensor pipes busy"),
    ("dram_active_percent", "DRAM", "of peak bandwidth"),
)
"""The GPM rows under TX, in PROFILING_FIELDS order: (series, label, note), each on a
fixed 0-100 scale. What each means, and how it differs from SM %: ``?``."""
PROFILING_NA = "GPM n/a: "
"""Starts the one line that stands for the four rows where the GPU gives a reason."""


def profiling_lines(gpu: GpuSample) -> int:
    """Lines the GPM part of a rich panel takes: a row per metric while the GPU gives
    them, one n/a line with the reason where it could and does not
    (:attr:`GpuSample.profiling_shown_unavailable`), else none (a GPU without GPM, a
    source that does not profile: the demo, a log without profiling fields)."""
    if gpu.profiling_known:
        return len(PROFILING_ROWS)
    return 1 if gpu.profiling_shown_unavailable else 0


def panel_height(gpus: list[GpuSample] | tuple[GpuSample, ...]) -> int:
    """Lines a rich panel needs to show every GPU's GPM rows and MIG instances under it."""
    return RICH_HEIGHT + max((profiling_lines(g) + len(g.mig_instances) for g in gpus), default=0)


_LABEL = 6
_VALUE = 9
_NOTE = 22
_TITLE_ROW = "\0title"
_VRAM_ROW = "\0vram"
"""Keys of the title and VRAM lines in ``GpuPanel._rows`` (no metric row is named so)."""


def _one_decimal_gib(value: int | None) -> str:
    return UNKNOWN if value is None else f"{value / 2**30:.0f}"


def overlap_finding(findings: tuple[Finding, ...], gpu: GpuSample) -> Finding | None:
    """The engine's overlap finding among a GPU's findings, if it is about ``gpu``.

    The MEM row's note sits beside the sample's own SM and memory numbers, so it
    shows the finding only while the finding's evidence is that sample. Once the
    sum falls back the engine keeps the finding visible for its clear-after time
    (lists must not flicker) with the numbers it last saw, which would put
    "SM+mem 148%" beside a 20 % and a 13 %. No threshold is applied here: the
    configured one already decided whether there is a finding at all.
    """
    shown = {gpu.sm_percent, gpu.memory_access_percent, gpu.utilization_sum_percent}
    for finding in findings:
        if finding.rule == OVERLAP_RULE:
            evidence = {e.value for e in finding.evidence}
            return finding if shown <= evidence else None
    return None


class GpuPanel(StripWidget):
    """A GPU's live picture; the app feeds it with :meth:`update_from`."""

    DEFAULT_CSS = """
    GpuPanel {
        height: 6;
        background: $surface;
    }
    """

    def __init__(self, index: int) -> None:
        super().__init__(id=f"gpu-{index}", classes="gpu-panel")
        self.index = index
        self.gpu: GpuSample | None = None
        self.history: GpuHistory | None = None
        self.findings: tuple[Finding, ...] = ()
        """This GPU's visible GPU-level findings, worst first (from the hint engine)."""
        self.verdict: Verdict | None = None
        """This GPU's verdict over the watched time (shown in the rich title)."""
        self.ticks = 0
        """Samples taken since the history started: where the sparkline buckets fall."""
        self._cells: dict[tuple[str, int], tuple[int, list[float | None]]] = {}
        self._rows: dict[str, tuple[tuple[object, ...], Strip]] = {}
        """Each metric row's last strip and what it was built from: a row whose inputs
        did not change this tick (a steady PCIe or VRAM line) is not rebuilt."""
        self._prefixes: dict[str, tuple[tuple[Any, ...], list[Segment], int, str]] = {}
        """Each metric row's label and sparkline, merged, with their cells, inputs and
        the sparkline's text."""
        self._title_styles: tuple[Palette, dict[str, Style]] | None = None

    def update_from(
        self,
        gpu: GpuSample | None,
        history: GpuHistory | None,
        findings: tuple[Finding, ...] = (),
        ticks: int | None = None,
        verdict: Verdict | None = None,
    ) -> None:
        """``ticks``: the history's sample count (None: count the calls, as a test would).
        ``verdict``: the GPU's verdict over what has been watched (hints.phases)."""
        if history is not self.history:
            self._cells.clear()
        self.gpu = gpu
        self.history = history
        self.findings = findings
        self.verdict = verdict
        self.ticks = self.ticks + 1 if ticks is None else ticks
        self.invalidate()

    def sparkline_values(self, name: str, width: int) -> list[float | None]:
        """What ``width`` sparkline cells show of a series: the whole window.

        Each cell is the mean of ``window / width`` samples (one sample per
        cell when the panel is wider than the window), so the line spans the
        full ``--window`` at any width and moves only when a bucket completes.
        """
        history = self.history
        if history is None or width <= 0:
            return []
        series = getattr(history, name)
        per_cell = samples_per_cell(series.capacity, width)
        if per_cell == 1:
            values: list[float | None] = series.last(width)
            return values
        # Unchanged until the next bucket completes: reuse, and skip the work.
        bucket = self.ticks // per_cell
        cached = self._cells.get((name, width))
        if cached is not None and cached[0] == bucket:
            return cached[1]
        filling = self.ticks % per_cell
        cells = bucketed(series.last(width * per_cell + filling), per_cell, self.ticks)[-width:]
        self._cells[(name, width)] = (bucket, cells)
        return cells

    # --- building -----------------------------------------------------------

    def build_lines(self, width: int, height: int, base: Style, palette: Palette) -> list[Strip]:
        gpu = self.gpu
        if gpu is None:
            line = Line().add(f" GPU {self.index}: no sample", palette.muted)
            return [line.strip(width, base)]
        if gpu.lost:  # not unknown values: NVML says the GPU is gone
            text = f" GPU {gpu.index} {short_gpu_name(gpu.name)}  {LOST_GPU_TEXT}"
            return [Line().add(text, palette.critical).strip(width, base)]
        if gpu.not_answering_s is not None:  # an NVML call on it is stuck: no values now
            text = (
                f" GPU {gpu.index} {short_gpu_name(gpu.name)}  "
                f"{not_answering_text(gpu.not_answering_s)}"
            )
            return [Line().add(text, palette.critical).strip(width, base)]
        if height >= RICH_HEIGHT and width >= 40:
            return self._rich(gpu, width, base, palette, height)
        return [self._compact(gpu, width, base, palette)]

    def _title(self, gpu: GpuSample, width: int, base: Style, p: Palette) -> Strip:
        key = (
            gpu.index, gpu.name, gpu.temperature_c, gpu.power_watts, gpu.power_limit_watts,
            gpu.sm_clock_mhz, gpu.throttle_reasons, self.findings, width, base, id(p),
            None if self.verdict is None else (self.verdict.label, self.verdict.severity),
        )  # fmt: skip
        cached = self._rows.get(_TITLE_ROW)
        if cached is not None and cached[0] == key:
            return cached[1]
        strip = self._build_title(gpu, width, p)
        self._rows[_TITLE_ROW] = (key, strip)
        return strip

    def _on_title_bar(self, p: Palette) -> dict[str, Style]:
        """The palette's styles the title uses, each laid over its bar (once per palette)."""
        cached = self._title_styles
        if cached is not None and cached[0] is p:
            return cached[1]
        names = ("header_accent", "title", "text", "muted", "warning", *SEVERITY_STYLE.values())
        styles = {name: getattr(p, name) + p.title_bar for name in names}
        self._title_styles = (p, styles)
        return styles

    def _build_title(self, gpu: GpuSample, width: int, p: Palette) -> Strip:
        on_bar = self._on_title_bar(p)
        pieces = [
            Piece(f" GPU {gpu.index}", on_bar["header_accent"], 0),
            Piece(short_gpu_name(gpu.name), on_bar["title"], 5),
        ]
        if gpu.temperature_c is not None:
            pieces.append(Piece(f"{gpu.temperature_c:.0f}°C", on_bar["text"], 2))
        if gpu.power_watts is not None:
            limit = f"/{gpu.power_limit_watts:.0f}" if gpu.power_limit_watts else ""
            pieces.append(Piece(f"{gpu.power_watts:.0f}{limit}W", on_bar["text"], 3))
        if gpu.sm_clock_mhz is not None:
            pieces.append(Piece(f"{gpu.sm_clock_mhz}MHz", on_bar["muted"], 6))
        if gpu.throttle_reasons:
            # Power and heat hold a busy GPU back; gpu_idle and friends are harmless.
            holding = gpu.clocks_held_by
            if holding:
                pieces.append(Piece("throttle: " + ",".join(holding), on_bar["warning"], 1))
            else:
                pieces.append(
                    Piece("clocks: " + ",".join(gpu.throttle_reasons), on_bar["muted"], 6)
                )
        verdict = self.verdict
        if verdict is not None:
            # What the GPU did over the watched time, beside what the rules say now.
            style = on_bar["warning"] if verdict.severity == "warning" else on_bar["muted"]
            pieces.append(Piece(f"[{verdict.label}]", style, 4))
        hint = findings_text(self.findings)
        hint_piece: Piece | None = None
        if hint:
            worst = panel_findings(self.findings)[0]
            hint_piece = Piece(hint, on_bar[SEVERITY_STYLE[worst.severity]], 1)
            pieces.append(hint_piece)
        kept = fit_pieces(pieces, width - 1)
        gap = on_bar["text"]
        if hint_piece is None or hint_piece not in kept:
            return add_pieces(Line(), kept, gap).strip(width, gap)
        # The finding sits at the right end of the title, where the eye looks for status.
        line = add_pieces(Line(), [piece for piece in kept if piece is not hint_piece], gap)
        line.pad_to(width - cell_len(hint) - 1, gap).add_text(hint, hint_piece.style)
        return line.strip(width, gap)

    def _metric_row(
        self,
        label: str,
        values: list[float | None],
        high: float,
        value_text: str,
        note: str,
        style: Style,
        base: Style,
        p: Palette,
        spark_width: int,
        note_width: int,
        width: int,
        note_style: Style | None = None,
    ) -> Strip:
        key = (
            tuple(values),
            high,
            value_text,
            note,
            style,
            base,
            id(p),
            spark_width,
            note_width,
            width,
            note_style,
        )
        cached = self._rows.get(label)
        if cached is not None and cached[0] == key:
            return cached[1]
        # The label and sparkline move only when a bucket completes, the value every
        # tick: their merged segments are kept and the rest merged onto a copy
        # (merge_onto), the same strip as merging the whole line.
        shown = key[0]
        prefix_key = (shown, high, style, base, p, spark_width, glyphs.active())
        prefix = self._prefixes.get(label)
        if prefix is None or prefix[0] != prefix_key:
            if (
                prefix is not None
                and (before := prefix[0])[1:] == prefix_key[1:]
                and 0 < len(shown) == len(before[0]) <= spark_width
                and before[0][1:] == shown[:-1]
            ):
                # Moved on by one value: each cell draws its own value alone (after the
                # blank cells older than the history), so the line is the last one
                # less its oldest value's cell, plus the newest value's.
                blank = spark_width - len(shown)
                old = prefix[3]
                spark = old[:blank] + old[blank + 1 :] + sparkline(shown[-1:], 1, high)
            elif (
                prefix is not None
                and (before := prefix[0])[1:] == prefix_key[1:]
                and len(shown) == len(before[0]) + 1 <= spark_width
                and before[0] == shown[:-1]
            ):
                # Grown by one value (the window still filling, the first minutes): one
                # blank cell fewer on the left, the newest value's cell on the right.
                spark = prefix[3][1:] + sparkline(shown[-1:], 1, high)
            else:
                spark = sparkline(values, spark_width, high)
            start = Line().add(f" {label:<{_LABEL - 1}}", p.label)
            start.add(spark, style)
            prefix = (prefix_key, merge_segments(start.segments, base), start.cells, spark)
            self._prefixes[label] = prefix
        line = Line().add(value_text.rjust(_VALUE), p.text)
        if note_width:
            line.add(" ")
            line.add_text(note[: note_width - 1], note_style or p.muted)
        merged = merge_onto(prefix[1].copy(), line.segments, base)
        strip = fitted_strip(merged, prefix[2] + line.cells, width, base)
        self._rows[label] = (key, strip)
        return strip

    def _rich(
        self, gpu: GpuSample, width: int, base: Style, p: Palette, height: int = RICH_HEIGHT
    ) -> list[Strip]:
        note_width = _NOTE if width >= 60 else 0
        spark_width = max(1, width - _LABEL - _VALUE - note_width - 1)

        def last(name: str, n: int = spark_width) -> list[float | None]:
            return self.sparkline_values(name, n)

        def row(
            label: str,
            values: list[float | None],
            high: float,
            value_text: str,
            note: str,
            style: Style,
            note_style: Style | None = None,
        ) -> Strip:
            return self._metric_row(
                label, values, high, value_text, note, style, base, p,
                spark_width, note_width, width, note_style,
            )  # fmt: skip

        overlap = overlap_finding(self.findings, gpu)
        mem_note, mem_note_style = (
            ("of time accessed", None) if overlap is None else (overlap.label, p.info)
        )
        sm_note = "of time busy"
        if gpu.mig_mode and gpu.sm_percent is None:
            sm_note = MIG_NOTE
        if gpu.mig_mode and gpu.memory_access_percent is None:
            mem_note = MIG_NOTE
        mem_values = last("memory_access_percent")
        mem_text = percent(gpu.memory_access_percent)
        lines = [
            self._title(gpu, width, base, p),
            row("SM", last("sm_percent"), 100.0, percent(gpu.sm_percent), sm_note, p.sm),
            row("MEM", mem_values, 100.0, mem_text, mem_note, p.mem, mem_note_style),
            self._vram_row(gpu, width, base, p, note_width, spark_width),
        ]
        link = gpu.pcie_link_bytes_per_s
        rx = last("pcie_rx_bytes_per_s")
        tx = last("pcie_tx_bytes_per_s")
        if link:
            high = link
            rx_note = f"of {human_rate(link)} link"
            tx_note = rx_note
        else:
            known = [v for v in (*rx, *tx) if v is not None]
            high = max(known) if known else 0.0
            rx_note = f"window max {human_rate(high)}"
            tx_note = "(link speed n/a)"
        lines.append(row("RX", rx, high, human_rate(gpu.pcie_rx_bytes_per_s), rx_note, p.rx))
        lines.append(row("TX", tx, high, human_rate(gpu.pcie_tx_bytes_per_s), tx_note, p.tx))
        profiling = profiling_lines(gpu)
        if profiling == len(PROFILING_ROWS):
            for name, label, note in PROFILING_ROWS:
                value = getattr(gpu, name)
                lines.append(row(label, last(name), 100.0, percent(value), note, p.sm))
        elif profiling:
            text = f" {PROFILING_NA}{gpu.profiling_shown_unavailable}"
            lines.append(Line().add(text, p.muted).strip(width, base))
        lines = lines[:height]
        instances = gpu.mig_instances
        room = max(0, height - RICH_HEIGHT - profiling)
        for n, instance in enumerate(instances[:room]):
            last_row = n == len(instances) - 1
            more = len(instances) - room if n == room - 1 and not last_row else 0
            lines.append(self._mig_row(instance, last_row, more, width, spark_width, base, p))
        return lines

    def _mig_row(
        self,
        m: MigInstance,
        last_row: bool,
        more: int,
        width: int,
        spark_width: int,
        base: Style,
        p: Palette,
    ) -> Strip:
        """One MIG instance, indented under its GPU: profile, ids, VRAM bar, used / total,
        utilization (n/a: NVML gives none under MIG) and GPM SM activity when known."""
        line = Line().add(" └ " if last_row else " ├ ", p.muted)
        line.add(m.label[:12].ljust(12), p.title)
        line.add(f"GI{m.gpu_instance_id:<2} ", p.muted)
        total = m.vram_total_bytes
        fraction = None if m.vram_used_bytes is None or not total else m.vram_used_bytes / total
        filled, track = bar(fraction, max(4, spark_width // 3) - 1)
        line.add(filled, p.vram).add(track, p.track)
        line.add(glyphs.active().limit_mark, p.critical)
        line.add(f" {human_bytes(m.vram_used_bytes)}/{human_bytes(total)}", p.text)
        line.add("  util ", p.label).add(percent(m.sm_percent), p.text)
        if m.sm_active_percent is not None:
            line.add("  SM active ", p.label).add(percent(m.sm_active_percent), p.sm)
        if more:
            line.add(f"  +{more} more", p.muted)
        return line.strip(width, base)

    def _vram_row(
        self, gpu: GpuSample, width: int, base: Style, p: Palette, note_width: int, spark_width: int
    ) -> Strip:
        total = gpu.vram_total_bytes
        bar_width = max(4, spark_width // 3)
        trend_width = max(0, spark_width - bar_width - 1)
        values = self.sparkline_values("vram_used_bytes", trend_width) if trend_width else []
        key = (
            total, gpu.vram_fraction, gpu.vram_used_bytes, tuple(values), glyphs.active(),
            width, base, id(p), note_width, spark_width,
        )  # fmt: skip
        cached = self._rows.get(_VRAM_ROW)
        if cached is not None and cached[0] == key:
            return cached[1]
        line = Line().add(f" {'VRAM':<{_LABEL - 1}}", p.label)
        filled, track = bar(gpu.vram_fraction, bar_width - 1)
        line.add(filled, p.vram).add(track, p.track)
        line.add(glyphs.active().limit_mark, p.critical)
        if trend_width:
            line.add(" ")
            line.add(sparkline(values, trend_width, float(total or 0)), p.vram)
        line.add(human_bytes(gpu.vram_used_bytes).rjust(_VALUE), p.text)
        if note_width:
            fraction = gpu.vram_fraction
            share = f" ({fraction * 100:.0f}%)" if fraction is not None else ""
            line.add(" ")
            line.add(f"of {human_bytes(total)}{share}"[: note_width - 1], p.muted)
        strip = line.strip(width, base)
        self._rows[_VRAM_ROW] = (key, strip)
        return strip

    def _compact(self, gpu: GpuSample, width: int, base: Style, p: Palette) -> Strip:
        mini = 5 if width >= 70 else 3

        def mini_bar(fraction: float | None, style: Style) -> list[Piece]:
            filled, track = bar(fraction, mini)
            return [Piece(filled, style), Piece(track, p.track)]

        def pct(value: float | None) -> str:
            return percent(value, width=4)

        sm = gpu.sm_percent
        mem = gpu.memory_access_percent
        fraction = gpu.vram_fraction
        # A job across nodes: which node is the first thing to keep on the line.
        name = (
            (0, [Piece(gpu.node[:12].ljust(12), p.muted)])
            if gpu.node is not None
            else (7, [Piece(short_gpu_name(gpu.name)[:10].ljust(10), p.muted)])
        )
        groups: list[tuple[int, list[Piece]]] = [
            (0, [Piece(f"{gpu.index:>2}", p.header_accent)]),
            name,
            (
                1,
                [
                    Piece("SM ", p.label),
                    *mini_bar(None if sm is None else sm / 100, p.sm),
                    Piece(pct(sm), p.text),
                ],
            ),
            (
                2,
                [
                    Piece("MEM ", p.label),
                    *mini_bar(None if mem is None else mem / 100, p.mem),
                    Piece(pct(mem), p.text),
                ],
            ),
            (
                3,
                [
                    Piece("VRAM ", p.label),
                    *mini_bar(fraction, p.vram),
                    Piece(glyphs.active().limit_mark, p.critical),
                    Piece(
                        f"{_one_decimal_gib(gpu.vram_used_bytes):>3}/"
                        f"{_one_decimal_gib(gpu.vram_total_bytes)}G".ljust(8),
                        p.text,
                    ),
                ],
            ),
            (4, [Piece("↓" + human_rate(gpu.pcie_rx_bytes_per_s).rjust(8), p.rx)]),
            (5, [Piece("↑" + human_rate(gpu.pcie_tx_bytes_per_s).rjust(8), p.tx)]),
        ]
        total = gpu.utilization_sum_percent
        if total is not None and overlap_finding(self.findings, gpu) is not None:
            groups.append((2, [Piece(f"Σ{total:.0f}%", p.info)]))
        if gpu.temperature_c is not None:
            groups.append((6, [Piece(f"{gpu.temperature_c:.0f}°C", p.muted)]))
        if gpu.clocks_held_by:
            groups.append((4, [Piece("throttled", p.warning)]))
        if gpu.mig_mode:
            groups.append((3, [Piece(f"MIG {len(gpu.mig_instances)}", p.info)]))
        if gpu.sm_active_percent is not None:
            active = gpu.sm_active_percent
            groups.append((6, [Piece("SMACT ", p.label), Piece(pct(active), p.text)]))
        marker = findings_text(self.findings, compact=True)
        if marker:
            worst = panel_findings(self.findings)[0]
            groups.append((2, [Piece(marker, getattr(p, SEVERITY_STYLE[worst.severity]))]))

        def group_width(pieces: list[Piece]) -> int:
            return sum(len(piece.text) for piece in pieces)

        budget = width
        kept: set[int] = set()
        for position in sorted(range(len(groups)), key=lambda i: (groups[i][0], i)):
            cost = group_width(groups[position][1]) + (1 if kept else 0)
            if cost <= budget:
                kept.add(position)
                budget -= cost
        line = Line()
        for position, (_, pieces) in enumerate(groups):
            if position not in kept:
                continue
            if line.cells:
                line.add(" ")
            for piece in pieces:
                line.add(piece.text, piece.style)
        return line.strip(width, base)
