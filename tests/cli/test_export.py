"""``gputop-hints export`` refuses what it cannot serve, with a message and exit 2.

What it serves is checked in tests/outputs/test_prometheus.py.
"""

from __future__ import annotations

import socket
import sys

import pytest

from gputop_hints.cli import main
from tests.support.cli import run_cli


def test_a_port_out_of_range_is_a_usage_error() -> None:
    result = run_cli("export", "--demo", "--port", "70000")
    assert result.returncode == 2
    assert "--port" in result.stderr and "outside 0-65535" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_certificate_without_its_key_is_refused() -> None:
    # prometheus_client would serve plain HTTP given a certificate alone.
    result = run_cli("export", "--demo", "--tls-cert", "server.pem")
    assert result.returncode == 2
    assert "--tls-cert and --tls-key go together" in result.stderr


def test_a_port_in_use_is_a_usage_error_naming_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = run_cli("export", "--demo", "--port", str(port))
    assert result.returncode == 2
    assert f"cannot serve on 127.0.0.1 port {port}" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_missing_certificate_file_is_a_usage_error() -> None:
    result = run_cli(
        "export", "--demo", "--port", "0", "--tls-cert", "nope.pem", "--tls-key", "nope.key"
    )
    assert result.returncode == 2
    assert "cannot serve" in result.stderr and "nope.pem" in result.stderr
    assert "Traceback" not in result.stderr


def test_without_prometheus_client_it_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "prometheus_client", None)  # import fails, as if absent
    assert main(["export", "--demo"]) == 2
    err = capsys.readouterr().err
    assert "pip install '.[export]'" in err and "gputop-hints[export]" in err
