"""Behaviour of the Textual app, driven through Pilot with deterministic demo ticks."""

from __future__ import annotations

import asyncio
import dataclasses
import getpass
import os
from collections.abc import Sequence

import pytest

from gputop_hints.model import GpuProcess, GpuSample, HostSample, Snapshot
from gputop_hints.sources.demo import DemoSource
from gputop_hints.sources.live.source import LiveSource
from gputop_hints.tui.app import GputopApp
from gputop_hints.tui.glyphs import UNICODE
from gputop_hints.tui.messages import SnapshotReady
from gputop_hints.tui.render import GAP, bar, sparkline
from gputop_hints.tui.screens.detail import ProcessDetailScreen
from gputop_hints.tui.widgets.base import StripWidget
from gputop_hints.tui.widgets.cpu_panel import CpuPanel
from gputop_hints.tui.widgets.gpu_panel import GpuPanel
from gputop_hints.tui.widgets.gpu_unavailable_banner import GpuUnavailableBanner
from gputop_hints.tui.widgets.header import HeaderBar
from gputop_hints.tui.widgets.process_columns import SORT_KEYS, sort_processes, without_arguments
from gputop_hints.tui.widgets.process_table import UNSEEN_COMMAND, ProcessTable
from gputop_hints.units import UNKNOWN, core_ranges
from tests.sources.live.helpers import unused_pid
from tests.support.fake_nvml import FakeNvml, make_gpus
from tests.support.screen import screen_text

BLOCKS = UNICODE.blocks


class ClosingDemo(DemoSource):
    """A demo source that remembers whether the app closed it."""

    closed = False

    def close(self) -> None:
        self.closed = True
        super().close()


def make_app(
    scenario: str = "mixed", gpus: int | None = 8, processes: int | None = 64, **kwargs: object
) -> tuple[GputopApp, ClosingDemo]:
    source = ClosingDemo(scenario, gpus=gpus, processes=processes, seed=0)
    app = GputopApp(source, autostart=False, **kwargs)  # type: ignore[arg-type]
    return app, source


def feed(app: GputopApp, source: DemoSource, ticks: int) -> None:
    for _ in range(ticks):
        app.ingest(source.sample())


def lines_of(widget: StripWidget) -> list[str]:
    return widget.text_lines()


def is_paused(app: GputopApp) -> bool:
    return app.paused


# --- fixed-scale rendering ------------------------------------------------------


def test_flat_low_and_flat_full_sparklines_differ() -> None:
    low = sparkline([5.0] * 10, 10, 100.0)
    full = sparkline([100.0] * 10, 10, 100.0)
    assert low == BLOCKS[0] * 10
    assert full == BLOCKS[-1] * 10
    assert low != full


def test_sparkline_scale_is_fixed_not_fitted_to_the_data() -> None:
    # Stock Sparkline would stretch 40..50 over the full height; here 50 % is mid-height.
    line = sparkline([40.0, 50.0], 2, 100.0)
    assert line[1] == BLOCKS[3]
    assert line[0] == BLOCKS[3]


def test_unknown_is_a_gap_not_zero() -> None:
    line = sparkline([0.0, None, 0.0], 3, 100.0)
    assert line == BLOCKS[0] + GAP + BLOCKS[0]
    assert BLOCKS[0] != GAP


def test_sparkline_is_right_aligned_and_exactly_width() -> None:
    assert sparkline([100.0], 4, 100.0) == "   " + BLOCKS[-1]
    assert len(sparkline([1.0] * 50, 8, 100.0)) == 8
    assert sparkline([250.0, -5.0], 2, 100.0) == BLOCKS[-1] + BLOCKS[0]


