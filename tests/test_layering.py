"""Sources, model, history (and later hints) must work without Textual.

Run in a fresh interpreter so that nothing imported by other tests hides an
import of Textual.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

TEXTUAL_FREE = [
    "gputop_hints.model",
    "gputop_hints.history",
    "gputop_hints.sampling.sampler",
    "gputop_hints.units",
    "gputop_hints.outputs.summary",
    "gputop_hints.sources",
    "gputop_hints.sources.live.source",
    "gputop_hints.sources.demo",
    "gputop_hints.cli",
    "gputop_hints.hints.engine",
    "gputop_hints.hints.config",
    "gputop_hints.outputs.evaluate",
    "gputop_hints.sources.files.stream",
    "gputop_hints.sources.files",
]


@pytest.mark.parametrize("module", TEXTUAL_FREE)
def test_module_imports_without_textual(module: str) -> None:
    code = (
        "import sys, importlib\n"
        f"importlib.import_module({module!r})\n"
        "bad = sorted(m for m in sys.modules if m == 'textual' or m.startswith('textual.'))\n"
        "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "", f"{module} pulled in Textual: {result.stdout.strip()}"


def test_once_json_path_never_imports_textual() -> None:
    code = (
        "import sys, io, contextlib\n"
        "from gputop_hints.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    rc = main(['--demo', '--once', '--json', '--duration', '1'])\n"
        "assert rc == 0, rc\n"
        "print(any(m == 'textual' or m.startswith('textual.') for m in sys.modules))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
