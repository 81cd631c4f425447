"""What the hint engine costs a tick: the demo's big node (8 GPUs, 64 processes).

Feeds ``--ticks`` snapshots of a demo scenario at 1 Hz simulated time through a
:class:`~gputop_hints.hints.diagnoser.Diagnoser` as the monitor does (append, then
evaluate), after ``--warm`` ticks that fill the window, and prints the median, p95
and max of the engine's own cost per tick (``HintEngine.last_cost_s``, wall time on
this machine). Goal (issue 23): median <= 3 ms at 8 x 64.

Wall time moves with the machine's load; two figures that do not (much) come with it:
the median CPU time of a tick (``time.process_time``) and, with ``--calls``, the Python
calls a tick makes (the measured ticks run again under cProfile, on a copy of the state).
``--digest`` prints, instead of timings, a sha256 of every tick's raw findings (each
rule's own, before hysteresis: rule, subject, severity, label, summary, evidence) and
visible findings for waves 8 x 64 (400 ticks), the mixed demo 8 x 64 and every demo
scenario at 2 x 5: a change meant to cost less must print the same digests (no verdict
moved). ``--rules`` runs the measured ticks again on another copy, each rule's check timed apart,
and prints the CPU ms a tick of the costliest rules (where a tick's time goes); ``--steps``
does the same for input-starved's costliest steps (``Window.process_gaps``, the slow
window's, runs inside ``gaps_seen_by``: its time is counted in both).

``--shape waves`` is the steady state the demo never reaches (issue 49): every process
holds 1 GiB and runs its own utilization wave, 5-95 % with a period of 7-17 s, so that
every process is judged on every tick (its own gaps on a GPU the others keep busy) --
the node a fake NVML with moving per-process samples makes. ``--minutes M`` feeds M
minutes of simulated ticks after the warm-up and prints the median CPU ms of minute 1
and of minute M, so that a cost growing with uptime shows.

    PYTHONPATH=. .venv/bin/python bench/engine_cost.py [--shape demo|waves] [--gpus 8]
        [--processes 64] [--ticks 300] [--minutes 10] [--calls] [--rules] [--steps] [--digest]
"""

from __future__ import annotations

import argparse
import copy
import cProfile
import dataclasses
import hashlib
import math
import os
import pstats
import statistics
import sys
import time
from collections.abc import Callable, Iterator

from gputop_hints.hints.diagnoser import Diagnoser
from gputop_hints.hints.findings import Finding
from gputop_hints.hints.rules.spec import Rule
from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.hints.window import Window
from gputop_hints.model import Snapshot
from gputop_hints.sources.demo import DemoSource
from gputop_hints.sources.demo.scenarios import SCENARIOS