def test_bar_and_core_ranges() -> None:
    filled, track = bar(0.5, 4)
    assert filled == "██" and len(track) == 2
    assert bar(None, 3) == ("", "───")
    assert core_ranges([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"


# --- the app ---------------------------------------------------------------------


async def test_header_shows_demo_badge_host_and_interval() -> None:
    app, source = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source, 3)
        await pilot.pause()
        header = lines_of(app.query_one(HeaderBar))[0]
        assert "DEMO" in header
        assert "demo-node" in header or source.sample().host.hostname in header
        assert "every 1s" in header
        assert "driver" in header


async def test_header_keeps_the_running_cost() -> None:
    """The GPU-time lost so far under the findings (docs/hints.md#what-a-finding-costs):
    nothing while the job is healthy, then growing under the cause, in money at a rate."""
    app, source = make_app("idle-vram", gpus=1, processes=None, cost_per_gpu_hour=3600.0)
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source, 2)
        await pilot.pause()
        assert "lost: none" in lines_of(app.query_one(HeaderBar))[0]
        feed(app, source, 40)
        await pilot.pause()
        header = lines_of(app.query_one(HeaderBar))[0]
        assert "most to idle-holding-vram" in header
        seconds = app.diagnoser.costs.totals().lost_s
        assert 10 <= seconds <= 40  # an idle GPU: a GPU-second a tick since the warning
        assert f"~{seconds:,.2f}" in header  # at 3600 a GPU-hour, one per GPU-second


async def test_rich_panels_at_160x50_and_compact_lines_at_80x24() -> None:
    app, source = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source, 10)
        await pilot.pause()
        panel = app.query_one("#gpu-0", GpuPanel)
        assert panel.size.height == 6
        text = lines_of(panel)
        assert [line.split()[0] for line in text[1:]] == ["SM", "MEM", "VRAM", "RX", "TX"]

        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert app.query_one("#gpus").has_class("-compact")
        panel = app.query_one("#gpu-0", GpuPanel)
        assert panel.size.height == 1
        line = lines_of(panel)[0]
        assert "SM" in line and "MEM" in line and "VRAM" in line
        # Every GPU and the process table are on screen at once.
        visible = screen_text(app)
        assert all(f"\n {i} SM" in visible for i in range(8))
        assert "PID" in visible


async def test_resizing_down_to_40x10_and_back_does_not_break() -> None:
    app, source = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source, 5)
        for size in [(80, 24), (40, 10), (20, 5), (40, 10), (160, 50)]:
            await pilot.resize_terminal(*size)
            feed(app, source, 1)
            await pilot.pause()
            assert "DEMO" in screen_text(app)
        assert app.query_one("#gpu-0", GpuPanel).size.height == 6
        assert not app.query_one("#gpus").has_class("-compact")


async def test_s_cycles_the_sort_key_and_reorders_rows() -> None:
    app, source = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source, 4)
        # Every third process without a per-process SM sample (NVML had none for it).
        snap = source.sample()
        unknown = {proc.key for proc in snap.processes[::3]}
        processes = tuple(
            dataclasses.replace(proc, sm_percent=None) if proc.key in unknown else proc
            for proc in snap.processes
        )
        app.ingest(dataclasses.replace(snap, processes=processes))
        await pilot.pause()
        table = app.query_one(ProcessTable)
        assert table.sort_key == SORT_KEYS[0] == "hint"
        await pilot.press("s")
        assert table.sort_key == "gpu"
        await pilot.press("s")
        assert table.sort_key == "vram"
        header = lines_of(table)[0]
        assert "VRAM▼" in header and "sort: VRAM" in header
        vram = [p.vram_bytes or 0 for p in table.rows]
        assert vram == sorted(vram, reverse=True)
        await pilot.press("s")
        assert table.sort_key == "sm"
        shown = [p.sm_percent for p in table.rows]
        cut = len(shown) - len(unknown)
        # Unknown SM % sorts last rather than as zero, and is drawn as unknown.
        assert unknown and shown[cut:] == [None] * len(unknown)
        known = [value for value in shown[:cut] if value is not None]
        assert len(known) == cut and known == sorted(known, reverse=True)
        assert {p.key for p in table.rows[cut:]} == unknown
        await pilot.press("end")
        await pilot.pause()
        drawn = [line for line in lines_of(table) if line.strip()]
        last = table.rows[-1]
        assert drawn[-1].split()[0] == str(last.pid) and UNKNOWN in drawn[-1].split()


