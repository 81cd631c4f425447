"""``gputop-hints report --prometheus URL --job ID`` against a real Prometheus.

Three ``gputop-hints export --demo`` processes are three nodes of one job
(``--label-host``, ``--label-job``): two train healthily, the third starves on
``num_workers=0``. A real Prometheus (Debian's package; ``.ci/run`` installs it)
scrapes them every second from a temporary config and data directory. The report
then reads the job back over Prometheus's HTTP API, as a user on a login node
would. Locally the tests skip without the ``prometheus`` binary; in CI that fails.
"""

from __future__ import annotations

import base64
import http.server
import json
import os
import selectors
import shutil
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import ClassVar

import pytest

from gputop_hints.hints.thresholds import Thresholds
from gputop_hints.outputs.job_report import JobSection, NodeRow, job_section_text, uneven_nodes
from tests.support.ci import IN_CI
from tests.support.cli import reap, run_cli
from tests.support.paths import REPO

JOB = "4242"
NODES = {"node-a": "healthy", "node-b": "healthy", "node-c": "starved-loader"}
DCGM_NODE = "dgx-7"
"""A fourth node of the job that runs NVIDIA's dcgm-exporter instead of ours: its page
is served as dcgm-exporter writes it (names, labels and units from its docs: FB in
MiB, PROF ratios 0-1, the HPC job mapping's ``hpc_job`` label), scraped by the same
real Prometheus."""
DCGM_PAGE = "".join(
    f'{name}{{gpu="0",UUID="GPU-5f1c0e6a",device="nvidia0",modelName="NVIDIA H100 80GB HBM3",'
    f'Hostname="{DCGM_NODE}",hpc_job="4242"}} {value}\n'
    for name, value in (
        ("DCGM_FI_DEV_GPU_UTIL", 93),
        ("DCGM_FI_DEV_MEM_COPY_UTIL", 41),
        ("DCGM_FI_DEV_FB_USED", 62000),
        ("DCGM_FI_DEV_FB_FREE", 19000),
        ("DCGM_FI_DEV_FB_RESERVED", 559),
        ("DCGM_FI_DEV_POWER_USAGE", 552.5),
        ("DCGM_FI_DEV_ENFORCED_POWER_LIMIT", 700),
        ("DCGM_FI_DEV_GPU_TEMP", 61),
        ("DCGM_FI_PROF_SM_ACTIVE", 0.82),
    )
)
GPUS = 2 * len(NODES) + 1
NVITOP_NODE = "nv-1"
"""A node running nvitop-exporter (1.7.2's names: prometheus_client appends each
gauge's unit; labels hostname, index, devicename, uuid; no job label), read only when
the job's nodes are named."""
NVITOP_PAGE = "".join(
    f'{name}{{hostname="{NVITOP_NODE}",index="0",devicename="NVIDIA A100-SXM4-80GB",'
    f'uuid="GPU-77aa"}} {value}\n'
    for name, value in (
        ("gpu_utilization_Percentage", 12),
        ("gpu_memory_utilization_Percentage", 3),
        ("gpu_memory_used_MiB", 30000),
        ("gpu_memory_total_MiB", 81920),
        ("gpu_power_usage_W", 95.0),
        ("gpu_power_limit_W", 400.0),
        ("gpu_temperature_C", 40),
    )
)


QUIET_JOB = "4343"
"""A second job on two dcgm-exporter nodes: q-1 answers every scrape, q-2 only its
first :data:`QUIET_AFTER` (then HTTP 503, as a node that went down)."""
QUIET_AFTER = 3


def _quiet_page(node: str) -> str:
    return "".join(
        f'{name}{{gpu="0",UUID="GPU-{node}",Hostname="{node}",hpc_job="{QUIET_JOB}"}} {value}\n'
        for name, value in (("DCGM_FI_DEV_GPU_UTIL", 95), ("DCGM_FI_DEV_FB_USED", 1000))
    )


