"""docs/grafana/gputop-hints-job.json: a dashboard Grafana imports, whose every query
returns series from a real Prometheus.

The Prometheus is the one tests/outputs/test_job_report_prometheus.py starts (its
module fixture, bound here: this module gets a server of its own): three
``gputop-hints export --demo`` nodes of job 4242 with different ``--label-host``,
node-c starving on ``num_workers=0``. Each panel's PromQL runs as Grafana would send it,
its template variables replaced the way Grafana replaces them (a multi-value ``$host``
as the regex ``(a|b|c)``), and each variable's ``label_values`` query runs against the
label values API. Locally it skips without the ``prometheus`` binary; in CI that fails.
"""

from __future__ import annotations

import json
import re
import time
import urllib.parse
import urllib.request
from typing import Any

from tests.outputs import test_job_report_prometheus as cluster
from tests.support.paths import REPO

DASHBOARD = REPO / "docs" / "grafana" / "gputop-hints-job.json"
JOB = cluster.JOB
HOSTS = tuple(cluster.NODES)
VARIABLES = {
    "slurm_job": JOB,
    "host": "(" + "|".join(HOSTS) + ")",  # a multi-value variable inside =~, as Grafana writes it
    "__range": "5m",
    "__rate_interval": "1m",
    "__interval": "15s",
}
WAIT_S = cluster.WAIT_S
"""Longest wait for a query's series: a counter's increase needs two scrapes after the
finding raised it."""

prometheus = cluster.prometheus


def _dashboard() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(DASHBOARD.read_text())
    return doc


def _panels(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """Every panel, those inside collapsed rows too."""
    out = []
    for panel in doc["panels"]:
        out.append(panel)
        out.extend(panel.get("panels", []))
    return out


def _queries(doc: dict[str, Any]) -> list[tuple[str, str]]:
    """(panel title and refId, expr) of every target of every panel."""
    return [
        (f"{panel['title']} {target['refId']}", target["expr"])
        for panel in _panels(doc)
        for target in panel.get("targets", [])
    ]


def _substitute(text: str) -> str:
    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        assert name in VARIABLES, f"the test does not know ${name}: {text}"
        return VARIABLES[name]

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", one, text)


def _get(url: str) -> dict[str, Any]:
    with urllib.request.urlopen(url, timeout=10) as response:
        data: dict[str, Any] = json.loads(response.read())
    assert data["status"] == "success", data
    return data


def _instant(prometheus: str, query: str) -> list[dict[str, Any]]:
    url = f"{prometheus}/api/v1/query?" + urllib.parse.urlencode({"query": query})
    result: list[dict[str, Any]] = _get(url)["data"]["result"]
    return result


def _poll(prometheus: str, query: str, done: Any = bool) -> list[dict[str, Any]]:
    """The query's result once ``done(result)`` holds, or the last one after WAIT_S."""
    end = time.monotonic() + WAIT_S
    while True:
        result = _instant(prometheus, query)
        if done(result) or time.monotonic() > end:
            return result
        time.sleep(0.5)


def test_the_dashboard_is_one_grafana_imports() -> None:
    doc = _dashboard()
    assert doc["title"] and doc["uid"] == "gputop-hints-job"
    assert 36 <= doc["schemaVersion"] <= 41
    assert doc.get("id") is None  # no id of the Grafana it was made in
    variables = {v["name"]: v for v in doc["templating"]["list"]}
    assert variables["datasource"]["type"] == "datasource"
    assert variables["datasource"]["query"] == "prometheus"
    assert variables["host"]["multi"] and variables["host"]["includeAll"]
    panels = _panels(doc)
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)), ids
    cells: set[tuple[int, int]] = set()
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["w"] > 0 and grid["h"] > 0 and grid["x"] >= 0 and grid["x"] + grid["w"] <= 24
        area = {(x, y) for x in range(grid["x"], grid["x"] + grid["w"])
                for y in range(grid["y"], grid["y"] + grid["h"])}  # fmt: skip
        assert not area & cells, f"{panel['title']} overlaps another panel"
        cells |= area
        if panel["type"] == "row":
            continue
        assert panel["targets"], panel["title"]
        refs = [t["refId"] for t in panel["targets"]]
        assert len(refs) == len(set(refs)), panel["title"]
        for source in (panel, *panel["targets"]):
            assert source["datasource"] == {"type": "prometheus", "uid": "${datasource}"}
        for target in panel["targets"]:
            # Every query is one job's and the chosen nodes'.
            assert 'slurm_job="$slurm_job"' in target["expr"], target["expr"]
            assert 'host=~"$host"' in target["expr"], target["expr"]
    for variable in ("slurm_job", "host"):
        assert variables[variable]["datasource"]["uid"] == "${datasource}"
    titles = " / ".join(p["title"] for p in panels)
    for asked in ("GPU utilization, node × GPU", "Findings over time", "GPU-hours lost by cause"):
        assert asked in titles, titles


