"""The start-up pause of the garbage collector (cli/gc_tuning.py)."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from gputop_hints.cli.gc_tuning import collections_paused


@pytest.fixture
def gc_state() -> Iterator[None]:
    """Whatever a test does to the collector, it is as before afterwards."""
    was_enabled = gc.isenabled()
    yield
    if was_enabled:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.parametrize("enabled_before", [True, False])
def test_paused_inside_and_as_before_afterwards(gc_state: None, enabled_before: bool) -> None:
    if enabled_before:
        gc.enable()
    else:
        gc.disable()
    with collections_paused():
        assert not gc.isenabled()
    assert gc.isenabled() is enabled_before


def test_resumed_when_the_block_raises(gc_state: None) -> None:
    gc.enable()
    with pytest.raises(ValueError), collections_paused():
        raise ValueError("start-up failed")
    assert gc.isenabled()