class _DcgmPage(http.server.BaseHTTPRequestHandler):
    page = DCGM_PAGE
    answers: ClassVar[int | None] = None
    """Scrapes it answers (None: all of them)."""

    def do_GET(self) -> None:
        if self.answers is not None:
            if self.answers <= 0:
                self.send_error(503)
                return
            type(self).answers = self.answers - 1
        body = self.page.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


WAIT_S = 90.0
"""Longest wait for a process to start or for Prometheus to hold enough samples."""
SAMPLES = 12
"""Scrapes of every node Prometheus must hold before the report is read."""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    for name in list(env):
        if name.startswith("GPUTOP_HINTS_"):
            del env[name]
    env["PYTHONPATH"] = os.pathsep.join(filter(None, (str(REPO), env.get("PYTHONPATH"))))
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _serving_port(proc: subprocess.Popen[str]) -> int:
    """The port an exporter started with --port 0 prints on stderr."""
    assert proc.stderr is not None
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stderr, selectors.EVENT_READ)
        if not sel.select(WAIT_S):
            raise AssertionError("the exporter printed nothing")
        line = proc.stderr.readline()
    assert "serving http://127.0.0.1:" in line, line
    return int(line.split("127.0.0.1:", 1)[1].split("/", 1)[0])


def _get(url: str) -> dict[str, object]:
    with urllib.request.urlopen(url, timeout=10) as response:
        data: dict[str, object] = json.loads(response.read())
    return data


