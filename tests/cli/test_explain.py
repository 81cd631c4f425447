"""``gputop-hints explain``: every finding's "more:" line is a command that works,
also from a pip-installed wheel (where there is no docs/ folder to open).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile

import pytest

from gputop_hints.hints.catalogue import CATALOGUE
from tests.support.paths import REPO


def explain(*args: str, cwd: str | os.PathLike[str] = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "gputop_hints", "explain", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )


@pytest.mark.parametrize("rule", [info.rule for info in CATALOGUE])
def test_explain_prints_the_whole_section_of_each_rule_and_nothing_after(rule: str) -> None:
    result = explain(rule)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"## {rule}\n")
    # One section: no other rule's heading, and the guide's closing part is not in it.
    headings = re.findall(r"^## (.+)$", result.stdout, flags=re.MULTILINE)
    assert headings == [rule]
    assert "Adding a rule" not in result.stdout
    assert len(result.stdout.splitlines()) > 5


def test_explain_keeps_a_rules_subsections() -> None:
    text = explain("input-starved").stdout
    for subsection in ("### Condition", "### Thresholds", "### False positives"):
        assert subsection in text


def test_explain_accepts_the_rule_subtype_form_findings_show() -> None:
    result = explain("input-starved/num-workers-0")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("## input-starved\n")


def test_explain_without_a_rule_lists_every_rule_with_its_title() -> None:
    result = explain()
    assert result.returncode == 0, result.stderr
    for info in CATALOGUE:
        assert re.search(
            rf"^  {re.escape(info.rule)} +{re.escape(info.title)}", result.stdout, re.M
        )
    assert max(len(line) for line in result.stdout.splitlines()) <= 100


def test_the_more_line_of_a_finding_is_a_command_that_explains_it() -> None:
    command = ("--demo", "starved-loader", "--once", "--duration", "20")
    once = subprocess.run(
        [sys.executable, "-m", "gputop_hints", *command],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
        check=False,
    )
    assert once.returncode == 0, once.stderr
    commands = re.findall(r"more:\s+gputop-hints explain (\S+)", once.stdout)
    assert "input-starved" in commands
    assert "docs/hints.md" not in once.stdout
    for rule in set(commands):
        assert explain(rule).stdout.startswith(f"## {rule}\n")


PROBE = """
import json, pathlib, subprocess, sys, gputop_hints
pkg = pathlib.Path(gputop_hints.__file__).resolve().parent
result = subprocess.run(
    [sys.executable, "-m", "gputop_hints", "explain", "pcie-thrash"],
    capture_output=True, text=True, check=False,
)
print(json.dumps({
    "package": str(pkg),
    "in_site_packages": "site-packages" in pkg.parts,
    "packaged_guide": (pkg / "_data" / "hints.md").is_file(),
    "status": result.returncode,
    "stdout": result.stdout,
}))
"""


def test_explain_works_from_an_installed_wheel() -> None:
    """From outside the checkout, the installed package prints a rule's section.

    As in tests/test_packaging.py: skipped for an editable install (the package
    is then the source tree); CI installs non-editable and runs it.
    """
    with tempfile.TemporaryDirectory() as outside:
        result = subprocess.run(
            [sys.executable, "-c", PROBE],
            cwd=outside,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    assert result.returncode == 0, result.stderr
    info = json.loads(result.stdout)
    if not info["in_site_packages"]:
        pytest.skip(f"editable install ({info['package']}): nothing packaged to check")
    assert info["packaged_guide"]
    assert info["status"] == 0
    assert info["stdout"].startswith("## pcie-thrash\n")
    assert "not part of this installation" not in info["stdout"]
