"""What the TUI itself costs a tick: CPU time of ingest and of the repaint, in-process.

Runs :class:`~gputop_hints.tui.app.GputopApp` headless (``app.run_test``, the size of
``--size``, 160x50 by default) on a demo source (``mixed``, 8 GPUs x 64 processes by
default; ``--gpus 1 --processes 1`` or ``--processes 256`` for the other cases), feeds
``--warm`` ticks that fill the window, then ``--ticks`` measured ones. Each tick is
what the monitor does once a second:

* ingest: ``app.ingest(snapshot)`` -- history, hint engine, every widget's
  ``update_from`` and the diff of its lines (the engine's share, ``Diagnoser.feed``,
  is shown on its own: it is measured elsewhere, see ``bench/engine_cost.py``);
* render: everything the event loop then runs until the tick is on the terminal,
  as in the real app: each dirty widget's idle handler posts its ``Update``, the
  screen's update timer (``Screen._on_timer_update``) runs ``Compositor.update_widgets``
  and the compositor's partial update (every dirty widget's ``render_line``), and
  ``App._display`` -- wrapped here so that, headless, it still makes the terminal
  text a real app would write (``CompositorUpdate.render_segments`` on the app's
  console: the changed cells, via ``partial_output``). Only the write itself is left
  out. The loop is watched every few ms (sleeping costs no CPU) until the frame is
  out and nothing is dirty, then a few ms more for any repaint that follows.

Printed: the median CPU time (``time.process_time``) per tick of each part, the
median bytes of terminal output, a digest of all of it (a change meant to draw the
same must leave it as it is), and with ``--calls`` the Python calls a tick makes
(``--ticks`` more ticks run under cProfile). Deterministic input (fixed seed); CPU
time still moves a little with the machine.

    .venv/bin/python bench/tui_cost.py [--gpus 8] [--processes 64] [--ticks 100] [--calls]
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import hashlib
import os
import pstats
import statistics
import time
from dataclasses import dataclass, field
from typing import Any

SETTLE_S = 0.005
"""How often the event loop is checked for the tick's repaint (sleeping costs no CPU)."""


@dataclass
class Costs:
    ingest: list[float] = field(default_factory=list)
    engine: list[float] = field(default_factory=list)
    render: list[float] = field(default_factory=list)
    output: list[int] = field(default_factory=list)
    frames: list[int] = field(default_factory=list)
    digest: str = ""
    lines: dict[str, list[float]] = field(default_factory=dict)
    """Per widget class: lines a tick [kept, rebuilt the same as drawn, changed]."""
    ingest_calls: int = 0
    engine_calls: int = 0
    render_calls: int = 0


def _calls(profile: cProfile.Profile) -> int:
    stats = pstats.Stats(profile)
    return sum(row[1] for row in stats.stats.values())  # type: ignore[attr-defined]