@pytest.fixture(scope="module")
def prometheus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Prometheus scraping three demo exporters of job 4242; its base URL."""
    binary = shutil.which("prometheus")
    if binary is None:
        if IN_CI:
            pytest.fail("prometheus is not installed (CI: .ci/run installs it)")
        pytest.skip("prometheus is not installed (apt-get install prometheus)")
    tmp = tmp_path_factory.mktemp("prometheus")
    procs: list[subprocess.Popen[str]] = []
    log = open(tmp / "prometheus.log", "w")  # noqa: SIM115 (closed at the end)
    # Each module that uses the fixture gets fresh nodes: q-2 answers its first scrapes
    # to this server too, q-3 until a test of this module stops it.
    _QuietGoes.answers, _QuietLater.answers = QUIET_AFTER, None
    dcgm = http.server.HTTPServer(("127.0.0.1", 0), _DcgmPage)
    threading.Thread(target=dcgm.serve_forever, daemon=True).start()
    nvitop = http.server.HTTPServer(("127.0.0.1", 0), _NvitopPage)
    threading.Thread(target=nvitop.serve_forever, daemon=True).start()
    quiet = [
        http.server.HTTPServer(("127.0.0.1", 0), page)
        for page in (_QuietAlways, _QuietGoes, _QuietLater)
    ]
    for page in quiet:
        threading.Thread(target=page.serve_forever, daemon=True).start()
    try:
        targets = []
        for node, scenario in NODES.items():
            proc = subprocess.Popen(
                [sys.executable, "-m", "gputop_hints", "export", "--demo", scenario,
                 "--gpus", "2", "--port", "0", "--label-host", node, "--label-job", JOB],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                text=True, env=_env(),
            )  # fmt: skip
            procs.append(proc)
            targets.append(f"'127.0.0.1:{_serving_port(proc)}'")
        targets.append(f"'127.0.0.1:{dcgm.server_port}'")
        targets.append(f"'127.0.0.1:{nvitop.server_port}'")
        targets.extend(f"'127.0.0.1:{page.server_port}'" for page in quiet)
        config = tmp / "prometheus.yml"
        config.write_text(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: gputop\n"
            f"    static_configs:\n      - targets: [{', '.join(targets)}]\n"
        )
        port = _free_port()
        server = subprocess.Popen(
            [binary, f"--config.file={config}", f"--storage.tsdb.path={tmp / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, text=True,
        )  # fmt: skip
        procs.append(server)
        url = f"http://127.0.0.1:{port}"
        query = "count_over_time(gputop_hints_gpu_utilization_percent[5m])"
        end = time.monotonic() + WAIT_S
        while True:
            try:
                data = _get(f"{url}/api/v1/query?query={query}")
                result = data["data"]["result"]  # type: ignore[index]
                counts = [float(r["value"][1]) for r in result]
                if len(counts) == 2 * len(NODES) and min(counts) >= SAMPLES:
                    break
            except (OSError, ValueError, KeyError):
                pass
            if time.monotonic() > end:
                tail = (tmp / "prometheus.log").read_text()[-2000:]
                raise AssertionError(f"Prometheus never held {SAMPLES} samples; log:\n{tail}")
            time.sleep(0.5)
        yield url
    finally:
        for proc in procs:
            proc.terminate()
        for proc in procs:
            reap(proc)
        log.close()
        for page in (dcgm, nvitop, *quiet):
            page.shutdown()
            page.server_close()


def test_the_job_report_names_the_node_that_holds_the_job_back(prometheus: str) -> None:
    result = run_cli("report", "--prometheus", prometheus, "--job", JOB, "--since", "5m",
                     "--step", "1", columns=200)  # fmt: skip
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Traceback" not in result.stderr
    # Every node, where its numbers come from, and which report GPUs are its own.
    for node in NODES:
        assert f"{node} " in out
    assert out.count("gputop-hints export") >= len(NODES)
    across = out.split("Across nodes:", 1)[1].split("Findings the nodes", 1)[0]
    assert "node-c runs kernels" in across
    assert "node-a runs" not in across and "node-b runs" not in across
    # The cause comes from node-c's own exporter, which has its host data.
    own = out.split("Findings the nodes' own gputop-hints export reported", 1)[1]
    first = own.splitlines()[1]
    assert first.split()[:2] == ["node-c", "input-starved/num-workers-0"], own
    # Then the ordinary report over the job's six GPUs.
    assert "job 4242 (4 nodes)" in out
    assert "not evaluated: straggler (no processes" in out


class _NvitopPage(_DcgmPage):
    page = NVITOP_PAGE


class _QuietAlways(_DcgmPage):
    page = _quiet_page("q-1")


class _QuietGoes(_DcgmPage):
    page = _quiet_page("q-2")
    answers = QUIET_AFTER


class _QuietLater(_DcgmPage):
    """Answers until a test stops it (answers = 0)."""

    page = _quiet_page("q-3")


def test_a_node_that_went_quiet_is_named(prometheus: str) -> None:
    """q-2 answered its first scrapes and then stopped: its mean is over the few points
    it has, so the report names it, since when and how much is missing."""
    result = run_cli("report", "--prometheus", prometheus, "--job", QUIET_JOB,
                     "--since", "5m", "--step", "1", columns=200)  # fmt: skip
    assert result.returncode == 0, result.stderr
    nodes = result.stdout.split("Across nodes", 1)[0]
    assert "no data from q-2 since " in nodes and "points missing" in nodes, nodes
    assert "q-1 has" not in nodes and "from q-1" not in nodes
    result = run_cli("report", "--prometheus", prometheus, "--job", QUIET_JOB,
                     "--since", "5m", "--step", "1", "--json")  # fmt: skip
    gaps = {g["node"]: g for g in json.loads(result.stdout)["job"]["quiet_nodes"]}
    gap = gaps["q-2"]
    assert "q-1" not in gaps and gap["missing_points"] >= SAMPLES - QUIET_AFTER - 1


def test_the_live_view_names_a_node_that_goes_quiet(prometheus: str) -> None:
    """q-3 stops answering while the monitor watches: its GPU says since when there is
    no data from it (it read as before, "healthy", on nothing)."""
    from gputop_hints.sources.prometheus.live import PrometheusSource

    source = PrometheusSource(prometheus, QUIET_JOB, interval_s=1.0)
    first = {g.node: g for g in source.sample().gpus}
    assert set(first) == {"q-1", "q-3"} and "no data" not in (first["q-3"].name or "")
    _QuietLater.answers = 0
    end = time.monotonic() + WAIT_S
    while True:
        snap = source.sample()
        gpus = {g.node: g for g in snap.gpus}
        if "no data" in (gpus["q-3"].name or "") or time.monotonic() > end:
            break
        time.sleep(0.5)
    assert "q-3 GPU 0: no data since " in (gpus["q-3"].name or ""), gpus["q-3"]
    assert gpus["q-3"].sm_percent is None
    assert "no data" not in (gpus["q-1"].name or "")
    assert "no data from q-3 since " in snap.source_detail


def test_nvitop_exporter_nodes_are_read_by_name(prometheus: str) -> None:
    """nvitop-exporter has no job label: with the job's nodes named (--nodes, or SLURM's
    list) its series are read, in MiB and watts, and the report says where from."""
    result = run_cli("report", "--prometheus", prometheus, "--job", JOB, "--since", "5m",
                     "--step", "1", "--nodes", f"{NVITOP_NODE},node-gone", "--json")  # fmt: skip
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    [node] = doc["job"]["nodes"]
    assert node["node"] == NVITOP_NODE and node["source"] == "nvitop-exporter"
    assert node["sm_percent_mean"] == pytest.approx(12)
    assert node["vram_peak_bytes"] == 30000 * 2**20
    assert doc["job"]["nodes_without_series"] == ["node-gone"]


def test_the_job_report_as_json_and_fail_on(prometheus: str) -> None:
    result = run_cli("report", "--prometheus", prometheus, "--job", JOB, "--since", "5m",
                     "--step", "1", "--json", "--fail-on", "warning")  # fmt: skip
    assert result.returncode == 1, result.stderr  # node-c's uneven load is a warning
    doc = json.loads(result.stdout)
    nodes = {n["node"]: n for n in doc["job"]["nodes"]}
    assert set(nodes) == {*NODES, DCGM_NODE}
    dgx = nodes[DCGM_NODE]
    assert dgx["source"] == "dcgm-exporter"
    assert dgx["sm_percent_mean"] == pytest.approx(93)
    assert dgx["vram_peak_bytes"] == 62000 * 2**20  # MiB in dcgm-exporter
    assert nodes["node-a"]["source"] == "gputop-hints export"
    assert [g["gpu"] for g in nodes["node-c"]["gpus"]] == ["0", "1"]
    assert nodes["node-c"]["sm_percent_mean"] < nodes["node-a"]["sm_percent_mean"] / 2
    rules = {(f["node"], f["rule"]) for f in doc["job"]["node_findings"]}
    assert ("node-c", "input-starved") in rules
    assert ("node-a", "input-starved") not in rules
    assert len(doc["gpus"]) == GPUS


def test_fail_on_critical_is_not_met_by_warnings(prometheus: str) -> None:
    """node-c's uneven load and the starved findings are warnings: --fail-on critical
    passes (it exited 1 on any uneven node, whatever the level asked)."""
    result = run_cli("report", "--prometheus", prometheus, "--job", JOB, "--since", "5m",
                     "--step", "1", "--json", "--fail-on", "critical")  # fmt: skip
    doc = json.loads(result.stdout)
    assert doc["job"]["uneven"], "the fixture's node-c is uneven"
    levels = {f["severity"] for f in doc["job"]["node_findings"]}
    levels |= {f["severity"] for f in doc["findings"]}
    assert "critical" not in levels, levels
    assert result.returncode == 0, result.stderr


def test_a_job_prometheus_has_no_series_of_is_a_clear_error(prometheus: str) -> None:
    result = run_cli("report", "--prometheus", prometheus, "--job", "999999", "--since", "5m")
    assert result.returncode == 2
    assert "no GPU series of job 999999" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_an_unreachable_prometheus_is_a_clear_error() -> None:
    url = f"http://127.0.0.1:{_free_port()}"
    result = run_cli("report", "--prometheus", url, "--job", JOB, timeout=60)
    assert result.returncode == 2
    assert f"Prometheus at {url} is unreachable" in result.stderr
    assert "Traceback" not in result.stderr


class _Refusing(http.server.BaseHTTPRequestHandler):
    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.seen.append(self.headers.get("Authorization", ""))
        self.send_response(401)
        self.send_header("Content-Type", "text/plain")
        self.end_headers()
        self.wfile.write(b"Unauthorized\n")

    def log_message(self, *args: object) -> None:
        pass


def test_credentials_come_from_the_environment_and_a_refusal_says_so() -> None:
    server = http.server.HTTPServer(("127.0.0.1", 0), _Refusing)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}"
        args = ["-m", "gputop_hints", "report", "--prometheus", url, "--job", JOB]
        base = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                              env=_env(), timeout=60, check=False)  # fmt: skip
        assert base.returncode == 2
        assert "refused the query (HTTP 401)" in base.stderr
        assert "GPUTOP_HINTS_PROMETHEUS_TOKEN" in base.stderr  # what to set
        env = _env() | {"GPUTOP_HINTS_PROMETHEUS_TOKEN": "s3cret"}
        sent = subprocess.run([sys.executable, *args], capture_output=True, text=True,
                              env=env, timeout=60, check=False)  # fmt: skip
        assert sent.returncode == 2
        assert "credentials from the environment were refused" in sent.stderr
        assert "Bearer s3cret" in _Refusing.seen
        assert "s3cret" not in sent.stderr
        basic = _env() | {
            "GPUTOP_HINTS_PROMETHEUS_USER": "ana",
            "GPUTOP_HINTS_PROMETHEUS_PASSWORD": "pw",
        }
        subprocess.run([sys.executable, *args], capture_output=True, text=True,
                       env=basic, timeout=60, check=False)  # fmt: skip
        assert "Basic " + base64.b64encode(b"ana:pw").decode() in _Refusing.seen
    finally:
        server.shutdown()
        server.server_close()


def test_credentials_in_the_url_are_refused() -> None:
    result = run_cli("report", "--prometheus", "http://me:pw@127.0.0.1:9/", "--job", JOB)
    assert result.returncode == 2
    assert "no credentials in the URL" in result.stderr


def _row(node: str, sm: float | None, vram_gib: float | None) -> NodeRow:
    vram = None if vram_gib is None else int(vram_gib * 2**30)
    return NodeRow(node, "gputop-hints export", ((0, "0"),), sm, None, vram)


def test_uneven_nodes_against_the_median_of_all_nodes() -> None:
    c = Thresholds.defaults().uneven_nodes
    rows = [_row("a", 95, 60), _row("b", 94, 60), _row("c", 30, 60), _row("d", 96, 60)]
    assert [line.split()[0] for line in uneven_nodes(rows, c)] == ["c"]
    # One odd node of three: the two normal ones are not called odd.
    rows = [_row("a", 95, 62), _row("b", 95, 62), _row("c", 24, 31)]
    assert [line.split()[0] for line in uneven_nodes(rows, c)] == ["c", "c"]
    # Busy but a little uneven (rank 0 logs and evaluates): not flagged.
    assert uneven_nodes([_row("a", 95, 60), _row("b", 80, 58), _row("c", 92, 61)], c) == ()
    # Low everywhere is not uneven (the job itself is light: the GPU findings say so).
    assert uneven_nodes([_row("a", 20, 10), _row("b", 9, 10)], c) == ()
    # One node: nothing to compare.
    assert uneven_nodes([_row("a", 5, 1)], c) == ()


def test_since_reads_durations_as_people_write_them() -> None:
    from gputop_hints.cli.args import duration

    assert [duration(t) for t in ("90s", "30m", "2h", "1d", "45", "1.5h")] == [
        90.0, 1800.0, 7200.0, 86400.0, 45.0, 5400.0,
    ]  # fmt: skip
    for bad in ("", "h", "-2h", "0", "two hours", "inf"):
        result = run_cli("report", "--prometheus", "http://127.0.0.1:9", "--job", JOB,
                         "--since", bad)  # fmt: skip
        assert result.returncode == 2 and "--since" in result.stderr, bad


def by_name_of(doc: dict[str, object]) -> dict[str, dict[str, object]]:
    return {str(g["name"]): g for g in doc["gpus"]}  # type: ignore[attr-defined]


def test_the_monitor_watches_the_job_live_from_prometheus(prometheus: str) -> None:
    """``gputop-hints --prometheus URL --job ID --json``: every GPU of the job, by node."""
    result = run_cli("--prometheus", prometheus, "--job", JOB, "--json", "--duration", "1")
    assert result.returncode == 0, result.stderr
    doc = json.loads(result.stdout)
    assert doc["source"] == "prometheus"
    names = [g["name"] for g in doc["gpus"]]
    assert names == [f"{DCGM_NODE} GPU 0"] + [f"{n} GPU {i}" for n in NODES for i in (0, 1)]
    dgx = by_name_of(doc)[f"{DCGM_NODE} GPU 0"]
    assert dgx["vram_total_bytes"] == (62000 + 19000 + 559) * 2**20  # used + free + reserved
    assert dgx["power_limit_watts"] == 700
    assert dgx["sm_active_percent"] == pytest.approx(82)
    by_name = {g["name"]: g for g in doc["gpus"]}
    assert by_name["node-c GPU 0"]["sm_percent"] < by_name["node-a GPU 0"]["sm_percent"] / 2
    assert doc["processes"] == []  # not read from Prometheus (and not claimed to be none)


@pytest.mark.tmux
def test_the_live_view_in_a_terminal(prometheus: str) -> None:
    from tests.support.tmux_harness import SCRIPT, tmux_session

    gen = tmux_session()
    tmux = next(gen)
    try:
        tmux.start([str(SCRIPT), "--prometheus", prometheus, "--job", JOB], 160, 45)
        # Seven GPUs in 45 rows: the compact one-line panels, each naming its node.
        screen = tmux.wait_for("node-c")
        assert "PROMETHEUS" in screen and "REPLAY" not in screen
        assert "processes are not read from Prometheus" in screen
        assert all(node in screen for node in (DCGM_NODE, *NODES))
        # N: one node at a time (dgx-7 first, then node-a, ...): its GPUs get room.
        for node in (DCGM_NODE, "node-a", "node-b", "node-c"):
            tmux.keys("N")
            screen = tmux.wait_for(f"{node} GPU 0")
        assert "node-c GPU 1" in screen and "node-a GPU" not in screen
        tmux.keys("q")
        assert tmux.wait_until_exited() == 0
    finally:
        for _ in gen:  # the fixture body's cleanup: the tmux server is killed
            pass


def test_prometheus_going_away_mid_run_is_a_tick_without_gpus(prometheus: str) -> None:
    from gputop_hints.sources.prometheus.client import PrometheusClient
    from gputop_hints.sources.prometheus.live import PrometheusSource

    source = PrometheusSource(prometheus, JOB, interval_s=1.0)
    assert len(source.sample().gpus) == GPUS
    assert len(source.sample().gpus) == GPUS
    source.client = PrometheusClient(f"http://127.0.0.1:{_free_port()}", timeout_s=5)
    snap = source.sample()
    assert snap.gpus == ()
    assert snap.gpu_unavailable_reason is not None
    assert "unreachable" in snap.gpu_unavailable_reason
    assert "stopped answering at " in snap.gpu_unavailable_reason  # and since when
    since = snap.gpu_unavailable_reason.split(" at ", 2)[-1][:8]
    assert source.sample().gpu_unavailable_reason.split(" at ", 2)[-1][:8] == since  # type: ignore[union-attr]
    source.client = PrometheusClient(prometheus)
    assert len(source.sample().gpus) == GPUS  # and it comes back


def test_the_monitor_refuses_prometheus_without_a_job() -> None:
    result = run_cli("--prometheus", "http://127.0.0.1:9", "--once")
    assert result.returncode == 2 and "needs --job ID" in result.stderr


def test_a_node_on_a_slower_network_link_is_named() -> None:
    """node_exporter's link speeds (node_network_speed_bytes, node_infiniband_rate_*):
    a node at 10 Gb/s beside 200 Gb/s InfiniBand paces every collective."""
    c = Thresholds.defaults().uneven_nodes

    def row(node: str, gbit: float | None) -> NodeRow:
        link = None if gbit is None else gbit * 1e9 / 8
        return NodeRow(node, "gputop-hints export", ((0, "0"),), 95.0, None, 2**30, link)

    lines = uneven_nodes([row("a", 200), row("b", 200), row("c", 10), row("d", 200)], c)
    assert len(lines) == 1 and lines[0].startswith("c's fastest network link is 10 Gb/s")
    assert "200 Gb/s" in lines[0]
    # Unknown links (a VM's NIC reports -1; no node_exporter) say nothing.
    assert uneven_nodes([row("a", None), row("b", 10)], c) == ()
    text = job_section_text(
        JobSection("1", "http://p:9090", (row("a", 200), row("b", None)), (), ())
    )
    assert "200 Gb/s" in text and "n/a" in text


def test_a_node_whose_gpu_link_trained_down_is_named() -> None:
    c = Thresholds.defaults().uneven_nodes
    gen4_x16, gen3_x8 = 16 * 1.969e9, 8 * 0.985e9

    def row(node: str, pcie: float | None) -> NodeRow:
        return NodeRow(node, "gputop-hints export", ((0, "0"),), 95.0, None, 2**30, None, pcie)

    lines = uneven_nodes([row("a", gen4_x16), row("b", gen4_x16), row("c", gen3_x8)], c)
    assert len(lines) == 1 and lines[0].startswith("c has a GPU on a PCIe link of")
    assert uneven_nodes([row("a", gen4_x16), row("b", None)], c) == ()


def _doc_queries() -> list[str]:
    """Every PromQL query docs/cluster.md gives: its ```promql blocks (comments left
    out) and the inline alert query."""
    text = (REPO / "docs" / "cluster.md").read_text()
    queries = []
    for block in text.split("```promql\n")[1:]:
        body = block.split("```", 1)[0]
        lines = [line for line in body.splitlines() if not line.lstrip().startswith("#")]
        queries.append("\n".join(lines).strip())
    queries.extend(
        "max_over_time(" + inline.split("`", 1)[0] for inline in text.split("`max_over_time(")[1:]
    )
    return queries


