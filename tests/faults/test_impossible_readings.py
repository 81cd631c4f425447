"""Fault matrix, impossible readings: values NVML's unsigned answers cannot hold.

NVML returns temperatures as unsigned integers: a negative one (-1, what a
wrapper or a driver shim makes of "no sensor") is no reading. It was drawn as
``temp -1C``; like 4294967295 °C it is unknown (n/a) and named in ``--json``'s
``implausible``. Only NVML is faked, at nvitop's libnvml boundary.
"""

from __future__ import annotations

import json

import pytest

from gputop_hints.cli import main
from gputop_hints.sources.live.source import LiveSource
from tests.support.fake_nvml import FakeGpu, FakeNvml


@pytest.mark.parametrize("temperature", [-1, -40, -100])
def test_a_negative_temperature_is_unknown_and_named(
    capsys: pytest.CaptureFixture[str], temperature: int
) -> None:
    """NVML answers a temperature of -1 (-40, -100): --once shows n/a, --json says implausible."""
    with FakeNvml([FakeGpu(0, temperature=temperature, sm=50)]):
        source = LiveSource()
        try:
            [sample] = source.sample().gpus
        finally:
            source.close()
        assert main(["--once", "--duration", "0.3", "--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert main(["--once", "--duration", "0.3"]) == 0
        text = capsys.readouterr().out
    assert sample.temperature_c is None
    assert "temperature_c" in sample.implausible
    assert "temperature_c" in doc["gpus"][0]["implausible"]
    assert f"{temperature}C" not in text and f"{temperature} C" not in text, text
    assert sample.sm_percent == 50  # the other readings stand


def test_a_cold_but_possible_temperature_is_kept() -> None:
    """NVML answers 5 °C (a GPU in a cold room at idle): kept as read, nothing implausible."""
    with FakeNvml([FakeGpu(0, temperature=5)]):
        source = LiveSource()
        try:
            [sample] = source.sample().gpus
        finally:
            source.close()
    assert sample.temperature_c == 5 and sample.implausible == ()
