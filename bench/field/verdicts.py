"""Expected verdicts: what a correct monitor says about a case, and what it must not say.

A verdict is written from the situation, not from what the rules do today:

* ``top`` -- the finding that must come out on top (see ``evaluate.top_finding``),
  as ``rule[/subtype][@gpu:N[|M...]][@pid:P]``; a missing subtype, GPU or pid
  matches any. None when no particular finding is required.
* ``healthy`` -- no warning or critical may be visible at any time.
* ``must_show`` -- findings that must be visible at some time (a warm-up label
  beside a healthy top finding, an idle co-tenant beside a starved job).
* ``must_not`` -- findings that must never be visible, at any severity (with ``onset_s``: from
  that onset on, after a grace of a window; before it the same finding can be right).
* ``accept`` -- other top findings the evidence supports equally well.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from gputop_hints.hints.findings import Subject


@dataclass(frozen=True, slots=True)
class Expect:
    """A finding pattern: a rule, maybe a subtype, maybe on given GPUs or a given pid."""

    rule: str
    subtype: str | None = None
    gpus: tuple[int, ...] | None = None
    pid: int | None = None
    onset_s: float = 0.0
    """Seconds from the start of the case when the condition begins (for time to detect)."""

    @classmethod
    def parse(cls, text: str, onset_s: float = 0.0) -> Expect:
        """``input-starved/num-workers-0@gpu:0@pid:4100`` -> Expect."""
        head, *parts = text.strip().split("@")
        rule, _, subtype = head.partition("/")
        gpus: tuple[int, ...] | None = None
        pid: int | None = None
        for part in parts:
            key, _, value = part.partition(":")
            if key == "gpu":
                gpus = tuple(int(v) for v in value.split("|"))
            elif key == "pid":
                pid = int(value)
            else:
                raise ValueError(f"unknown subject {part!r} in {text!r}")
        return cls(rule, subtype or None, gpus, pid, onset_s)

    def matches(self, rule: str, subtype: str | None, subject: Subject) -> bool:
        if rule != self.rule:
            return False
        if self.subtype is not None and subtype != self.subtype:
            return False
        if self.gpus is not None and subject.gpu_index not in self.gpus:
            return False
        return self.pid is None or subject.pid == self.pid

    def __str__(self) -> str:
        text = self.rule + (f"/{self.subtype}" if self.subtype else "")
        if self.gpus is not None:
            text += "@gpu:" + "|".join(str(g) for g in self.gpus)
        if self.pid is not None:
            text += f"@pid:{self.pid}"
        return text


def expect(
    rule: str,
    gpu: int | Sequence[int] | None = None,
    pid: int | None = None,
    onset_s: float = 0.0,
) -> Expect:
    """Shorthand: ``expect("input-starved/num-workers-0", gpu=0, pid=4100)``."""
    name, _, subtype = rule.partition("/")
    gpus = None if gpu is None else ((gpu,) if isinstance(gpu, int) else tuple(gpu))
    return Expect(name, subtype or None, gpus, pid, onset_s)


@dataclass(frozen=True, slots=True)
class Verdict:
    """What must (and must not) come out of the hints for one case."""

    top: Expect | None
    healthy: bool = False
    must_show: tuple[Expect, ...] = ()
    must_not: tuple[Expect, ...] = ()
    accept: tuple[Expect, ...] = ()
    why: str = ""

    @property
    def expected(self) -> tuple[Expect, ...]:
        """Every finding the case requires: the top one and the must-shows."""
        return ((self.top,) if self.top is not None else ()) + self.must_show

    def describe(self) -> str:
        if self.top is not None:
            return str(self.top)
        return "healthy" if self.healthy else "(none required)"


def _verdict_from_mapping(data: Mapping[str, Any]) -> Verdict:
    top = data.get("top")
    return Verdict(
        top=Expect.parse(top) if top else None,
        healthy=bool(data.get("healthy", False)),
        must_show=tuple(Expect.parse(t) for t in data.get("must_show", ())),
        must_not=tuple(Expect.parse(t) for t in data.get("must_not", ())),
        accept=tuple(Expect.parse(t) for t in data.get("accept", ())),
        why=str(data.get("why", "")),
    )


TRACES_EXPECTED = Path(__file__).with_name("traces_expected.yaml")


def load_trace_verdicts(path: Path = TRACES_EXPECTED) -> dict[str, Verdict]:
    """File name (in ../shared/traces) -> its expected verdict."""
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    return {name: _verdict_from_mapping(entry) for name, entry in data["traces"].items()}
