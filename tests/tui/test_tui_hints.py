"""The hints in the views: HINT column, GPU panels, the Enter screen and ``?``.

Driven through Pilot with demo ticks fed by hand (``autostart=False``), and read
back from what is drawn -- the table's rendered lines, the panels' lines, the
detail screen's text -- not only from the engine's state.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from gputop_hints.hints.catalogue import CATALOGUE
from gputop_hints.hints.findings import Evidence, Finding, Severity, Subject
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.model import GpuSample
from gputop_hints.sources.demo import DemoSource
from gputop_hints.tui.app import GputopApp
from gputop_hints.tui.hint_text import (
    GPU_LEVEL_PREFIX,
    SEVERITY_MARK,
    duration_text,
    fit_text,
)
from gputop_hints.tui.screens.detail import ProcessDetailScreen
from gputop_hints.tui.screens.help import HelpScreen, help_text, hints_help
from gputop_hints.tui.widgets.findings_view import FindingsView
from gputop_hints.tui.widgets.gpu_panel import GpuPanel
from gputop_hints.tui.widgets.process_columns import (
    HINT_WIDTH,
    visible_columns,
)
from tests.support.screen import screen_text

TICKS = 30
"""Enough for every demo scenario's finding to pass its raise-after time."""


def make_app(
    scenario: str, thresholds: Thresholds | None = None, **demo: Any
) -> tuple[GputopApp, DemoSource]:
    source = DemoSource(scenario, seed=0, **demo)
    return GputopApp(source, autostart=False, thresholds=thresholds), source


def feed(app: GputopApp, source: DemoSource, ticks: int = TICKS) -> None:
    for _ in range(ticks):
        app.ingest(source.sample())


async def open_detail(app: GputopApp, source: DemoSource, pilot: Any) -> FindingsView:
    """Feed the scenario and press Enter on the selected process: its findings view."""
    feed(app, source)
    await pilot.pause()
    await pilot.press("enter")
    await pilot.pause()
    return app.screen.query_one(FindingsView)


def table_rows(app: GputopApp) -> list[str]:
    """The process table as drawn: header first, then one line per visible row."""
    return app.process_table.text_lines()


def hint_cells(app: GputopApp) -> list[str]:
    """The HINT column's text in every drawn row, cut at the header's HINT position."""
    header, *rows = table_rows(app)
    start = header.index("HINT")
    return [row[start : start + HINT_WIDTH].strip() for row in rows]


def row_of(app: GputopApp, pid: int) -> str:
    for row in table_rows(app)[1:]:
        if row.split()[0] == str(pid):
            return row
    raise AssertionError(f"no row for pid {pid} in {table_rows(app)}")


# --- the HINT column ------------------------------------------------------------


async def test_starved_loader_row_says_num_workers_0() -> None:
    app, source = make_app("starved-loader")
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source)
        await pilot.pause()
        row = row_of(app, 4000)
        assert "starved: num_workers=0?" in row
        assert f"{SEVERITY_MARK[Severity.WARNING]} starved: num_workers=0?" in hint_cells(app)
        assert app.findings and app.findings[0].rule == "input-starved"
        assert app.engine.last_cost_s > 0


@pytest.mark.parametrize(
    ("scenario", "label"),
    [
        ("small-batch", "small batch"),
        ("idle-vram", "idle "),
        ("pcie-thrash", "PCIe thrash"),
    ],
)
async def test_process_findings_show_in_the_hint_column(scenario: str, label: str) -> None:
    app, source = make_app(scenario)
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source)
        await pilot.pause()
        cells = hint_cells(app)
        assert any(label in cell for cell in cells), cells
        # Process-level: no GPU-level prefix.
        assert not any(GPU_LEVEL_PREFIX in cell for cell in cells)


async def test_idle_vram_label_says_how_much_vram_is_held() -> None:
    app, source = make_app("idle-vram")
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source)
        await pilot.pause()
        assert "holds 40G" in row_of(app, 4000)


async def test_memory_bound_is_a_gpu_level_finding_in_panel_and_column() -> None:
    app, source = make_app("memory-bound")
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source)
        await pilot.pause()
        assert any(f.rule == "memory-bound" for f in app.engine.for_gpu(0))
        panel = app.query_one("#gpu-0", GpuPanel)
        title, _sm_row, mem_row = panel.text_lines()[:3]
        assert "! memory-bound kernels" in title
        # SM % + memory % is over 100: the MEM row explains the sum.
        assert "overlap" in mem_row and "SM+mem" in mem_row
        # The process's cell carries the GPU's warning, marked as GPU-level.
        assert "! GPU: memory-bound kernels" in hint_cells(app)


