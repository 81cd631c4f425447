"""Fault matrix, the cluster client: ``--prometheus URL`` answered by what is not Prometheus.

A real TCP server on 127.0.0.1 (a thread, port 0) answers each connection with
crafted bytes: a service that is not HTTP (an SSH banner), an HTTP answer cut
short, JSON that claims ``"status":"success"`` but has the wrong shape. The real
command line (``--once`` on the job, and ``report --job``) must end each with one
line naming the server and exit 2, never a traceback.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator

import pytest

from tests.support.cli import run_cli


def http(body: bytes, *, length: int | None = None, status: str = "200 OK") -> bytes:
    """A whole HTTP/1.1 answer around ``body`` (``length`` overrides Content-Length)."""
    head = (
        f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body) if length is None else length}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + body


def success(data: object) -> bytes:
    return json.dumps({"status": "success", "data": data}).encode()


ANSWERS: dict[str, bytes] = {
    "ssh-banner": b"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n",
    "binary-junk": bytes(range(256)) * 4,
    "closes-at-once": b"",
    "cut-short-body": http(success({"resultType": "vector", "result": []})[:20], length=4000),
    "cut-short-headers": b"HTTP/1.1 200 OK\r\nContent-Type: appl",
    "chunked-cut": (
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        b"400\r\n" + b'{"status":"success"'
    ),
    "result-not-a-list": http(success({"resultType": "vector", "result": "abc"})),
    "result-items-not-objects": http(success({"resultType": "vector", "result": [1, "x"]})),
    "metric-not-an-object": http(
        success({"resultType": "vector", "result": [{"metric": "gpu", "value": [1, "5"]}]})
    ),
    "value-not-a-pair": http(
        success({"resultType": "vector", "result": [{"metric": {}, "value": 5}]})
    ),
    "data-a-list": http(success([1, 2, 3])),
    "status-not-a-string": http(json.dumps({"status": ["success"], "data": {}}).encode()),
    "json-a-list": http(b"[1, 2, 3]"),
    "error-cut-short": http(b'{"status":"error","error":"x', length=400, status="500 Oops"),
    "not-utf8": http(b'{"status":"success","data":\xff\xfe}'),
    "deep-json": http(b'{"status":"success","data":' + b"[" * 100_000 + b"]" * 100_000 + b"}"),
}
"""What the server sends to every connection, then it closes the connection."""


@pytest.fixture
def server(request: pytest.FixtureRequest) -> Iterator[str]:
    """A TCP server on 127.0.0.1 that sends ``request.param``'s answer to each
    connection after reading its request; the URL to give ``--prometheus``."""
    answer = ANSWERS[request.param]
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(5)
                try:
                    conn.recv(65536)
                    conn.sendall(answer)
                except OSError:
                    pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(timeout=10)
        listener.close()


@pytest.mark.parametrize("server", sorted(ANSWERS), indirect=True)
def test_a_server_that_is_not_prometheus_ends_in_one_line(server: str) -> None:
    """--prometheus URL --once, URL not Prometheus (SSH, cut short, bad JSON): 1 line, exit 2."""
    result = run_cli("--prometheus", server, "--job", "1234", "--once", timeout=60)
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and server in lines[0], result.stderr


@pytest.mark.parametrize(
    "server", ["ssh-banner", "cut-short-body", "value-not-a-pair"], indirect=True
)
def test_record_and_report_from_a_server_that_is_not_prometheus(
    server: str, tmp_path: object
) -> None:
    """record/report --prometheus URL --job 1, URL not Prometheus: one line each, exit 2."""
    for args in (
        ("record", "-o", f"{tmp_path}/run.jsonl", "--prometheus", server, "--job", "1234"),
        ("report", "--prometheus", server, "--job", "1234"),
    ):
        result = run_cli(*args, timeout=60)
        assert "Traceback" not in result.stderr, (args, result.stderr)
        assert result.returncode == 2, (args, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, (args, result.stderr)