def test_unknown_values_sort_last_whatever_the_direction() -> None:
    procs = [
        GpuProcess(pid=1, gpu_index=0, sm_percent=None),
        GpuProcess(pid=2, gpu_index=0, sm_percent=10.0),
        GpuProcess(pid=3, gpu_index=0, sm_percent=90.0),
    ]
    assert [p.pid for p in sort_processes(procs, "sm")] == [3, 2, 1]
    assert [p.pid for p in sort_processes(procs, "pid")] == [1, 2, 3]


def test_reverse_turns_the_order_round_and_unknown_still_sorts_last() -> None:
    procs = [
        GpuProcess(pid=1, gpu_index=0, sm_percent=None),
        GpuProcess(pid=2, gpu_index=0, sm_percent=10.0),
        GpuProcess(pid=3, gpu_index=0, sm_percent=90.0),
        GpuProcess(pid=4, gpu_index=0, sm_percent=10.0),
    ]
    # The whole order turned round, ties included (pids 2 and 4 at 10 %): r always moves
    # something, even when every value is alike; the unknown stays last.
    assert [p.pid for p in sort_processes(procs, "sm")] == [3, 2, 4, 1]
    assert [p.pid for p in sort_processes(procs, "sm", reverse=True)] == [4, 2, 3, 1]
    assert [p.pid for p in sort_processes(procs, "pid", reverse=True)] == [4, 3, 2, 1]


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        ("/opt/conda/bin/python train.py --lr 3e-4 --batch-size 64", "python train.py"),
        ("python3 -u /home/a/proj/train.py --cfg x.yaml", "python3 train.py"),
        (
            "/usr/bin/python -m torch.distributed.run --nproc-per-node 8 train.py",
            "python -m torch.distributed.run",
        ),
        ("/usr/local/bin/vllm serve meta-llama/Llama-3-8B --port 8000", "vllm"),
        ("VLLM::EngineCore", "VLLM::EngineCore"),
    ],
)
def test_without_arguments_keeps_the_program_and_its_script(command: str, shown: str) -> None:
    assert without_arguments(command) == shown


async def test_r_reverses_the_sort_and_a_hides_the_arguments() -> None:
    app, source = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source, 4)
        await pilot.pause()
        table = app.query_one(ProcessTable)
        await pilot.press("s", "s")
        assert table.sort_key == "vram"
        await pilot.press("r")
        await pilot.pause()
        vram = [p.vram_bytes or 0 for p in table.rows]
        assert vram == sorted(vram) and vram[0] < vram[-1]
        header = lines_of(table)[0]
        assert "VRAM▲" in header and "reversed (r)" in header
        await pilot.press("r")
        assert [p.vram_bytes or 0 for p in table.rows] == sorted(vram, reverse=True)
        first = table.rows[0]
        assert " --" in first.command  # the demo's commands carry options
        drawn = "\n".join(lines_of(table))
        assert first.command[:60] in drawn
        await pilot.press("a")
        await pilot.pause()
        drawn = "\n".join(lines_of(table))
        assert "COMMAND (no args: a)" in drawn
        assert without_arguments(first.command) in drawn and first.command[:60] not in drawn
        await pilot.press("a")
        await pilot.pause()
        assert first.command[:60] in "\n".join(lines_of(table))


async def test_a_click_on_a_column_title_sorts_by_it_and_again_reverses() -> None:
    app, source = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source, 4)
        await pilot.pause()
        table = app.query_one(ProcessTable)
        header = lines_of(table)[0]
        x = header.index("VRAM")
        await pilot.click(ProcessTable, offset=(x, 0))
        assert table.sort_key == "vram" and "VRAM▼" in lines_of(table)[0]
        vram = [p.vram_bytes or 0 for p in table.rows]
        assert vram == sorted(vram, reverse=True)
        await pilot.click(ProcessTable, offset=(x, 0))
        assert "VRAM▲" in lines_of(table)[0] and "reversed (r)" in lines_of(table)[0]
        assert [p.vram_bytes or 0 for p in table.rows] == sorted(vram)
        # A click on a row still selects it (the selection followed its process to the
        # end, so the table has scrolled).
        await pilot.click(ProcessTable, offset=(x, 3))
        assert table.cursor == table.top + 2


