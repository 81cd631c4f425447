"""The attached SLURM job in the views, and the terminal-facing render details.

Hand-built snapshots carrying a :class:`~gputop_hints.model.JobInfo`: the
header names the job, its cores and GPUs; the CPU panel splits the load of the
job's cores from the rest of the node; the process table lists the job first
and, with ``--all``, marks the others; in CPU-only mode the job's own processes
are listed. Also: only changed cells are repainted, sparkline buckets, the
ASCII glyph set and its locale detection.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Iterator

import pytest
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from gputop_hints.model import GpuProcess, GpuSample, HostSample, JobInfo, Snapshot, WorkerProcess
from gputop_hints.sources import Source
from gputop_hints.tui import glyphs
from gputop_hints.tui.app import GputopApp
from gputop_hints.tui.render import bar, bucketed, merge_segments, samples_per_cell, sparkline
from gputop_hints.tui.widgets.base import changed_span
from tests.support.screen import screen_text

JOB = JobInfo(
    job_id="4242",
    step_id="0",
    name="train",
    cpus=tuple(range(8, 16)),
    gpu_indices=(0,),
    processes=(
        WorkerProcess(pid=100, cpu_percent=97.0, state="R", name="python"),
        WorkerProcess(pid=101, cpu_percent=55.0, state="S", name="pt_data_worker"),
    ),
    cpu_percent=152.0,
    foreign_cpu_percent=30.0,
)


def host(per_core: tuple[float, ...] = (12.0,) * 8 + (96.0,) * 8) -> HostSample:
    return HostSample("node7", per_core, allowed_cores=tuple(range(8, 16)))


def snapshot(job: JobInfo | None = JOB, gpus: bool = True, **changes: object) -> Snapshot:
    procs = (
        GpuProcess(pid=100, gpu_index=0, vram_bytes=2**30, command="python train.py", in_job=True),
        GpuProcess(pid=900, gpu_index=0, vram_bytes=2**30, command="python other.py", in_job=False),
    )
    snap = Snapshot(
        timestamp=1_700_000_000.0,
        interval_s=1.0,
        host=host(),
        gpus=(GpuSample(index=0, name="NVIDIA H100", sm_percent=50.0),) if gpus else (),
        processes=procs if gpus else (),
        gpu_unavailable_reason=None if gpus else "NVML could not be loaded",
        job=job,
    )
    return dataclasses.replace(snap, **changes)  # type: ignore[arg-type]


class FixedSource(Source):
    kind = "live"
    simulated = False

    def sample(self) -> Snapshot:
        return snapshot()

    def close(self) -> None:
        pass


async def show(snap: Snapshot, size: tuple[int, int] = (140, 40)) -> str:
    app = GputopApp(FixedSource(), autostart=False)
    async with app.run_test(size=size) as pilot:
        app.ingest(snap)
        await pilot.pause()
        return screen_text(app)


async def test_header_names_the_job_its_cores_and_gpus() -> None:
    text = await show(snapshot())
    header = text.splitlines()[0]
    assert "job 4242.0 (train)" in header
    assert "cores 8-15" in header
    assert "GPUs 0" in header


async def test_cpu_panel_splits_job_cores_from_the_rest_and_shows_others() -> None:
    text = await show(snapshot())
    words = " ".join(text.split())
    assert "job cores 8-15 96% · rest of node 12%" in words
    assert "others on job cores 30%" in words


def others_style(app: GputopApp) -> tuple[Style | None, Style]:
    """The style "others on job cores" is drawn in, and the theme's warning style."""
    panel = app.cpu_panel
    for segment in panel.render_line(0):
        if "others on job cores" in segment.text:
            return segment.style, panel.palette.warning
    raise AssertionError(f"no 'others on job cores' in {panel.text_lines()}")


@pytest.mark.parametrize(("foreign", "warned"), [(30.0, True), (15.0, False)])
async def test_others_on_job_cores_warn_only_with_the_engines_finding(
    foreign: float, warned: bool
) -> None:
    """Warned in colour exactly when the engine's cores-contended finding holds (25 % by
    default, after 5 s): 15 % is shown, but not as a warning."""
    job = dataclasses.replace(JOB, foreign_cpu_percent=foreign)
    app = GputopApp(FixedSource(), autostart=False)
    async with app.run_test(size=(140, 40)) as pilot:
        for tick in range(8):
            app.ingest(snapshot(job=job, timestamp=1_700_000_000.0 + tick))
        await pilot.pause()
        contended = any(f.rule == "cores-contended" for f in app.findings)
        assert contended is warned
        style, warning = others_style(app)
        assert style is not None
        assert (style.color == warning.color) is warned


async def test_job_processes_first_and_others_marked_with_all() -> None:
    unfiltered = dataclasses.replace(JOB, filtered=False)
    text = await show(snapshot(job=unfiltered), size=(200, 40))
    rows = [line for line in text.splitlines() if "python " in line and ".py" in line]
    assert "train.py" in rows[0] and "other.py" in rows[1]
    assert rows[1].lstrip().startswith("·") and not rows[0].lstrip().startswith("·")
    assert "1 in job 4242 first, others dimmed" in text


async def test_without_all_no_row_is_marked() -> None:
    text = await show(snapshot())
    assert "·   " not in text.replace("· rest", "")
    assert "others dimmed" not in text


