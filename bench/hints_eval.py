"""How good are the hints? Precision, recall, time-to-detect and flicker: demo and field corpora.

Runs every demo scenario for every seed in a range through the hint engine on
simulated time (no sleeping) and prints, per rule: true/false positives and
misses, precision, recall, median and worst time from a condition's onset to
its first detection, and visibility flips per 10 minutes once the input is
steady. Then the targets: every expected finding within 10 s of onset at 1 Hz,
no warning on the healthy scenario, at most one flip per 10 minutes.

Then the same per-rule table for the field corpus (bench/field, docs/field_corpus.md:
recordings of situations the demo never simulated), its accuracy per family and
every warning on a healthy case -- separately, since the field corpus is the one
that says whether the hints generalise.

Usage::

    python bench/hints_eval.py [--seeds 0-4] [--duration 600] [--interval 1] [--no-field]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from demo_eval import evaluate, format_table, run_corpus, run_scenario

from gputop_hints.sources.demo import list_scenarios


def _seeds(text: str) -> list[int]:
    if "-" in text:
        low, high = text.split("-", 1)
        return list(range(int(low), int(high) + 1))
    return [int(s) for s in text.split(",")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=_seeds, default=_seeds("0-4"))
    parser.add_argument("--duration", type=float, default=600.0, help="simulated seconds")
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--scenario", action="append", help="only these scenarios")
    parser.add_argument("--verbose", action="store_true", help="list every miss and false alarm")
    parser.add_argument("--no-field", action="store_true", help="skip the field corpus")
    parser.add_argument(
        "--big",
        action="store_true",
        help="also run 'mixed' on 8 GPUs x 64 processes (shared GPUs: inference replicas "
        "beside training jobs) and print its table separately",
    )
    args = parser.parse_args()

    names = args.scenario or [s.name for s in list_scenarios()]
    started = time.perf_counter()
    ev = run_corpus(names, args.seeds, args.duration, args.interval)
    elapsed = time.perf_counter() - started

    ticks = sum(len(r.engine_cost_s) for r in ev.runs)
    costs = [c for r in ev.runs for c in r.engine_cost_s]
    print(
        f"{len(names)} scenarios x seeds {args.seeds[0]}-{args.seeds[-1]}, "
        f"{args.duration:g} s simulated at {1 / args.interval:g} Hz: "
        f"{ticks} ticks in {elapsed:.1f} s"
    )
    print(
        f"engine cost per tick: median {statistics.median(costs) * 1e3:.2f} ms, "
        f"p99 {sorted(costs)[int(len(costs) * 0.99)] * 1e3:.2f} ms"
    )
    print()
    print(format_table(ev))
    print()
    worst = max((s.worst_detect_s or 0.0) for s in ev.scores.values())
    healthy = ev.warnings_on("healthy")
    flips = max((s.flips_per_10_min or 0.0) for s in ev.scores.values())
    recall_ok = all((s.recall or 1.0) == 1.0 for s in ev.scores.values())
    checks = [
        ("every expected finding detected", recall_ok),
        (f"worst time-to-detect {worst:.0f} s <= 10 s", worst <= 10),
        (f"warnings on healthy: {len(healthy)}", not healthy),
        (f"max flips per 10 min {flips:.2f} <= 1", flips <= 1),
    ]
    for text, ok in checks:
        print(f"  [{'met' if ok else 'NOT MET'}] {text}")
    if args.verbose or not all(ok for _, ok in checks):
        for line in [*ev.misses, *ev.false_alarms]:
            print("   ", line)
    if args.big:
        big = evaluate(
            run_scenario("mixed", seed, args.duration, args.interval, gpus=8, processes=64)
            for seed in args.seeds
        )
        print()
        print("mixed, 8 GPUs x 64 processes (not part of the targets above):")
        print(format_table(big))
        for line in [*big.misses, *big.false_alarms]:
            print("   ", line)
    if not args.no_field:
        print()
        _field()
    # A bench prints numbers and says which targets are met; tests decide pass/fail.
    return 0


def _field() -> None:
    """The field corpus: per rule precision, recall, time to detect and flips; accuracy."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from field.cases import all_cases
    from field.evaluate import evaluate as evaluate_field
    from field.evaluate import format_rules, format_summary

    started = time.perf_counter()
    result = evaluate_field(all_cases())
    print(f"field corpus: {len(result.cases)} cases in {time.perf_counter() - started:.1f} s")
    print()
    print(format_rules(result))
    print()
    print(format_summary(result))


if __name__ == "__main__":
    sys.exit(main())