def _user_of(table: ProcessTable) -> str | None:
    """The table's user filter, read afresh (a key press changes it)."""
    return table.user


async def test_u_cycles_users_and_slash_filters_by_command() -> None:
    app, source = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source, 4)
        await pilot.pause()
        table = app.query_one(ProcessTable)
        everyone = list(table.rows)
        users = sorted({p.user for p in everyone if p.user})
        assert len(everyone) > 1 and users
        await pilot.press("u")  # only mine: the demo's processes are not this user's
        await pilot.pause()
        assert _user_of(table) == getpass.getuser() and table.rows == []
        assert f"none of {len(everyone)} processes: user {_user_of(table)} (u)" in "\n".join(
            lines_of(table)
        )
        await pilot.press("u")
        first = users[0]
        assert _user_of(table) == first
        assert table.rows == [p for p in everyone if p.user == first]
        for _ in users:
            await pilot.press("u")
        assert _user_of(table) is None and table.rows == everyone
        # `/` asks for a text; only the commands holding it stay, the header says so.
        word = everyone[-1].command.split()[-1]
        await pilot.press("slash")
        await pilot.pause()
        await pilot.press(*word, "enter")
        await pilot.pause()
        assert table.search == word
        assert table.rows == [p for p in everyone if word.casefold() in p.command.casefold()]
        assert 0 < len(table.rows) <= len(everyone)
        assert f"command has '{word}' (/)" in lines_of(table)[0]
        await pilot.press("slash")
        await pilot.pause()
        await pilot.press("ctrl+u", "enter")  # cleared: everything again
        await pilot.pause()
        assert table.search == "" and table.rows == everyone
        # Both filters at once, and Esc clears both.
        await pilot.press("u", "u", "slash")
        await pilot.pause()
        await pilot.press(*word, "enter")
        await pilot.pause()
        assert _user_of(table) == first and table.search == word
        assert table.rows == [
            p for p in everyone if p.user == first and word.casefold() in p.command.casefold()
        ]
        await pilot.press("escape")
        await pilot.pause()
        assert _user_of(table) is None and table.search == "" and table.rows == everyone


async def test_a_gpu_process_in_another_pid_namespace_says_so_and_how_to_see_it() -> None:
    # NVML lists this test's own pid and one no process here has (a GPU job in another
    # container, as a monitor in a container without --pid=host sees it).
    me, ghost = os.getpid(), unused_pid()
    with FakeNvml(make_gpus(1, [[me, ghost]])):
        live = LiveSource(detect_job=False)
        snap = live.sample()
        live.close()
    assert {p.pid for p in snap.processes} == {me, ghost}
    app, _ = make_app()
    async with app.run_test(size=(200, 50)) as pilot:
        app.ingest(snap)
        await pilot.pause()
        table = app.query_one(ProcessTable)
        lines = lines_of(table)
        assert "1 in another PID namespace" in lines[0]
        [ghost_row] = [line for line in lines[1:] if line.split()[:1] == [str(ghost)]]
        [my_row] = [line for line in lines[1:] if line.split()[:1] == [str(me)]]
        assert UNSEEN_COMMAND in ghost_row and UNSEEN_COMMAND not in my_row


async def test_p_pauses_and_sampler_ticks_are_dropped() -> None:
    app, source = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source, 3)
        await pilot.press("p")
        assert is_paused(app)
        assert "PAUSED" in lines_of(app.query_one(HeaderBar))[0]
        before = (app.ticks_ingested, len(app.history))
        app.post_message(SnapshotReady(source.sample()))
        await pilot.pause()
        assert (app.ticks_ingested, len(app.history)) == before
        await pilot.press("p")
        assert not is_paused(app)
        assert "PAUSED" not in lines_of(app.query_one(HeaderBar))[0]
        app.post_message(SnapshotReady(source.sample()))
        await pilot.pause()
        assert app.ticks_ingested == before[0] + 1


