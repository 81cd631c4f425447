"""The lab: each scenario run under the real monitor, its advice applied, run again.

    python bench/lab.py [SCENARIO ...]

For each scenario (bench/pipelab/scenarios.py) the training program runs for its
duration under the monitor (real processes, CPU work and disk reads; a simulated GPU at
the NVML boundary); the monitor's verdict on the trainer's pid is the worst finding at
the last tick of the run. When that verdict's advice names a knob the lab has
(``apply_advice``: num_workers, batch size, the augmentation's cost), the program runs
again with it changed, and the table says whether utilization rose and the hint
cleared. Near the end of the first run the trainer's Python stacks are read with py-spy
(``gputop_hints.stacks``): "where it waits" is the main thread's dominant category and its
share (for a host-device sync, the line). See docs/lab.md.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pipelab.monitor import Lab, Run, verdict
from pipelab.scenarios import BY_NAME, SCENARIOS, Scenario, apply_advice, apply_host_advice
from pipelab.trainer import Config

from gputop_hints.hints.findings import Finding, Severity
from gputop_hints.stacks import StackReading


@dataclass
class Loop:
    """One scenario's closed loop."""

    scenario: Scenario
    before: Run
    verdict: Finding | None
    step: str | None = None
    after: Run | None = None

    @property
    def label(self) -> str:
        return self.verdict.rule_label if self.verdict else "-"

    @property
    def cleared(self) -> bool | None:
        """Whether the verdict's rule is gone in the after run (None: nothing applied)."""
        if self.verdict is None or self.after is None:
            return None
        return all(f.rule != self.verdict.rule for f in self.after.steady)


def actionable(findings: tuple[Finding, ...]) -> Finding | None:
    """The verdict: the worst finding, counting only warnings and worse as a hint."""
    worst = verdict(findings)
    return worst if worst is not None and worst.severity >= Severity.WARNING else None


def run_loop(lab: Lab, scenario: Scenario, duration_s: float | None = None) -> Loop:
    config = lab.config(**scenario.settings)
    if duration_s is not None:
        config = replace(config, duration_s=duration_s)
    hogs, job = scenario.hogs, scenario.job

    def tenant() -> Config | None:
        if scenario.tenant is None:
            return None
        other = lab.config(**scenario.tenant)
        return other if duration_s is None else replace(other, duration_s=duration_s)

    # The real command line watches the first run too: gputop-hints --once --json.
    before = lab.run(config, hogs=hogs, job=job, tenant=tenant(), cli=True, stacks=True)
    loop = Loop(scenario, before, actionable(before.steady))
    if loop.verdict is None:
        return loop
    if host := apply_host_advice(loop.verdict, hogs):
        hogs, loop.step = host
        changed = config
    elif applied := apply_advice(config, loop.verdict):
        changed, loop.step = applied
    else:
        return loop
    loop.after = lab.run(
        replace(changed, board=lab.config().board), hogs=hogs, job=job, tenant=tenant()
    )
    return loop


def where_it_waits(reading: StackReading | None) -> str:
    """The main thread's dominant category and its share, e.g. ``loading-in-main 83 %``;
    for a host-device sync with its file:line; why nothing, when nothing was read."""
    if reading is None:
        return "-"
    if not reading.categories:
        return f"- ({reading.reason or 'no samples'})"
    top = reading.categories[0]
    text = f"{top.name} {top.share * 100:.0f} %"
    if top.name == "host-device-sync" and top.top_frames:
        frame = top.top_frames[0].frame
        text += f" ({Path(frame.file).name}:{frame.line})"
    return text


def foreign_text(loop: Loop) -> str:
    """The job's cores used from outside it (mean of the ticks), for runs as a job."""
    runs = [r for r in (loop.before, loop.after) if r is not None and r.foreign]
    if not runs:
        return ""
    means = "/".join(f"{sum(r.foreign) / len(r.foreign):.0f} %" for r in runs)
    return f"; job's cores used from outside it (mean): {means}"


def tenant_row(lp: Loop) -> tuple[str, ...]:
    """The second program on the GPU: its own verdict and utilization, before and after
    the first program's advice was applied (nothing is applied to it)."""
    before = lp.before.tenant
    after = lp.after.tenant if lp.after else None
    assert before is not None
    worst = actionable(before.steady)
    advice = worst.advice[0] if worst else "-"
    late = actionable(after.steady) if after else None
    return (
        "  + other tenant",
        worst.rule_label if worst else "-",
        before.cli_verdict() or "-",
        advice if len(advice) <= 48 else advice[:47] + "...",
        f"{before.utilization():.0f} %",
        "-",
        f"{after.utilization():.0f} %" if after else "-",
        f"(after: {late.rule_label})" if late else ("(after: -)" if after else "-"),
        "-",
        "",
    )


def table(loops: list[Loop]) -> str:
    head = (
        "scenario", "verdict", "--once --json", "advice", "util", "applied", "util after",
        "cleared", "where it waits", "host busy",
    )  # fmt: skip
    rows: list[tuple[str, ...]] = [head]
    for lp in loops:
        advice = lp.verdict.advice[0] if lp.verdict else "-"
        rows.append(
            (
                lp.scenario.name,
                lp.label,
                lp.before.cli_verdict() or "-",
                advice if len(advice) <= 48 else advice[:47] + "...",
                f"{lp.before.utilization():.0f} %",
                lp.step or "-",
                f"{lp.after.utilization():.0f} %" if lp.after else "-",
                {None: "-", True: "yes", False: "NO"}[lp.cleared],
                where_it_waits(lp.before.stacks),
                "/".join(
                    f"{r.host_busy_before:.0f} %" for r in (lp.before, lp.after) if r is not None
                ),
            )
        )
        if lp.before.tenant is not None:
            rows.append(tenant_row(lp))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows)


def main(argv: list[str]) -> int:
    usage = f"usage: lab.py [SCENARIO ...] (all when none)\nscenarios: {' '.join(BY_NAME)}"
    if argv in (["-h"], ["--help"]):
        print(usage)
        return 0
    if unknown := [n for n in argv if n not in BY_NAME]:
        print(f"lab.py: unknown scenario {' '.join(unknown)}\n{usage}", file=sys.stderr)
        return 2
    chosen = [BY_NAME[n] for n in argv] if argv else list(SCENARIOS)
    loops = []
    with Lab() as lab:
        print(
            f"augmentation rounds scaled x{lab.reps_scale:.2f} to this host's CPU",
            file=sys.stderr,
        )
        for scenario in chosen:
            loop = run_loop(lab, scenario)
            loops.append(loop)
            print(
                f"{scenario.name}: {scenario.what}; before {sorted(loop.before.raised())}"
                + (f"; after {sorted(loop.after.raised())}" if loop.after else "")
                + foreign_text(loop),
                file=sys.stderr,
            )
    print(table(loops))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