async def measure(args: argparse.Namespace) -> Costs:
    from textual._compositor import CompositorUpdate

    from gputop_hints.cli.gc_tuning import tune_for_long_run
    from gputop_hints.sources.demo import DemoSource
    from gputop_hints.tui.app import GputopApp
    from gputop_hints.tui.widgets.base import StripWidget

    source = DemoSource(
        args.scenario, gpus=args.gpus, processes=args.processes, seed=0, cores=args.cores
    )
    app = GputopApp(source, autostart=False, theme=args.theme)
    if not args.default_gc:
        tune_for_long_run()  # as the monitor does before it runs the app (cli/monitor.py)
    costs = Costs()
    digest = hashlib.sha256()
    state: dict[str, float] = {"engine": 0.0, "bytes": 0, "frames": 0}
    profiles: dict[str, cProfile.Profile] = {}
    """While calls are counted: "ingest" and "engine", the engine's calls kept apart."""

    feed = app.diagnoser.feed

    def timed_feed(snapshot: Any) -> Any:
        started = time.process_time()
        if profiles:
            profiles["ingest"].disable()
            profiles["engine"].enable()
        try:
            return feed(snapshot)
        finally:
            if profiles:
                profiles["engine"].disable()
                profiles["ingest"].enable()
            state["engine"] += time.process_time() - started

    app.diagnoser.feed = timed_feed  # type: ignore[method-assign]

    display = app._display

    def writing_display(screen: Any, renderable: Any) -> None:
        # What App._display does for a real terminal, less the driver's write.
        display(screen, renderable)
        if renderable is not None and not app._batch_count:
            if isinstance(renderable, CompositorUpdate):
                text = renderable.render_segments(app.console)
            else:
                text = app.console._render_buffer(app.console.render(renderable))
            data = text.encode()
            state["bytes"] += len(data)
            digest.update(data)
            state["frames"] += 1

    app._display = writing_display  # type: ignore[method-assign]

    width, height = (int(part) for part in args.size.split("x"))
    async with app.run_test(size=(width, height)) as pilot:
        await pilot.pause()

        async def repainted() -> None:
            # The event loop runs as in the real app: each widget's idle handler posts
            # its Update, the screen's update timer (1 / MAX_FPS) composes and displays.
            for _ in range(200):
                await asyncio.sleep(SETTLE_S)
                if state["frames"] and not app.screen._dirty_widgets:
                    break
            # and a little longer, for any repaint that follows the first one
            await asyncio.sleep(SETTLE_S)

        async def tick(
            ingest_profile: cProfile.Profile | None = None,
            render_profile: cProfile.Profile | None = None,
            record: bool = True,
        ) -> None:
            snapshot = source.sample()
            state["engine"] = 0.0
            state["bytes"] = state["frames"] = 0
            started = time.process_time()
            if ingest_profile is not None:
                ingest_profile.enable()
            app.ingest(snapshot)
            if ingest_profile is not None:
                ingest_profile.disable()
            ingested = time.process_time()
            if render_profile is not None:
                render_profile.enable()
            await repainted()
            if render_profile is not None:
                render_profile.disable()
            rendered = time.process_time()
            if record:
                costs.ingest.append((ingested - started) * 1000.0)
                costs.engine.append(state["engine"] * 1000.0)
                costs.render.append((rendered - ingested) * 1000.0)
                costs.output.append(int(state["bytes"]))
                costs.frames.append(int(state["frames"]))

        def diffed() -> dict[str, list[int]]:
            totals: dict[str, list[int]] = {}
            for widget in app.screen.query(StripWidget):
                row = totals.setdefault(type(widget).__name__, [0, 0, 0])
                for i, n in enumerate(widget.lines_diffed):
                    row[i] += n
            return totals

        for _ in range(args.warm):
            await tick(record=False)
        before = diffed()
        for _ in range(args.ticks):
            await tick()
        for name, row in diffed().items():
            old = before.get(name, [0, 0, 0])
            costs.lines[name] = [(n - o) / args.ticks for n, o in zip(row, old, strict=True)]
        if args.calls:
            ingest_profile = cProfile.Profile()
            render_profile = cProfile.Profile()
            engine_profile = cProfile.Profile()
            profiles.update(ingest=ingest_profile, engine=engine_profile)
            for _ in range(args.ticks):
                await tick(ingest_profile, render_profile, record=False)
            profiles.clear()
            costs.engine_calls = _calls(engine_profile) // args.ticks
            costs.ingest_calls = _calls(ingest_profile) // args.ticks + costs.engine_calls
            if args.profile:
                ingest_profile.dump_stats(f"{args.profile}.ingest")
                engine_profile.dump_stats(f"{args.profile}.engine")
                render_profile.dump_stats(f"{args.profile}.render")
            costs.render_calls = _calls(render_profile) // args.ticks
    costs.digest = digest.hexdigest()[:16]
    return costs


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--scenario", default="mixed")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--processes", type=int, default=64)
    parser.add_argument(
        "--cores", type=int, default=None, help="host CPU cores (default: the scenario's)"
    )
    parser.add_argument("--size", default="160x50", help="terminal WIDTHxHEIGHT")
    parser.add_argument("--theme", default="dark")
    parser.add_argument("--ticks", type=int, default=100, help="ticks measured")
    parser.add_argument("--warm", type=int, default=130, help="ticks fed first, not measured")
    parser.add_argument(
        "--default-gc",
        action="store_true",
        help="leave CPython's collector as it starts (the monitor tunes it: cli/gc_tuning.py)",
    )
    parser.add_argument(
        "--color-system",
        default="truecolor",
        help="TEXTUAL_COLOR_SYSTEM for the app's console (truecolor, 256, standard)",
    )
    parser.add_argument(
        "--calls", action="store_true", help="also count the Python calls a tick makes"
    )
    parser.add_argument(
        "--profile",
        metavar="PATH",
        help=(
            "with --calls: write the cProfile stats to PATH.ingest (less the engine's), "
            "PATH.engine and PATH.render"
        ),
    )
    args = parser.parse_args(argv)
    # Read by Textual when it is imported (below, in measure).
    os.environ.setdefault("TEXTUAL_COLOR_SYSTEM", args.color_system)
    costs = asyncio.run(measure(args))
    ingest = statistics.median(costs.ingest)
    engine = statistics.median(costs.engine)
    widgets = statistics.median(i - e for i, e in zip(costs.ingest, costs.engine, strict=True))
    render = statistics.median(costs.render)
    total = statistics.median(i + r for i, r in zip(costs.ingest, costs.render, strict=True))
    print(
        f"TUI cost, {args.scenario} {args.gpus} GPUs x {args.processes} processes, "
        f"{args.size}, {len(costs.ingest)} ticks after {args.warm} "
        f"({os.cpu_count()} CPUs here), median CPU ms per tick:"
    )
    print(f"  ingest  {ingest:7.2f}  (engine {engine:.2f}, widgets {widgets:.2f})")
    print(
        f"  render  {render:7.2f}  ({statistics.median(costs.output):.0f} bytes of output, "
        f"{statistics.median(costs.frames):.0f} frame(s))"
    )
    print(f"  total   {total:7.2f}  (TUI without the engine: {total - engine:.2f})")
    print(f"  terminal output digest {costs.digest} (same input, same drawing: same digest)")
    shown = {name: row for name, row in costs.lines.items() if any(row)}
    if shown:
        print("  lines a tick, diffed after an update: kept / rebuilt the same / changed")
        for name, (kept, same, changed) in sorted(shown.items()):
            print(f"    {name:<16} {kept:6.1f} {same:6.1f} {changed:6.1f}")
    if args.calls:
        print(
            f"  Python calls per tick: ingest {costs.ingest_calls} "
            f"(engine {costs.engine_calls}, widgets {costs.ingest_calls - costs.engine_calls}), "
            f"render {costs.render_calls}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