async def test_pause_stops_a_running_sampler() -> None:
    source = ClosingDemo("healthy", gpus=1, processes=1, interval_s=0.25)
    app = GputopApp(source, interval_s=0.25, autostart=True)
    async with app.run_test(size=(80, 24)) as pilot:
        for _ in range(40):
            await asyncio.sleep(0.05)
            if app.ticks_ingested >= 2:
                break
        assert app.ticks_ingested >= 2
        await pilot.press("p")
        assert app.sampler is not None and app.sampler.paused
        frozen = app.ticks_ingested
        await asyncio.sleep(0.8)
        await pilot.pause()
        assert app.ticks_ingested == frozen
    assert source.closed


async def test_c_cycles_themes_and_back() -> None:
    app, source = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        feed(app, source, 2)
        assert app.theme == "dark"
        seen = [app.theme]
        for _ in range(len(app.theme_names)):
            await pilot.press("c")
            seen.append(app.theme)
        assert set(seen) >= {"dark", "light", "high-contrast", "monochrome"}
        assert seen[-1] == "dark"


async def test_no_color_forces_monochrome() -> None:
    app, _ = make_app(color=False)
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.theme == "monochrome"
        await pilot.press("c")
        assert app.theme == "monochrome"


async def test_no_color_environment_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app, _ = make_app()
    assert app.theme == "monochrome"


async def test_unknown_theme_falls_back_to_dark_with_a_note() -> None:
    app, _ = make_app(theme="no-such-theme")
    assert app.theme == "dark"
    assert any("no-such-theme" in note for note in app.notes)


async def test_arrows_and_enter_open_the_selected_process_and_esc_returns() -> None:
    app, source = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source, 20)
        await pilot.pause()
        table = app.query_one(ProcessTable)
        await pilot.press("down", "down")
        assert table.cursor == 2
        selected = table.selected
        assert selected is not None
        await pilot.press("enter")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ProcessDetailScreen)
        assert (screen.pid, screen.gpu_index) == (selected.pid, selected.gpu_index)
        text = screen_text(app)
        assert f"PID {selected.pid}" in text
        for label in ("SM %", "main CPU %", "workers CPU %", "VRAM", "WORKERS"):
            assert label in text
        # The detail screen keeps updating from new ticks.
        feed(app, source, 1)
        await pilot.pause()
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, ProcessDetailScreen)
        assert app.query_one(ProcessTable).selected == table.selected


async def test_a_chosen_process_is_followed_and_a_new_order_starts_at_the_top() -> None:
    app, source = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source, 3)
        table = app.query_one(ProcessTable)
        # Nothing chosen yet: the first row stays selected as hints reorder the rows.
        feed(app, source, 20)
        assert table.cursor == 0 and table.selected == table.rows[0]
        await pilot.press("down", "down", "down")
        chosen = table.selected
        assert chosen is not None
        feed(app, source, 10)
        assert table.selected is not None and table.selected.key == chosen.key
        # A new order (s): its top in view, its first row selected (issue 44: keeping the
        # old selection scrolled the list to it and hid the rows the order puts first).
        await pilot.press("s")
        assert table.cursor == 0 and table.top == 0
        assert table.selected is not None and table.selected.key == table.rows[0].key


async def test_question_mark_opens_the_metrics_help_and_escape_closes_it() -> None:
    app, source = make_app()
    async with app.run_test(size=(100, 30)) as pilot:
        feed(app, source, 2)
        await pilot.press("question_mark")
        await pilot.pause()
        from gputop_hints.tui.screens.help import HelpScreen

        assert isinstance(app.screen, HelpScreen)
        assert "SM %" in screen_text(app)
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_q_quits_and_closes_the_source() -> None:
    app, source = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        feed(app, source, 1)
        await pilot.press("q")
        await pilot.pause()
    assert source.closed