def test_the_template_variables_list_the_job_and_its_nodes(prometheus: str) -> None:
    """label_values(METRIC{...}, LABEL) as Grafana asks it: the label values API with
    the metric as the match[] selector."""
    variables = {v["name"]: v for v in _dashboard()["templating"]["list"]}
    values = {}
    for name in ("slurm_job", "host"):
        query = _substitute(variables[name]["query"]["query"])
        assert variables[name]["definition"] == variables[name]["query"]["query"]
        match = re.fullmatch(r"label_values\((.+),\s*(\w+)\)", query)
        assert match, query
        selector, label = match.groups()
        url = f"{prometheus}/api/v1/label/{label}/values?" + urllib.parse.urlencode(
            {"match[]": selector}
        )
        values[name] = set(_get(url)["data"])
    assert JOB in values["slurm_job"]
    assert values["host"] == set(HOSTS)


def test_every_panel_query_returns_series(prometheus: str) -> None:
    queries = _queries(_dashboard())
    assert len(queries) >= 15, queries
    for where, expr in queries:
        query = _substitute(expr)
        result = _poll(prometheus, query)
        assert result, f"no series: {where}: {query}"
        for series in result:
            # Nothing of another job (or none of the job's labels dropped by mistake).
            assert series["metric"].get("slurm_job", JOB) == JOB, (where, series)


def test_the_panels_show_what_holds_the_job_back(prometheus: str) -> None:
    """node-c's starved input pipeline: the active-findings table and the timeline name
    it on node-c's GPUs only, and the GPU-hours lost name its cause."""
    panels = {p["title"]: p for p in _panels(_dashboard())}

    def expr(title: str, ref: str = "A") -> str:
        [target] = [t for t in panels[title]["targets"] if t["refId"] == ref]
        return _substitute(target["expr"])

    table = _poll(prometheus, expr("Active findings"))
    assert {(r["metric"]["host"], r["metric"]["rule"]) for r in table} == {
        ("node-c", "input-starved")
    }, table
    held = _poll(prometheus, expr("Active findings", "B"))
    assert len(held) == len(table) and all(float(r["value"][1]) >= 0 for r in held), held
    timeline = _poll(prometheus, expr("Findings over time"))
    starved = {(r["metric"]["host"], r["metric"]["gpu"]) for r in timeline
               if r["metric"]["rule"] == "input-starved"}  # fmt: skip
    assert starved == {("node-c", "0"), ("node-c", "1")}, timeline

    def lost(result: list[dict[str, Any]]) -> bool:
        return any(float(r["value"][1]) > 0 for r in result)

    by_cause = _poll(prometheus, expr("GPU-hours lost by cause"), lost)
    causes = {r["metric"]["rule"]: float(r["value"][1]) for r in by_cause}
    assert causes.get("input-starved", 0) > 0, causes
    # At most two GPUs lost time, for at most the range asked (5 minutes).
    assert sum(causes.values()) <= 2 * 5 / 60, causes
    by_node = _poll(prometheus, expr("GPUs lost, by node and cause"), lost)
    assert {r["metric"]["host"] for r in by_node if float(r["value"][1]) > 0} == {"node-c"}
