"""ghost-memory in the monitor: the demo scenario's findings on screen, and ``h``, the
listing of the device files' holders (``fuser -v``), shown read-only.

fuser runs for real: against this machine's /dev/nvidia* (none here: it says so) and,
through the screen, against temporary files a real child process holds open.
"""

from __future__ import annotations

import glob
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputop_hints.sources.demo import DemoSource
from gputop_hints.sources.live.device_holders import DEVICE_GLOB
from gputop_hints.sources.live.source import LiveSource
from gputop_hints.tui.app import GputopApp
from gputop_hints.tui.screens.device_holders import DeviceHoldersScreen
from gputop_hints.tui.screens.main import MainScreen
from gputop_hints.tui.widgets.gpu_panel import GpuPanel
from tests.support.fake_nvml import FakeNvml, make_gpus

TICKS = 40
"""Past ghost-memory's 30 s raise-after."""


def demo_app() -> tuple[GputopApp, DemoSource]:
    source = DemoSource("ghost-memory", seed=0)
    return GputopApp(source, autostart=False), source


async def wait_for_listing(pilot: object, screen: DeviceHoldersScreen) -> None:
    for _ in range(200):
        if screen.holders is not None:
            return
        await pilot.pause(0.05)  # type: ignore[attr-defined]
    raise AssertionError(f"fuser did not come back: {screen.text!r}")


@pytest.fixture
def held_file(tmp_path: Path) -> Iterator[tuple[str, int]]:
    """A file a real child process holds open, named with a control character (what
    fuser prints back must not reach the terminal raw); its glob and the child's pid."""
    path = tmp_path / "nvidia\x1b[31mX"
    path.write_bytes(b"")
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys,time; f=open(sys.argv[1]); time.sleep(60)", str(path)],
    )
    try:
        for _ in range(100):  # until it has the file open
            if any(Path(fd).resolve() == path for fd in glob.glob(f"/proc/{child.pid}/fd/*")):
                break
            subprocess.run(["sleep", "0.05"], check=True)
        yield str(tmp_path / "nvidia*"), child.pid
    finally:
        child.kill()
        child.wait()


async def test_the_demo_shows_ghost_memory_on_the_gpu_and_on_the_zombie() -> None:
    app, source = demo_app()
    async with app.run_test(size=(160, 50)) as pilot:
        for _ in range(TICKS):
            app.ingest(source.sample())
        await pilot.pause()
        ghosts = {
            (f.subject.gpu_index, f.subject.pid, f.subtype)
            for f in app.findings
            if f.rule == "ghost-memory"
        }
        assert ghosts == {(0, None, "unlisted"), (1, 4000, "defunct")}
        title = app.query_one("#gpu-0", GpuPanel).text_lines()[0]
        assert "31G unaccounted" in title
        zombie = next(r for r in app.process_table.text_lines()[1:] if r.split()[0] == "4000")
        assert "defunct, holds 22G" in zombie


async def test_h_on_the_demo_says_why_it_does_not_run_fuser() -> None:
    app, source = demo_app()
    async with app.run_test(size=(160, 50)) as pilot:
        for _ in range(TICKS):
            app.ingest(source.sample())
        await pilot.pause()
        await pilot.press("h")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, DeviceHoldersScreen)
        assert "Not run: the demo's GPUs are simulated" in screen.text
        assert "fuser -v /dev/nvidia* (as root)" in screen.text
        # the findings it is about, named at the top
        assert "GPU 0: 31G unaccounted" in screen.text
        assert "pid 4000 on GPU 1: defunct, holds 22G" in screen.text
        assert screen.holders is None
        await pilot.press("escape")
        await pilot.pause()
        assert isinstance(app.screen, MainScreen)


@pytest.mark.skipif(bool(glob.glob(DEVICE_GLOB)), reason="this machine has NVIDIA device files")
async def test_h_on_the_live_source_runs_fuser_and_says_there_are_no_device_files() -> None:
    with FakeNvml(make_gpus(1, [[]])):
        live = LiveSource(detect_job=False)
        app = GputopApp(live, autostart=False)
        async with app.run_test(size=(160, 50)) as pilot:
            app.ingest(live.sample())
            await pilot.pause()
            await pilot.press("h")
            screen = app.screen
            assert isinstance(screen, DeviceHoldersScreen)
            await wait_for_listing(pilot, screen)
            assert screen.holders is not None and not screen.holders.ran
            assert "No file matches /dev/nvidia*" in screen.text
            await pilot.press("h")  # h again closes it, as Esc does
            await pilot.pause()
            assert isinstance(app.screen, MainScreen)
        live.close()


async def test_the_listing_shows_a_real_holder_and_no_raw_control_character(
    held_file: tuple[str, int],
) -> None:
    pattern, pid = held_file
    app, _ = demo_app()
    async with app.run_test(size=(160, 50)) as pilot:
        screen = DeviceHoldersScreen(None, pattern=pattern)
        await app.push_screen(screen)
        await wait_for_listing(pilot, screen)
        assert screen.holders is not None and screen.holders.ran
        assert f"$ fuser -v {pattern}" in screen.text
        [row] = [line for line in screen.text.splitlines() if f" {pid} " in line]
        assert "python" in row  # fuser's COMMAND column: the child holding it
        assert "\x1b" not in screen.text
        assert "nvidia^[[31mX" in screen.text