async def test_cpu_only_job_lists_its_processes_with_cpu() -> None:
    text = await show(snapshot(gpus=False))
    assert "job 4242: 2 processes, CPU 152%" in text
    assert "pt_data_worker" in text and "55%" in text
    assert "python" in text and "97%" in text


async def test_no_job_keeps_the_old_summary() -> None:
    text = await show(snapshot(job=None))
    assert "job may use 8: 8-15" in text
    assert "job " not in text.splitlines()[0]


# --- repainting only what changed -------------------------------------------------


def test_changed_span_covers_exactly_the_differing_segments() -> None:
    a = Strip([Segment("abc "), Segment("12%", Style(bold=True)), Segment(" tail")])
    b = Strip([Segment("abc "), Segment("13%", Style(bold=True)), Segment(" tail")])
    assert changed_span(a, a) is None
    assert changed_span(a, b) == (4, 7)


async def test_a_tick_repaints_only_changed_lines() -> None:
    app = GputopApp(FixedSource(), autostart=False)
    async with app.run_test(size=(140, 40)) as pilot:
        app.ingest(snapshot())
        await pilot.pause()
        table = app.process_table
        refreshed: list[object] = []
        original = table.refresh

        def spy(*regions: object, **kwargs: object) -> object:
            refreshed.append(regions)
            return original(*regions, **kwargs)  # type: ignore[arg-type]

        table.refresh = spy  # type: ignore[method-assign, assignment]
        app.ingest(snapshot())  # same data: nothing to repaint
        assert refreshed == []
        changed = snapshot(timestamp=1_700_000_001.0)
        procs = (dataclasses.replace(changed.processes[0], cpu_percent=50.0), changed.processes[1])
        app.ingest(dataclasses.replace(changed, processes=procs))
        assert len(refreshed) == 1 and len(refreshed[0]) == 1  # type: ignore[arg-type]


def test_merge_segments_joins_spaces_and_equal_styles() -> None:
    base = Style(bgcolor="black")
    red = base + Style(color="red")
    merged = merge_segments([Segment("a", red), Segment(" "), Segment("b", red)], base)
    assert merged == [Segment("a b", red)]
    underlined = base + Style(underline=True)
    kept = merge_segments([Segment("a", underlined), Segment(" ", base)], base)
    assert len(kept) == 2  # an underline shows on a blank


# --- sparkline buckets ------------------------------------------------------------


def test_buckets_span_the_window_and_move_only_when_one_completes() -> None:
    assert samples_per_cell(121, 40) == 4
    assert samples_per_cell(121, 200) == 1
    values = [float(i) for i in range(12)]
    assert bucketed(values, 4, ticks=12) == [1.5, 5.5, 9.5]
    # Two samples into the next bucket: they are left out until it completes.
    assert bucketed([*values, 50.0, 60.0], 4, ticks=14) == [1.5, 5.5, 9.5]
    assert bucketed([None, None, 1.0, 3.0], 2, ticks=4) == [None, 2.0]


# --- ASCII terminals --------------------------------------------------------------


@pytest.fixture
def ascii_glyphs() -> Iterator[None]:
    glyphs.configure(ascii=True)
    yield
    glyphs.configure(ascii=False)


def test_ascii_glyphs_for_sparklines_and_bars(ascii_glyphs: None) -> None:
    line = sparkline([0.0, 50.0, 100.0, None], 5, 100.0)
    assert line == " .=@ "
    filled, track = bar(0.55, 5)
    assert (filled + track).isascii() and filled.startswith("##")


async def test_ascii_screen_is_pure_ascii(ascii_glyphs: None) -> None:
    text = await show(snapshot(job=dataclasses.replace(JOB, filtered=False)))
    odd = sorted({c for c in text if not c.isascii()})
    assert odd == []


def test_unicode_glyphs_are_back_after_ascii() -> None:
    assert sparkline([100.0], 1, 100.0) == "█"


def test_glyph_choice_needs_no_rendering_module() -> None:
    """glyphs is below render: switching glyphs loads nothing that draws (no import cycle)."""
    probe = (
        "import sys\n"
        "from gputop_hints.tui import glyphs\n"
        "glyphs.configure(ascii=True)\n"
        "assert glyphs.active() is glyphs.ASCII\n"
        "print('gputop_hints.tui.render' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "False"


@pytest.mark.parametrize(
    ("environ", "utf8_mode", "expected"),
    [
        ({"LANG": "en_US.UTF-8"}, False, True),
        ({"LANG": "C.UTF-8"}, False, True),
        ({"LC_ALL": "C", "LANG": "en_US.UTF-8"}, False, False),
        ({"LANG": "de_DE.ISO-8859-1"}, False, False),
        ({"LANG": "C", "LC_CTYPE": "C.UTF-8"}, True, False),  # Python coerced a C locale
        ({}, True, False),
        ({"LANG": "C", "GPUTOP_HINTS_ASCII": "0"}, True, True),
        ({"LANG": "en_US.UTF-8", "GPUTOP_HINTS_ASCII": "1"}, False, False),
    ],
)
def test_terminal_encoding_from_the_locale(
    environ: dict[str, str], utf8_mode: bool, expected: bool
) -> None:
    assert glyphs.terminal_is_utf8(environ, utf8_mode=utf8_mode) is expected
