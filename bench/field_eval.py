"""How right are the hints on the field corpus? Per case, per rule, and overall.

Generates every case of ``bench/field`` (seeded, deterministic; see
docs/field_corpus.md), feeds each through the hints (a Diagnoser) with hysteresis
as the live monitor does, and prints three plain-text tables: each case's
expected verdict against the top finding (right or wrong, and why); per rule
precision, recall, median time to detect and flips; and accuracy overall and
per family with every warning on a healthy case. Also lists the real logs in
../shared/traces with their expected verdicts (bench/field/traces_expected.yaml).

Usage::

    python bench/field_eval.py [--family shared] [--case NAME-SUBSTRING] [--no-cases]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from field.cases import all_cases
from field.evaluate import evaluate, format_cases, format_rules, format_summary
from field.verdicts import load_trace_verdicts


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--family", action="append", help="only these families")
    parser.add_argument("--case", help="only cases whose name contains this")
    parser.add_argument("--no-cases", action="store_true", help="skip the per-case table")
    args = parser.parse_args()

    cases = [
        c
        for c in all_cases()
        if (not args.family or c.family in args.family) and (not args.case or args.case in c.name)
    ]
    if not cases:
        print("no case matches", file=sys.stderr)
        return 2
    started = time.perf_counter()
    result = evaluate(cases)
    elapsed = time.perf_counter() - started
    ticks = sum(c.ticks for c in result.cases)
    print(f"field corpus: {len(cases)} cases, {ticks} ticks, evaluated in {elapsed:.1f} s")
    print()
    if not args.no_cases:
        print(format_cases(result))
        print()
    print(format_rules(result))
    print()
    print(format_summary(result))
    print()
    verdicts = load_trace_verdicts()
    print(f"real logs with expected verdicts ({len(verdicts)}; scored once they can be read):")
    for name, v in sorted(verdicts.items()):
        print(f"  {name:<36} {v.describe()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
