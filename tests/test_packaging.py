"""What a fresh `pip install .` ships: the data files the program reads at run time.

Runs a separate interpreter from outside the repository, so it imports the
INSTALLED package, not the source tree beside the tests. With an editable
install (a developer's checkout) the package is the source tree and the check
is skipped; CI installs non-editable as the README says, and runs it.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile

import pytest

PROBE = """
import json, pathlib, gputop_hints
from gputop_hints.tui.themes import packaged_themes_dir, load_themes
from gputop_hints.tui.screens.help import load_metrics_doc
from gputop_hints.hints.config import defaults_text
pkg = pathlib.Path(gputop_hints.__file__).resolve().parent
result = load_themes()
print(json.dumps({
    "package": str(pkg),
    "in_site_packages": "site-packages" in pkg.parts,
    "packaged_themes": sorted(p.name for p in packaged_themes_dir().glob("*.yaml")),
    "loaded": sorted(result.themes),
    "metrics_doc": load_metrics_doc()[:40],
    "defaults": defaults_text().splitlines()[0],
}))
"""


def test_installed_package_carries_themes_metrics_doc_and_defaults() -> None:
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
    assert info["packaged_themes"] == [
        "dark.yaml",
        "high-contrast.yaml",
        "light.yaml",
        "monochrome.yaml",
    ]
    assert info["metrics_doc"].startswith("# What each metric means")
    assert info["defaults"].startswith("# gputop-hints thresholds")