def test_every_query_in_the_cluster_docs_returns_series(prometheus: str) -> None:
    """Under the scrape config docs/cluster.md recommends (no honor_labels: Prometheus's
    own ``job`` is the scrape job's name), each query the docs give returns series, and
    one that groups by the SLURM job groups by the job's id, not the scrape job's."""
    queries = _doc_queries()
    assert len(queries) >= 5, queries
    for query in queries:
        data = _get(f"{prometheus}/api/v1/query?" + urllib.parse.urlencode({"query": query}))
        result = data["data"]["result"]  # type: ignore[index]
        assert result, f"no series: {query}"
        if "/ 60" in query:  # minutes held: the demo nodes ran for seconds, not since 2023
            held = [float(r["value"][1]) for r in result]
            assert min(held) >= 0 and max(held) < 30, (query, held)
        if "by (" in query and "job" in query.split("by (", 1)[1].split(")", 1)[0]:
            label = query.split("by (", 1)[1].split(")", 1)[0].strip()
            assert {r["metric"].get(label) for r in result} == {JOB}, (query, result)


def test_demo_nodes_of_the_same_seed_have_gpus_of_their_own(prometheus: str) -> None:
    """node-a and node-b run the same scenario and seed: their GPUs are still different
    GPUs (the UUID depends on --label-host), so a query by uuid tells them apart."""
    query = "count by (uuid) (gputop_hints_gpu_utilization_percent)"
    data = _get(f"{prometheus}/api/v1/query?" + urllib.parse.urlencode({"query": query}))
    counts = {r["metric"]["uuid"]: r["value"][1] for r in data["data"]["result"]}  # type: ignore[index]
    assert len(counts) == 2 * len(NODES) and set(counts.values()) == {"1"}, counts
