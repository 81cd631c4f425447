"""Fault matrix, file contents in messages: a file that is no log is never quoted back.

``report /etc/shadow`` printed ``csv: no column names a GPU metric (header:
root:*:20228:...)``: on a real host that field is a password hash, and the
message lands in a terminal, a CI log or an issue report. A file that does not
read as a format is named with its line number and what was expected. Each test
runs the real command line on a real file whose lines hold a secret-looking
marker and asserts the marker appears nowhere in what the user sees, whichever
format is tried or forced.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gputop_hints.sources.files.registry import FORMATS
from tests.support.cli import run_cli

SECRET = "S3cr3tHash"

NOT_LOGS = {
    "shadow": f"root:$6${SECRET}$xyz:20228:0:99999:7:::\ndaemon:*:20228:0:99999:7:::\n",
    "env": f"export AWS_SECRET_ACCESS_KEY={SECRET}\nexport PATH=/usr/bin\n",
    "key-values": f"password={SECRET}\ntoken={SECRET}\napi_key={SECRET}\n",
    "one-word": f"{SECRET}\n",
    "pem": f"-----BEGIN PRIVATE KEY-----\nMII{SECRET}AAA\n-----END PRIVATE KEY-----\n",
    "credentials-csv": f"user,password\nalice,{SECRET}\nbob,{SECRET}\n",
    "json": f'{{"user": "alice", "password": "{SECRET}"}}\n',
}
"""Files that are no GPU log, each with the marker where a secret would be."""


@pytest.mark.parametrize("name", sorted(NOT_LOGS))
def test_a_file_that_is_no_log_is_refused_without_quoting_it(tmp_path: Path, name: str) -> None:
    """report FILE (shadow, env, key=value, PEM...): refused, exit 2, the file's text not quoted."""
    path = tmp_path / name
    path.write_text(NOT_LOGS[name])
    result = run_cli("report", str(path), timeout=60)
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert SECRET not in result.stdout + result.stderr, result.stderr


def test_shadow_names_the_line_and_what_was_expected(tmp_path: Path) -> None:
    """report /etc/shadow-like file: the CSV reader says line 1 names no GPU metric, unquoted."""
    path = tmp_path / "shadow"
    path.write_text(NOT_LOGS["shadow"])
    result = run_cli("report", str(path), timeout=60)
    assert result.returncode == 2
    csv_reason = next(
        line for line in result.stderr.splitlines() if line.strip().startswith("csv:")
    )
    assert "line 1" in csv_reason and "GPU metric" in csv_reason, csv_reason
    assert SECRET not in csv_reason and "root" not in csv_reason, csv_reason


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_forced_format_never_quotes_a_file_that_is_no_log(tmp_path: Path, fmt: str) -> None:
    """report --format F /etc/shadow-like file, each F: no output quotes the file, no traceback."""
    path = tmp_path / "shadow"
    path.write_text(NOT_LOGS["shadow"])
    result = run_cli("report", "--format", fmt, str(path), timeout=60)
    assert "Traceback" not in result.stderr, result.stderr
    assert SECRET not in result.stdout + result.stderr, result.stdout + result.stderr
