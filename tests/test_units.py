"""How numbers read on screen and in --once text."""

from __future__ import annotations

import pytest

from gputop_hints.units import core_ranges, human_bytes, human_rate, percent


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, "n/a"), (0, "0B"), (1536, "1.5KiB"), (80 * 2**30, "80.0GiB"), (512 * 2**30, "512GiB")],
)
def test_human_bytes_uses_binary_units_like_nvidia_smi(value: float | None, text: str) -> None:
    assert human_bytes(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [(None, "n/a"), (999, "999B/s"), (2.5e9, "2.5GB/s"), (31.5e9, "31.5GB/s"), (130e6, "130MB/s")],
)
def test_human_rate_uses_decimal_units_like_pcie_specs(value: float | None, text: str) -> None:
    assert human_rate(value) == text


def test_percent_never_shows_unknown_as_zero() -> None:
    assert percent(None) == "n/a"
    assert percent(0.0) == "0%"
    assert percent(99.6, width=5) == " 100%"


@pytest.mark.parametrize(
    ("cores", "text"),
    [((), "none"), ((3,), "3"), ((0, 1, 2, 3, 8, 10, 11), "0-3,8,10-11"), ((5, 4, 4), "4-5")],
)
def test_core_ranges_in_cpuset_list_format(cores: tuple[int, ...], text: str) -> None:
    assert core_ranges(cores) == text


def test_counts_take_the_right_number() -> None:
    from gputop_hints.units import count_text

    assert count_text(1, "process") == "1 process"
    assert count_text(0, "process") == "0 processes"
    assert count_text(64, "process") == "64 processes"
    assert count_text(2, "GPU") == "2 GPUs"
