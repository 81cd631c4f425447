"""Run the fault matrix (tests/faults/) and print what was tried and what happened.

Each test in tests/faults/ injects one fault -- an NVML error at start-up or
mid-run, a crafted or special file, a signal, a key flood, a lost terminal --
and asserts what the user must see. Its docstring's first line says both; this
script prints that line beside the outcome, and a count of tracebacks seen in
any captured output (the goal is zero).

    .venv/bin/python bench/fault_matrix.py [-k EXPR]
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Row:
    area: str
    what: str
    outcome: str
    tracebacks: int


class Collector:
    """A pytest plugin that keeps one row per test."""

    def __init__(self) -> None:
        self.rows: list[Row] = []
        self._docs: dict[str, str] = {}

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            doc = getattr(getattr(item, "function", None), "__doc__", None) or item.name
            self._docs[item.nodeid] = doc.strip().splitlines()[0]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" and not (report.when == "setup" and not report.passed):
            return
        # Only the captured output counts: a failing assertion's own report is a
        # traceback of the test, not of the program.
        tracebacks = sum(
            text.count("Traceback (most recent call last)") for _, text in report.sections
        )
        area = report.nodeid.split("::")[0].removeprefix("tests/faults/test_").removesuffix(".py")
        self.rows.append(
            Row(area, self._docs.get(report.nodeid, report.nodeid), report.outcome, tracebacks)
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-k", default=None, help="only tests matching this pytest expression")
    args = parser.parse_args(argv)
    collector = Collector()
    pytest_args = [str(ROOT / "tests" / "faults"), "-q", "-p", "no:cacheprovider", "--no-header"]
    if args.k:
        pytest_args += ["-k", args.k]
    code = pytest.main(pytest_args, plugins=[collector])
    rows = collector.rows
    if not rows:
        print("no fault tests ran")
        return 1
    width = max(len(r.area) for r in rows)
    print()
    print(f"{'area':<{width}}  {'outcome':<7}  {'tb':>2}  what was tried -> what the user sees")
    print(f"{'-' * width}  -------  --  {'-' * 60}")
    for r in sorted(rows, key=lambda r: (r.area, r.what)):
        print(f"{r.area:<{width}}  {r.outcome:<7}  {r.tracebacks:>2}  {r.what}")
    passed = sum(r.outcome == "passed" for r in rows)
    tracebacks = sum(r.tracebacks for r in rows)
    print(f"\n{passed} of {len(rows)} faults handled; tracebacks in captured output: {tracebacks}")
    return int(code)


if __name__ == "__main__":
    sys.exit(main())