async def test_memory_bound_marker_in_compact_panels() -> None:
    app, source = make_app("memory-bound", gpus=8)
    async with app.run_test(size=(80, 24)) as pilot:
        feed(app, source)
        await pilot.pause()
        assert app.query_one("#gpus").has_class("-compact")
        line = app.query_one("#gpu-0", GpuPanel).text_lines()[0]
        assert "!memory-bound" in line
        assert "Σ" in line


def with_overlap_threshold(percent: float) -> Thresholds:
    defaults = Thresholds.defaults()
    return dataclasses.replace(
        defaults,
        overlap_explained=dataclasses.replace(
            defaults.overlap_explained, sum_above_percent=percent
        ),
    )


@pytest.mark.parametrize("size", [(160, 50), (80, 24)])
async def test_overlap_note_follows_the_configured_threshold(size: tuple[int, int]) -> None:
    """SM % + memory % is over 100 in the memory-bound demo: with the threshold raised to
    200 the engine has no overlap finding, and neither panel shape says "overlap"."""
    app, source = make_app("memory-bound", with_overlap_threshold(200), gpus=8)
    async with app.run_test(size=size) as pilot:
        feed(app, source)
        await pilot.pause()
        gpu = app.snapshot.gpu(0) if app.snapshot is not None else None
        assert gpu is not None and (gpu.utilization_sum_percent or 0) > 100
        assert not any(f.rule == "overlap-explained" for f in app.engine.for_gpu(0))
        text = "\n".join(app.query_one("#gpu-0", GpuPanel).text_lines())
        assert "overlap" not in text and "Σ" not in text


async def test_overlap_note_shows_below_100_when_the_threshold_says_so() -> None:
    """A threshold under the healthy demo's sum: the engine's label is the MEM row's note."""
    app, source = make_app("healthy", with_overlap_threshold(10))
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source)
        await pilot.pause()
        gpu = app.snapshot.gpu(0) if app.snapshot is not None else None
        assert gpu is not None and (gpu.utilization_sum_percent or 0) > 10
        overlap = [f for f in app.engine.for_gpu(0) if f.rule == "overlap-explained"]
        assert overlap
        mem_row = app.query_one("#gpu-0", GpuPanel).text_lines()[2]
        assert overlap[0].label in mem_row


def overlap(sm: float, mem: float) -> Finding:
    """An overlap finding as the engine makes it: its evidence is the sample it saw."""
    return Finding(
        rule="overlap-explained",
        subject=Subject(0),
        severity=Severity.INFO,
        label=f"SM+mem {sm + mem:.0f}%: overlap",
        summary="two overlapping fractions",
        advice=(),
        evidence=(
            Evidence("SM %", sm, "now"),
            Evidence("memory-access %", mem, "now"),
            Evidence("sum", sm + mem, "> 100"),
        ),
    )


@pytest.mark.parametrize(
    ("sm", "mem", "finding", "note"),
    [
        (90.0, 58.0, overlap(90.0, 58.0), "SM+mem 148%: overlap"),
        # Held by the engine's clear-after time while the sum fell: not beside 20 and 13.
        (20.0, 13.0, overlap(90.0, 58.0), None),
        # No finding (a threshold above the sum): no note, whatever the sum.
        (90.0, 58.0, None, None),
    ],
)
async def test_mem_row_shows_the_overlap_finding_about_the_sample_on_screen(
    sm: float, mem: float, finding: Finding | None, note: str | None
) -> None:
    gpu = GpuSample(index=0, name="NVIDIA H100", sm_percent=sm, memory_access_percent=mem)
    app, _ = make_app("healthy")
    async with app.run_test(size=(120, 30)) as pilot:
        panel = GpuPanel(0)
        await app.gpu_area.mount(panel)
        panel.styles.height = 6
        panel.update_from(gpu, None, (finding,) if finding is not None else ())
        await pilot.pause()
        mem_row = panel.text_lines()[2]
        assert mem_row.lstrip().startswith("MEM")
        if note is None:
            assert "overlap" not in mem_row and "of time accessed" in mem_row
        else:
            assert note in mem_row