def waves(gpus: int, processes: int) -> Iterator[Snapshot]:
    """The steady state: ``processes`` round-robin over ``gpus``, each with its own
    5-95 % utilization wave (period 7-17 s), the GPU's SM their mean, 1 GiB each."""
    from tests.hints.windows import T0, G, H, P, Tick, snapshot  # the rule tests' builder

    k = 0
    while True:
        sms: dict[int, list[float]] = {g: [] for g in range(gpus)}
        procs = []
        for i in range(processes):
            pid, gpu = 10_000 + i, i % gpus
            sm = 50.0 + 45.0 * math.sin(2 * math.pi * k / (7 + pid % 11) + pid)
            sms[gpu].append(sm)
            procs.append(P(pid=pid, gpu=gpu, vram_gib=1.0, sm=round(sm), cpu=30.0))
        devices = []
        for g, values in sms.items():
            sm = sum(values) / len(values) if values else 0.0
            devices.append(
                G(index=g, sm=sm, mem=sm / 3, vram_gib=len(values) + 1.0, samples=(sm,) * 6)
            )
        tick = Tick(gpus=tuple(devices), procs=tuple(procs), host=H(cores=32, busy=20.0))
        yield snapshot(tick, T0 + k, 1.0)
        k += 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--scenario", default="mixed")
    parser.add_argument("--shape", choices=("demo", "waves"), default="demo")
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--processes", type=int, default=64)
    parser.add_argument("--ticks", type=int, default=300, help="ticks measured")
    parser.add_argument("--warm", type=int, default=150, help="ticks fed first, not measured")
    parser.add_argument(
        "--minutes",
        type=int,
        default=0,
        help="measure this many minutes of ticks (instead of --ticks) and print minute 1 "
        "and the last minute apart",
    )
    parser.add_argument(
        "--calls", action="store_true", help="also count the Python calls a tick makes"
    )
    parser.add_argument(
        "--rules", action="store_true", help="also print the CPU ms a tick of the costliest rules"
    )
    parser.add_argument(
        "--steps",
        action="store_true",
        help="also print the CPU ms a tick of input-starved's costliest steps, each timed apart",
    )
    parser.add_argument(
        "--digest",
        action="store_true",
        help="print a sha256 of every tick's raw and visible findings (waves 8 x 64, the "
        "mixed demo 8 x 64, every demo scenario at 2 x 5) instead of timings",
    )
    args = parser.parse_args(argv)
    if args.digest:
        _print_digests()
        return 0
    if args.shape == "waves":
        ticks = waves(args.gpus, args.processes)
        name = "waves"
    else:
        source = DemoSource(args.scenario, gpus=args.gpus, processes=args.processes)
        ticks = iter(source.sample, None)
        name = args.scenario
    measured = args.minutes * 60 if args.minutes else args.ticks
    diagnoser = Diagnoser(Thresholds.defaults(), interval_s=1.0)
    for _ in range(args.warm):
        diagnoser.append(next(ticks))
        diagnoser.evaluate()
    profiled = copy.deepcopy(diagnoser) if args.calls else None
    by_rule = copy.deepcopy(diagnoser) if args.rules else None
    by_step = copy.deepcopy(diagnoser) if args.steps else None
    kept = args.calls or args.rules or args.steps
    snaps = [next(ticks) for _ in range(measured)] if kept else None
    costs: list[float] = []
    cpu: list[float] = []
    for i in range(measured):
        diagnoser.append(snaps[i] if snaps is not None else next(ticks))
        started = time.process_time()
        diagnoser.evaluate()
        cpu.append((time.process_time() - started) * 1000.0)
        costs.append(diagnoser.engine.last_cost_s * 1000.0)
    by_tick = list(cpu)
    costs.sort()
    p95 = costs[min(len(costs) - 1, round(0.95 * (len(costs) - 1)))]
    print(
        f"hint engine, {name} {args.gpus} GPUs x {args.processes} processes, "
        f"{len(costs)} ticks after {args.warm} ({os.cpu_count()} CPUs here):"
    )
    print(
        f"  median {statistics.median(costs):.2f} ms  p95 {p95:.2f} ms  max {costs[-1]:.2f} ms "
        "per tick (goal: median <= 3 ms)"
    )
    print(f"  CPU time: median {statistics.median(cpu):.2f} ms per tick")
    if args.minutes >= 2:
        first = statistics.median(by_tick[:60])
        last = statistics.median(by_tick[-60:])
        print(
            f"  CPU time by uptime: minute 1 {first:.2f} ms, minute {args.minutes} {last:.2f} ms "
            f"per tick (after {args.warm} s of warm-up)"
        )
    if profiled is not None:
        profile = cProfile.Profile()
        assert snaps is not None
        for snap in snaps:
            profiled.append(snap)
            profile.enable()
            profiled.evaluate()
            profile.disable()
        stats = pstats.Stats(profile)
        calls = sum(row[1] for row in stats.stats.values())  # type: ignore[attr-defined]
        print(f"  Python calls: {calls / len(snaps):.0f} per tick")
    if by_rule is not None:
        assert snaps is not None
        _print_rule_costs(by_rule, snaps)
    if by_step is not None:
        assert snaps is not None
        _print_step_costs(by_step, snaps)
    return 0


def _print_step_costs(diagnoser: Diagnoser, snaps: list[Snapshot]) -> None:
    """Feed ``snaps`` with input-starved's costliest steps each timed apart (CPU time,
    inflated by the timing itself); print them. The steps are put back afterwards."""
    from gputop_hints.hints.rules import input_starved

    spent: dict[str, float] = {}
    names = ("gaps_seen_by", "own_burst_ruled_out", "_finding", "_loading", "link_thrashing")
    originals = {name: getattr(input_starved, name) for name in names}
    process_gaps = Window.process_gaps

    def timed(name: str, step: Callable[..., object]) -> Callable[..., object]:
        def run(*args: object, **kwargs: object) -> object:
            started = time.process_time()
            try:
                return step(*args, **kwargs)
            finally:
                spent[name] = spent.get(name, 0.0) + time.process_time() - started

        return run

    for name, step in originals.items():
        setattr(input_starved, name, timed(name, step))
    Window.process_gaps = timed("Window.process_gaps", process_gaps)  # type: ignore[method-assign,assignment]
    total = 0.0
    try:
        for snap in snaps:
            diagnoser.append(snap)
            started = time.process_time()
            diagnoser.evaluate()
            total += time.process_time() - started
    finally:
        for name, step in originals.items():
            setattr(input_starved, name, step)
        Window.process_gaps = process_gaps  # type: ignore[method-assign]
    n = len(snaps)
    print(f"  input-starved's steps (CPU ms a tick, mean, timed apart): all {total / n * 1000:.2f}")
    for name, seconds in sorted(spent.items(), key=lambda item: -item[1]):
        print(f"    {name:<24} {seconds / n * 1000:.2f}")


