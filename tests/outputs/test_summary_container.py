"""--once names the container, pod or job of each GPU process (issue 46 item 10): a
CONTAINER column after USER in the text, only when some process is in one, and
``container`` in each JSON process object. The demo's processes run in none; these
are the demo's with containers set as the live source reads them from cgroups."""

from __future__ import annotations

import dataclasses
import json

from gputop_hints.model import Snapshot
from gputop_hints.outputs.summary import Summary
from gputop_hints.sources.demo import DemoSource


def _snapshots(containers: dict[int, str]) -> list[Snapshot]:
    source = DemoSource("mixed", gpus=2, processes=4, seed=0)
    out = []
    for _ in range(3):
        snap = source.sample()
        procs = tuple(
            dataclasses.replace(p, container=containers.get(p.pid)) for p in snap.processes
        )
        out.append(dataclasses.replace(snap, processes=procs))
    source.close()
    return out


def _process_rows(text: str) -> tuple[str, dict[int, str]]:
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines) if line.split()[:2] == ["PID", "USER"])
    rows: dict[int, str] = {}
    for line in lines[at + 1 :]:
        if not line.strip():
            break
        rows[int(line.split()[0])] = line
    return lines[at], rows


def test_no_container_column_when_no_process_is_in_one() -> None:
    header, _ = _process_rows(Summary.of(_snapshots({})).to_text(width=140))
    assert "CONTAINER" not in header


def test_the_text_names_each_processs_container_after_its_user() -> None:
    pids = [p.pid for p in _snapshots({})[0].processes]
    pod = "pod research-vision/a-very-long-trainer-name-0"
    containers = {pids[0]: "slurm job 1234", pids[1]: pod}
    summary = Summary.of(_snapshots(containers))
    header, rows = _process_rows(summary.to_text(width=160))
    assert header.split()[:4] == ["PID", "USER", "CONTAINER", "GPU"]
    at = header.index("CONTAINER")
    assert rows[pids[0]][at:].startswith("slurm job 1234 ")
    assert rows[pids[1]][at : at + 33] == pod[:31] + "~ "  # cut at 32 cells
    assert rows[pids[2]][at : at + 32].strip() == ""
    # The GPU column lines up under its title in every row.
    gpu_at = header.index("GPU") + 2
    assert all(row[gpu_at].isdigit() for row in rows.values())

    body = json.loads(summary.to_json_text())
    by_pid = {p["pid"]: p for p in body["processes"]}
    assert by_pid[pids[0]]["container"] == "slurm job 1234"
    assert by_pid[pids[1]]["container"] == pod
    assert by_pid[pids[2]]["container"] is None


def test_control_characters_in_a_container_name_are_shown_not_sent() -> None:
    pid = _snapshots({})[0].processes[0].pid
    text = Summary.of(_snapshots({pid: "lxc \x1b]0;owned\x07"})).to_text(width=160)
    assert "\x1b" not in text and "lxc ^[]0;owned^G" in text