async def test_healthy_has_no_warning_in_any_hint_cell() -> None:
    app, source = make_app("healthy")
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source)
        await pilot.pause()
        cells = hint_cells(app)
        assert cells and all(cell == "" for cell in cells), cells
        assert all(f.severity is Severity.INFO for f in app.findings)
        # The GPU's healthy note stays in its panel.
        title = app.query_one("#gpu-0", GpuPanel).text_lines()[0]
        assert "compute-bound: healthy" in title


async def test_raised_threshold_makes_the_starved_hint_disappear() -> None:
    defaults = Thresholds.defaults()
    strict = dataclasses.replace(
        defaults,
        input_starved=dataclasses.replace(defaults.input_starved, sm_mean_below_percent=5),
    )
    app, source = make_app("starved-loader", thresholds=strict)
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source)
        await pilot.pause()
        assert app.engine.thresholds is strict
        assert "num_workers=0" not in row_of(app, 4000)
        assert not any(f.rule == "input-starved" for f in app.findings)


async def test_hint_sort_puts_findings_first() -> None:
    app, source = make_app("mixed")
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source)
        assert app.process_table.sort_key == "hint"  # the default: worst first
        await pilot.pause()
        cells = hint_cells(app)
        filled = [bool(cell) for cell in cells]
        assert filled[0] and filled == sorted(filled, reverse=True)
        assert "HINT▼" in table_rows(app)[0]


@pytest.mark.parametrize("width", [60, 80, 100, 160])
def test_hint_column_survives_narrow_terminals(width: int) -> None:
    keys = [column.key for column in visible_columns(width)]
    assert "hint" in keys
    if width <= 100:
        # USER and RSS give way first.
        assert "user" not in keys and "rss" not in keys
    if width >= 160:
        assert "user" in keys and "rss" in keys and "workers" in keys


async def test_hint_column_at_80x24() -> None:
    app, source = make_app("mixed")
    async with app.run_test(size=(80, 24)) as pilot:
        feed(app, source)
        await pilot.pause()
        header = table_rows(app)[0]
        assert "HINT" in header and "USER" not in header
        assert "! starved: num_workers=0?" in hint_cells(app)
        assert all(len(row) == 80 for row in table_rows(app))


def test_long_labels_are_cut_with_an_ellipsis() -> None:
    assert fit_text("x" * 30, 10) == "x" * 9 + "…"
    assert fit_text("short", 10) == "short"
    assert duration_text(45) == "45s"
    assert duration_text(725) == "12m05s"
    assert duration_text(11000) == "3h03m"


# --- the Enter screen -------------------------------------------------------------


async def test_detail_shows_evidence_scopes_and_advice_for_starved_loader() -> None:
    app, source = make_app("starved-loader")
    async with app.run_test(size=(160, 50)) as pilot:
        view = await open_detail(app, source, pilot)
        assert isinstance(app.screen, ProcessDetailScreen)
        text = "\n".join(view.text_lines())
        assert "starved: num_workers=0?" in text
        assert "WARNING" in text
        evidence = [line for line in view.text_lines() if line.rstrip().endswith(SCOPES)]
        scopes = {line.split()[-1] for line in evidence}
        assert {"process", "host", "device"} <= scopes, evidence
        assert "num_workers=" in text and "DataLoader(" in text
        assert "gputop-hints explain input-starved" in text
        assert "since " in text and "(20s)" in text
        # yes / no / context markers for met.
        assert any(" yes " in line for line in evidence)
        assert any(" no " in line for line in evidence)
        # And it is on screen, not only in the widget's buffer.
        assert "starved: num_workers=0?" in screen_text(app)
        # Ticks keep the detail live.
        feed(app, source, 2)
        await pilot.pause()
        assert "(22s)" in "\n".join(view.text_lines())


SCOPES = ("process", "device", "host")


async def test_detail_says_sm_evidence_is_device_level_without_process_util() -> None:
    app, source = make_app("starved-no-process-util")
    async with app.run_test(size=(160, 50)) as pilot:
        view = await open_detail(app, source, pilot)
        sm_rows = [line for line in view.text_lines() if line.strip().startswith("SM % (mean)")]
        assert sm_rows and sm_rows[0].split()[-1] == "device", sm_rows
        text = "\n".join(view.text_lines())
        assert "GPU-side evidence: the whole device" in text
        assert "per-process SM % not reported" in text


