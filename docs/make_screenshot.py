"""Regenerate the README's screenshots (SVG, exported by Textual) from the demo.

    python docs/make_screenshot.py

Deterministic: the demo's fixed seed and simulated clock, no sampler thread,
times shown in UTC. Writes docs/screenshot.svg (160x50, the default 4-GPU demo
past its warm-up) and docs/screenshot-detail.svg (a starved process's detail view).
"""

from __future__ import annotations

import asyncio
import os
import time
from pathlib import Path

from gputop_hints.sources.demo import DemoSource
from gputop_hints.tui.app import GputopApp

DOCS = Path(__file__).resolve().parent


async def shoot(
    scenario: str, size: tuple[int, int], ticks: int, out: Path, keys: str = ""
) -> None:
    source = DemoSource(scenario, seed=0)
    app = GputopApp(source, autostart=False, theme="dark")
    async with app.run_test(size=size) as pilot:
        for _ in range(ticks):
            app.ingest(source.sample())
        await pilot.pause()
        for key in keys.split():
            await pilot.press(key)
            await pilot.pause()
        out.write_text(app.export_screenshot(title="gputop-hints --demo"), encoding="utf-8")


SHOTS: dict[str, tuple[str, tuple[int, int], int, str]] = {
    "screenshot.svg": ("mixed", (160, 50), 45, ""),
    "screenshot-detail.svg": ("starved-loader", (120, 40), 30, "enter"),
}
"""Each screenshot: (demo scenario, terminal size, ticks fed, keys pressed). The
default 4-GPU demo past its warm-up, and a starved process's detail view (the first
row: the table opens worst first). tests/tui/test_screenshots_current.py renders these
and fails while a committed one differs."""


def main() -> None:
    os.environ["TZ"] = "UTC"
    os.environ.pop("NO_COLOR", None)
    time.tzset()
    for name, (scenario, size, ticks, keys) in SHOTS.items():
        asyncio.run(shoot(scenario, size, ticks, DOCS / name, keys=keys))
        print(f"wrote docs/{name}")


if __name__ == "__main__":
    main()