def _print_rule_costs(diagnoser: Diagnoser, snaps: list[Snapshot]) -> None:
    """Feed ``snaps`` with each rule's check timed apart (CPU time); print the costliest."""
    spent: dict[str, float] = {}

    def timed(spec_id: str, check: Rule) -> Rule:
        def run(win: Window, t: Thresholds) -> list[Finding]:
            started = time.process_time()
            try:
                return check(win, t)
            finally:
                spent[spec_id] = spent.get(spec_id, 0.0) + time.process_time() - started

        return run

    engine = diagnoser.engine
    engine.rules = [dataclasses.replace(s, check=timed(s.id, s.check)) for s in engine.rules]
    total = 0.0
    for snap in snaps:
        diagnoser.append(snap)
        started = time.process_time()
        diagnoser.evaluate()
        total += time.process_time() - started
    n = len(snaps)
    ranked = sorted(spent.items(), key=lambda item: -item[1])
    rules = sum(spent.values())
    print(
        f"  by rule (CPU ms a tick, mean): all {total / n * 1000:.2f}, "
        f"rules {rules / n * 1000:.2f}, outside the rules {(total - rules) / n * 1000:.2f}"
    )
    for spec_id, seconds in ranked[:6]:
        print(f"    {spec_id:<24} {seconds / n * 1000:.2f}")
    rest = sum(seconds for _, seconds in ranked[6:])
    print(f"    {'the other ' + str(len(ranked) - 6) + ' rules':<24} {rest / n * 1000:.2f}")


def _finding_text(f: Finding) -> str:
    evidence = ";".join(
        f"{e.metric}|{e.value!r}|{e.threshold}|{e.unit}|{e.scope.value}|{e.met}" for e in f.evidence
    )
    return (
        f"{f.rule}|{f.subtype}|{f.subject}|{f.subject.gpu_index}|{f.severity.label}|{f.label}|"
        f"{f.summary}|{f.started_at!r}|{evidence}"
    )


def _digest(ticks: Iterator[Snapshot], count: int) -> str:
    """A sha256 of every tick's raw findings (each rule's, in rule order) and visible ones."""
    diagnoser = Diagnoser(Thresholds.defaults(), interval_s=1.0)
    raw: list[Finding] = []

    def recorded(check: Rule) -> Rule:
        def run(win: Window, t: Thresholds) -> list[Finding]:
            found = check(win, t)
            raw.extend(found)
            return found

        return run

    engine = diagnoser.engine
    engine.rules = [dataclasses.replace(s, check=recorded(s.check)) for s in engine.rules]
    digest = hashlib.sha256()
    for i in range(count):
        raw.clear()
        visible = diagnoser.feed(next(ticks))
        digest.update(f"tick {i}\n".encode())
        for f in raw:
            digest.update(("raw " + _finding_text(f) + "\n").encode())
        for f in visible:
            digest.update(("visible " + _finding_text(f) + "\n").encode())
    return digest.hexdigest()[:16]


def _print_digests() -> None:
    print(f"  {'waves 8x64 (400 ticks)':<40}{_digest(waves(8, 64), 400)}")
    mixed = DemoSource("mixed", gpus=8, processes=64)
    print(f"  {'demo mixed 8x64 (300)':<40}{_digest(iter(mixed.sample, None), 300)}")
    for name in SCENARIOS:
        source = DemoSource(name, gpus=2, processes=5)
        print(f"  demo {name} 2x5 (240)".ljust(42) + f"{_digest(iter(source.sample, None), 240)}")


if __name__ == "__main__":
    sys.exit(main())
