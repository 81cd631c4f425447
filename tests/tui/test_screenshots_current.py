"""The README's screenshots are what the app draws now (issue 44: they showed an old
footer and old evidence text). ``docs/make_screenshot.py`` renders them from the demo
(fixed seed, simulated clock, UTC); here the same script renders into a temporary
folder and each committed SVG must be byte for byte what it renders. After a change to
what the screen shows: ``python docs/make_screenshot.py`` and commit the SVGs."""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.paths import REPO

DOCS = REPO / "docs"


def _script() -> object:
    spec = importlib.util.spec_from_file_location("make_screenshot", DOCS / "make_screenshot.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def utc() -> Iterator[None]:
    saved = os.environ.get("TZ")
    os.environ["TZ"] = "UTC"
    time.tzset()
    yield
    if saved is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = saved
    time.tzset()


async def test_committed_screenshots_are_what_the_script_renders_now(
    tmp_path: Path, utc: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_COLOR", raising=False)
    script = _script()
    for name, (scenario, size, ticks, keys) in script.SHOTS.items():  # type: ignore[attr-defined]
        out = tmp_path / name
        await script.shoot(scenario, size, ticks, out, keys=keys)  # type: ignore[attr-defined]
        committed = (DOCS / name).read_text(encoding="utf-8")
        assert out.read_text(encoding="utf-8") == committed, (
            f"docs/{name} is stale: run python docs/make_screenshot.py and commit it"
        )