async def test_detail_of_a_healthy_process_says_no_hints_and_what_was_checked() -> None:
    app, source = make_app("healthy")
    async with app.run_test(size=(160, 50)) as pilot:
        text = "\n".join((await open_detail(app, source, pilot)).text_lines())
        assert "No hints for this process" in text
        assert "Input starved" in text and "Small batch" in text
        # Its GPU's whole-device findings are still listed.
        assert "WHOLE-DEVICE" in text and "compute-bound: healthy" in text


async def test_detail_of_a_gpu_level_finding_lists_it_under_the_gpu() -> None:
    app, source = make_app("memory-bound")
    async with app.run_test(size=(80, 24)) as pilot:
        view = await open_detail(app, source, pilot)
        text = "\n".join(view.text_lines())
        assert "No hints for this process" in text
        assert "memory-bound kernels" in text and "gputop-hints explain memory-bound" in text
        assert all(len(line) <= view.scrollable_content_region.width for line in view.text_lines())
        # Long content scrolls.
        assert view.virtual_size.height > view.size.height
        await pilot.press("end")
        await pilot.pause()
        assert view.scroll_offset.y > 0


# --- help -------------------------------------------------------------------------


def test_help_explains_every_rule_and_how_to_read_the_column() -> None:
    text = hints_help()
    for info in CATALOGUE:
        assert info.title in text and info.sentence in text
    for mark in SEVERITY_MARK.values():
        assert f"`{mark}`" in text
    assert GPU_LEVEL_PREFIX.strip() in text
    assert "gputop-hints config --print-defaults" in text and "docs/config.md" in text
    assert help_text().endswith(text)


async def test_question_mark_shows_the_hints_section() -> None:
    app, source = make_app("healthy")
    async with app.run_test(size=(100, 40)) as pilot:
        feed(app, source, 2)
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("end")
        await pilot.pause()
        # the hints catalogue ends the help: its last rule is on screen at the end
        assert CATALOGUE[-1].title in screen_text(app)


async def test_a_gpu_level_warning_is_on_one_process_and_dim_on_its_bystanders() -> None:
    """Issue 44: on the 8 x 64 demo, GPU 7 thrashes its PCIe link with one training job
    and idle inference servers beside it. The warning is the GPU's: its header says it,
    the one process bearing the GPU's load carries it, and the servers beside it show it
    dim (information), never with the warning glyph."""
    source = DemoSource("mixed", gpus=8, processes=64, seed=0)
    app = GputopApp(source, autostart=False)
    async with app.run_test(size=(160, 50)):
        for _ in range(TICKS):
            app.ingest(source.sample())
        engine = app.diagnoser.engine
        hints = app.process_table.hints
        snapshot = app.snapshot
        assert snapshot is not None
        for gpu in snapshot.gpus:
            warned = [f for f in engine.for_gpu(gpu.index) if f.severity >= Severity.WARNING]
            procs = [p for p in snapshot.processes if p.gpu_index == gpu.index]
            bare = [p for p in procs if not engine.for_process(p.pid, p.gpu_index)]
            if not warned or len(bare) < 2:
                continue
            shown = [hints[p.key] for p in bare]
            assert all(f is not None and f.rule == warned[0].rule for f in shown)
            loud = [f for f in shown if f is not None and f.severity >= Severity.WARNING]
            assert len(loud) == 1, [(p.pid, hints[p.key]) for p in bare]
            bearer = next(p for p in bare if hints[p.key] is loud[0])
            assert (bearer.sm_percent or 0) == max(p.sm_percent or 0 for p in bare)
            break
        else:
            pytest.fail("no GPU with a GPU-level warning and several bare processes")


def test_r_turns_the_worst_first_order_round_even_when_every_hint_is_alike() -> None:
    """Issue 44: with every hint a warning, ``r`` reversed only the (equal) severities and
    nothing moved. It turns the whole order round, ties included; unknowns stay last."""
    from gputop_hints.tui.widgets.process_columns import sort_processes

    source = DemoSource("mixed", gpus=8, processes=64, seed=0)
    procs = source.sample().processes
    warned = {
        p.key: Finding(
            "small-batch", Subject(p.gpu_index, p.pid), Severity.WARNING, "x", "y", (), ()
        )
        for p in procs[:6]
    }
    ahead = sort_processes(procs, "hint", warned)
    back = sort_processes(procs, "hint", warned, reverse=True)
    assert [p.key for p in back[:6]] == [p.key for p in reversed(ahead[:6])]
    assert {p.key for p in back[6:]} == {p.key for p in ahead[6:]}  # the rest: no hint
