"""The Textual fence, checked at run time.

What it guards: everything below the views -- sources, recording, sampling,
history, hints, outputs, model, units -- must work where Textual and Rich are
absent or unwanted (``--once``, ``record``, ``report``, a future exporter), and
must never start drawing. Only ``gputop_hints.tui`` may import ``textual`` or
``rich``; the CLI may reach them only by importing the TUI lazily, on the path
that starts it.

The package is walked (``pkgutil.walk_packages``), so a new module is covered
the moment it exists: no hand-kept list to forget. The same rule is checked
statically by import-linter (``[tool.importlinter]`` in pyproject.toml, run by
.ci/run); this test checks what actually lands in ``sys.modules``, which also
catches imports that static analysis cannot see (``importlib``, ``__import__``).

Each check runs in a fresh interpreter so that nothing imported by other tests
hides an import.
"""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

import gputop_hints

FENCED = ("textual", "rich")


def _all_modules() -> list[str]:
    return sorted(
        info.name
        for info in pkgutil.walk_packages(gputop_hints.__path__, prefix="gputop_hints.")
    )


def _outside_tui(name: str) -> bool:
    return not (name == "gputop_hints.tui" or name.startswith("gputop_hints.tui."))


def _run(code: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_the_walk_finds_every_layer() -> None:
    """A broken walk (an import error, a renamed root) would make the fence test vacuous."""
    modules = _all_modules()
    for layer in ("cli", "tui", "outputs", "sampling", "hints", "sources", "recording"):
        assert any(m.startswith(f"gputop_hints.{layer}") for m in modules), layer
    assert "gputop_hints.model" in modules
    assert len([m for m in modules if _outside_tui(m)]) > 30


def test_no_module_outside_the_tui_pulls_in_textual_or_rich() -> None:
    # Import the modules one by one in a single interpreter; the first module after
    # which a fenced package appears in sys.modules is the one that pulled it in
    # (all modules imported before it were clean).
    names = [m for m in _all_modules() if _outside_tui(m) and m != "gputop_hints.__main__"]
    code = (
        "import importlib, json, sys\n"
        f"fenced = {FENCED!r}\n"
        "def seen():\n"
        "    return sorted(m for m in sys.modules if m.split('.')[0] in fenced)\n"
        "culprit = None\n"
        f"for name in {names!r}:\n"
        "    importlib.import_module(name)\n"
        "    if seen():\n"
        "        culprit = [name, seen()[:5]]\n"
        "        break\n"
        "print(json.dumps(culprit))\n"
    )
    culprit = json.loads(_run(code))
    assert culprit is None, f"{culprit[0]} imports {', '.join(culprit[1])}"


def test_the_fence_check_catches_a_violation() -> None:
    """The same probe, pointed at a module that does import Textual, must report it."""
    code = (
        "import importlib, sys\n"
        "importlib.import_module('gputop_hints.tui.app')\n"
        "print(any(m.split('.')[0] == 'textual' for m in sys.modules))\n"
    )
    assert _run(code) == "True"


def test_once_json_path_never_imports_textual() -> None:
    code = (
        "import sys, io, contextlib\n"
        "from gputop_hints.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    rc = main(['--demo', '--once', '--json', '--duration', '1'])\n"
        "assert rc == 0, rc\n"
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'textual', 'rich'}))\n"
    )
    assert _run(code) == "[]"
