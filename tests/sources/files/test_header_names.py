"""Which hand-made CSV header names read as which metric: names seen in people's
scripts (``gpu%``, ``util.gpu``, ``mem_mb``), and the ones that must not read
(a bare ``mem`` beside the host's CPU and RAM columns could be either's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from gputop_hints.sources.files._header_names import header_columns
from tests.support.logs import read_log

MIB = 2**20


def _roles(header: str, row: str) -> dict[str, str]:
    names = header.split(",")
    columns, _notes = header_columns(names, [row.split(",")])
    return {c.label: c.role for c in columns}


@pytest.mark.parametrize(
    ("header", "row", "expected"),
    [
        ("time,gpu%,mem%", "1733306400,90,40", {"time": "time", "gpu%": "sm"}),
        ("time,util%", "1733306400,90", {"time": "time", "util%": "sm"}),
        (
            "time,util.gpu,util.mem",
            "1733306400,90,40",
            {"time": "time", "util.gpu": "sm", "util.mem": "mem"},
        ),
        (
            "time,gpu_util,mem_mb",
            "1733306400,90,20000",
            {"time": "time", "gpu_util": "sm", "mem_mb": "vram_used"},
        ),
        (
            "Time,Utilization,Memory (MiB),Memory Total (MiB)",
            "1733306400,90,20000,81920",
            {
                "Time": "time",
                "Utilization": "sm",
                "Memory (MiB)": "vram_used",
                "Memory Total (MiB)": "vram_total",
            },
        ),
        # The host's columns beside it: a bare mem_mb is not taken for VRAM.
        (
            "time,cpu_percent,mem_mb,gpu_util",
            "1733306400,50,9000,90",
            {"time": "time", "gpu_util": "sm"},
        ),
        (
            "time,gpu_util,ram_mb,mem_mb",
            "1733306400,90,9000,20000",
            {"time": "time", "gpu_util": "sm"},
        ),
        # Two bare memories: which is the GPU's? neither.
        (
            "time,gpu_util,mem_mb,memory_gb",
            "1733306400,90,20000,20",
            {"time": "time", "gpu_util": "sm"},
        ),
        # No unit: a count of what? not read.
        ("time,gpu_util,mem", "1733306400,90,20000", {"time": "time", "gpu_util": "sm"}),
        # Nothing of a GPU's named: a bare memory is nobody's.
        ("time,mem_mb", "1733306400,20000", {"time": "time"}),
    ],
)
def test_header_names(header: str, row: str, expected: dict[str, str]) -> None:
    assert _roles(header, row) == expected


def test_a_bare_memory_column_reads_as_vram_in_its_unit(tmp_path: Path) -> None:
    path = tmp_path / "gpu.csv"
    path.write_text(
        "time,gpu_util,mem_gb\n"
        + "".join(f"{1733306400 + k},{90 + k},{20.5 + k}\n" for k in range(4))
    )
    snaps, info, _counters = read_log(path)
    assert [s.gpus[0].vram_used_bytes for s in snaps] == [
        round((20.5 + k) * 2**30) for k in range(4)
    ]
    assert "mem_gb: VRAM used" in info.detail
