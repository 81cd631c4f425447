"""Score ``gputop-hints report`` on real logs with a documented verdict.

The yardstick is ``../shared/traces/verdicts/expected.tsv`` (its README gives each
log's provenance and the evidence for its verdict, from outside the log). Each row
names the extra arguments a user would pass, a regular expression some finding's
``rule`` or ``rule/subtype`` must match, and one that no finding at warning or worse
may match. Each log is reported exactly as a user runs it (``gputop-hints report FILE
ARGS --json`` in a child process), so the readers, the engine and the report are all
under test.

    python bench/real_eval.py            # the table and the total
    python bench/real_eval.py --json     # one JSON document (what tests/hints pins)

Without ``../shared`` beside the checkout it says so and exits 0.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import shlex
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VERDICTS = REPO.parent / "shared" / "traces" / "verdicts"
EXPECTED = VERDICTS / "expected.tsv"
SEVERE = ("warning", "critical")


@dataclass
class Row:
    """One row of expected.tsv and what the report made of it."""

    file: str
    args: list[str]
    want: str
    forbid: str
    found: list[str] = field(default_factory=list)
    severe: list[str] = field(default_factory=list)
    met_want: bool = False
    forbidden: list[str] = field(default_factory=list)
    error: str = ""
    seconds: float = 0.0

    @property
    def met(self) -> bool:
        return not self.error and self.met_want and not self.forbidden


def load_rows(path: Path = EXPECTED) -> list[Row]:
    rows: list[Row] = []
    with path.open(newline="") as fh:
        for record in csv.reader(fh, delimiter="\t"):
            if not record or record[0].startswith("#"):
                continue
            record += [""] * (4 - len(record))
            rows.append(Row(record[0], shlex.split(record[1]), record[2], record[3]))
    return rows


def _ids(finding: dict[str, object]) -> list[str]:
    rule = str(finding.get("rule", ""))
    subtype = finding.get("subtype")
    return [rule, f"{rule}/{subtype}"] if subtype else [rule]


def score(row: Row, timeout_s: float = 300.0) -> Row:
    command = [sys.executable, "-m", "gputop_hints", "report", str(VERDICTS / row.file)]
    command += [*row.args, "--json"]
    started = time.perf_counter()
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=timeout_s, cwd=REPO, check=False
        )
    except subprocess.TimeoutExpired:
        row.error = f"no report in {timeout_s:.0f} s"
        return row
    row.seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        row.error = (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        return row
    document = json.loads(done.stdout)
    # Each GPU's verdict is a conclusion of the report too, judged like a finding.
    verdicts = [
        {"rule": "verdict", "subtype": v["verdict"], "severity": v["severity"]}
        for v in document.get("verdicts", [])
    ]
    findings = document.get("findings", []) + verdicts
    row.found = sorted({"/".join(filter(None, [f["rule"], f.get("subtype")])) for f in findings})
    severe = [f for f in findings if f.get("worst_severity", f.get("severity")) in SEVERE]
    row.severe = sorted({"/".join(filter(None, [f["rule"], f.get("subtype")])) for f in severe})
    if row.want:
        want = re.compile(row.want)
        row.met_want = any(want.search(i) for f in findings for i in _ids(f))
    else:
        row.met_want = True
    if row.forbid:
        forbid = re.compile(row.forbid)
        row.forbidden = sorted({i for f in severe for i in _ids(f) if forbid.search(i)})
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="one JSON document")
    parser.add_argument("only", nargs="*", help="score only these files")
    args = parser.parse_args(argv)
    if not EXPECTED.exists():
        print(f"skipped: {EXPECTED} is not beside this checkout")
        return 0
    rows = [r for r in load_rows() if not args.only or r.file in args.only]
    for row in rows:
        score(row)
    met = sum(r.met for r in rows)
    if args.json:
        out = [asdict(r) | {"met": r.met} for r in rows]
        print(json.dumps({"met": met, "rows": len(rows), "results": out}, indent=1))
        return 0
    for row in rows:
        mark = "PASS" if row.met else "FAIL"
        print(f"{mark}  {row.file}  ({row.seconds:.1f} s)")
        print(f"      want   /{row.want}/" if row.want else "      want   (nothing required)")
        print(f"      forbid /{row.forbid}/ at warning+" if row.forbid else "      forbid (none)")
        print(f"      found  {', '.join(row.found) or '(no findings)'}")
        if row.severe:
            print(f"      warn+  {', '.join(row.severe)}")
        if row.error:
            print(f"      error  {row.error}")
        elif not row.met_want:
            print("      MISSING the wanted finding")
        if row.forbidden:
            print(f"      FORBIDDEN at warning+: {', '.join(row.forbidden)}")
    print(f"\n{met} of {len(rows)} rows met")
    return 0


if __name__ == "__main__":
    sys.exit(main())