def _no_gpu_snapshot() -> Snapshot:
    return Snapshot(
        timestamp=1_700_000_000.0,
        interval_s=1.0,
        host=HostSample(
            hostname="cpu-only",
            cpu_percent_per_core=(10.0, None, 30.0, 40.0),
            allowed_cores=(0, 1),
        ),
        source="live",
        gpu_unavailable_reason="NVML could not be loaded: libnvidia-ml.so.1 not found",
    )


async def test_cpu_only_banner_says_why_and_suggests_demo() -> None:
    source = ClosingDemo("healthy", gpus=1, processes=1)
    app = GputopApp(source, autostart=False)
    async with app.run_test(size=(120, 30)) as pilot:
        app.ingest(_no_gpu_snapshot())
        await pilot.pause()
        banner = app.query_one(GpuUnavailableBanner)
        assert banner.display
        text = " ".join(lines_of(banner))
        assert "libnvidia-ml.so.1 not found" in text
        assert "--demo" in text
        assert not app.query(GpuPanel)
        assert "DEMO" not in lines_of(app.query_one(HeaderBar))[0]
        cpu = lines_of(app.query_one(CpuPanel))
        assert " ".join(cpu[0].split()).count("iowait n/a") == 1
        assert "job may use 2: 0-1" in cpu[0]


async def test_cpu_summary_keeps_its_columns_as_values_change_width() -> None:
    """A mean going 5 % -> 100 % or memory 512MiB -> 23.5GiB rewrites only its own
    cells: what follows it on the line stays where it was (no jitter, fewer bytes)."""
    source = ClosingDemo("healthy", gpus=1, processes=1)
    app = GputopApp(source, autostart=False)
    lines = []
    async with app.run_test(size=(120, 30)) as pilot:
        cases = (((5.0, 5.0), 0.0, 512 * 2**20), ((100.0, 100.0), 12.0, 24 * 2**30))
        for cores, iowait, used in cases:
            snap = dataclasses.replace(
                _no_gpu_snapshot(),
                host=HostSample(
                    hostname="cpu-only",
                    cpu_percent_per_core=cores,
                    allowed_cores=(0, 1),
                    iowait_percent=iowait,
                    memory_used_bytes=used,
                    memory_total_bytes=64 * 2**30,
                ),
            )
            app.ingest(snap)
            await pilot.pause()
            lines.append(lines_of(app.query_one(CpuPanel))[0])
    low, high = lines
    assert "5%" in low and "100%" in high
    for word in ("iowait", "mem", "load"):
        assert low.index(word) == high.index(word), (word, low, high)


async def test_unknown_values_show_as_na_not_zero() -> None:
    app, source = make_app(gpus=1, processes=1)
    async with app.run_test(size=(160, 50)) as pilot:
        snap = source.sample()
        gpu = GpuSample(index=0, name="Mystery GPU")
        proc = dataclasses.replace(snap.processes[0], sm_percent=None, cpu_percent=None)
        app.ingest(dataclasses.replace(snap, gpus=(gpu,), processes=(proc,)))
        await pilot.pause()
        panel = lines_of(app.query_one("#gpu-0", GpuPanel))
        sm_line = next(line for line in panel if line.strip().startswith("SM"))
        assert "n/a" in sm_line and "0%" not in sm_line
        assert "n/a" in next(line for line in panel if line.strip().startswith("VRAM"))
        row = lines_of(app.query_one(ProcessTable))[1]
        assert row.count("n/a") >= 2

        await pilot.resize_terminal(80, 12)
        app.ingest(dataclasses.replace(snap, gpus=(gpu,), processes=(proc,)))
        await pilot.pause()
        compact = lines_of(app.query_one("#gpu-0", GpuPanel))[0]
        assert "n/a" in compact and " 0%" not in compact


async def test_a_gpu_only_replay_shows_no_host_side_as_na_not_zero() -> None:
    # A replayed nvidia-smi log: no host cores, processes without CPU or workers.
    app, source = make_app(gpus=1, processes=1)
    async with app.run_test(size=(160, 50)) as pilot:
        snap = source.sample()
        host = dataclasses.replace(snap.host, cpu_percent_per_core=(), allowed_cores=())
        proc = dataclasses.replace(snap.processes[0], cpu_percent=None, workers=())
        app.ingest(dataclasses.replace(snap, host=host, processes=(proc,)))
        await pilot.pause()
        cpu = lines_of(app.query_one(CpuPanel))
        assert "CPU: n/a" in cpu[0] and "0 cores" not in cpu[0]
        row = lines_of(app.query_one(ProcessTable))[1]
        assert " 0    0%" not in row and " 0   0%" not in row
        assert row.count("n/a") >= 2


async def test_sm_plus_memory_above_100_is_shown_unclamped() -> None:
    app, source = make_app(gpus=1, processes=1)
    async with app.run_test(size=(160, 50)) as pilot:
        snap = source.sample()
        gpu = dataclasses.replace(snap.gpus[0], sm_percent=96.0, memory_access_percent=88.0)
        app.ingest(dataclasses.replace(snap, gpus=(gpu,)))
        await pilot.pause()
        assert any("184%" in line for line in lines_of(app.query_one("#gpu-0", GpuPanel)))


async def test_idle_ticks_do_not_remount_widgets() -> None:
    app, source = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source, 2)
        await pilot.pause()
        panels = list(app.query(GpuPanel))
        feed(app, source, 5)
        await pilot.pause()
        assert list(app.query(GpuPanel)) == panels


async def test_the_slash_filter_follows_each_key_and_esc_puts_the_list_back() -> None:
    """Issue 44: the table blanked while the filter was typed. It shows the matching
    rows under the prompt as each key comes; Esc puts back what was shown before."""
    app, source = make_app()
    async with app.run_test(size=(160, 50)) as pilot:
        feed(app, source, 4)
        await pilot.pause()
        table = app.query_one(ProcessTable)
        everyone = list(table.rows)
        await pilot.press("slash")
        await pilot.pause()
        await pilot.press(*"serve")
        await pilot.pause()
        assert app.filter_bar.display and app.filter_bar.has_focus  # still typing
        shown = [p for p in everyone if "serve" in (p.command or "").casefold()]
        assert shown and table.rows == shown
        text = screen_text(app)
        assert "serve.py" in text and "train.py" not in text.split("COMMAND", 1)[1]
        await pilot.press("escape")
        await pilot.pause()
        assert table.search == "" and table.rows == everyone


def _hand_over(app: GputopApp, snapshots: list[Snapshot]) -> None:
    """What the sampler thread does at each tick, done for several ticks in a row."""
    for snapshot in snapshots:
        app._on_sample(snapshot)


async def test_a_screen_behind_the_sampler_takes_the_waiting_ticks_in_one_repaint() -> None:
    """Ticks that arrive while the app is busy wait together for one message: each goes
    through the history, the screen repaints once for the newest, and no more than
    MAX_ARRIVED wait (a slower screen used to queue a whole snapshot a tick, unbounded)."""
    import threading

    from gputop_hints.tui.app import MAX_ARRIVED

    app, source = make_app(gpus=2, processes=4)
    repaints: list[int] = []
    ingest_many = app.ingest_many

    def counted(snapshots: Sequence[Snapshot]) -> None:
        repaints.append(len(snapshots))
        ingest_many(snapshots)

    app.ingest_many = counted  # type: ignore[method-assign]
    async with app.run_test(size=(160, 50)) as pilot:
        app.ingest(source.sample())
        ticks = app.ticks_ingested
        snaps = [source.sample() for _ in range(5)]
        sampler = threading.Thread(target=_hand_over, args=(app, snaps))
        sampler.start()
        sampler.join()
        await pilot.pause()
        assert app.ticks_ingested == ticks + 5
        assert repaints[-1] == 5 and len(repaints) == 2  # the first tick, then one for five
        assert app.snapshot is snaps[-1]
        many = [source.sample() for _ in range(MAX_ARRIVED + 7)]
        sampler = threading.Thread(target=_hand_over, args=(app, many))
        sampler.start()
        sampler.join()
        await pilot.pause()
        assert app.ticks_dropped == 7
        assert app.ticks_ingested == ticks + 5 + MAX_ARRIVED
        assert app.snapshot is many[-1]
