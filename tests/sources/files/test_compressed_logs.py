"""Logs compressed with xz or bzip2 read as the plain file does (told by their magic
bytes, whatever the name); a cut stream reads up to the cut; zstd and zip files,
which Python's standard library cannot unpack, are refused saying how to unpack them."""

from __future__ import annotations

import bz2
import lzma
from collections.abc import Callable
from pathlib import Path

import pytest

from gputop_hints.model import GpuSample, Snapshot
from gputop_hints.recording import RecordingWriter
from gputop_hints.sources.demo import DemoSource
from gputop_hints.sources.files import UnrecognisedFormat, open_stream
from tests.support.cli import run_cli
from tests.support.logs import read_log
from tests.support.paths import FIXTURES

PLAIN = FIXTURES / "import" / "nvsmi_full_2gpu.csv"
LONG = FIXTURES / "import" / "nvsmi_noindex_4gpu_l5.csv"
COMPRESS: dict[str, Callable[[bytes], bytes]] = {"xz": lzma.compress, "bz2": bz2.compress}


def _readings(snaps: list[Snapshot]) -> list[tuple[float, tuple[GpuSample, ...]]]:
    """What a log says, less the file's name (in each snapshot's source detail)."""
    return [(s.timestamp, s.gpus) for s in snaps]


@pytest.mark.parametrize("kind", sorted(COMPRESS))
def test_a_compressed_log_reads_as_the_plain_one(tmp_path: Path, kind: str) -> None:
    packed = tmp_path / "gpu.log"  # no telling suffix: the magic bytes decide
    packed.write_bytes(COMPRESS[kind](PLAIN.read_bytes()))

    plain_snaps, plain_info, plain_counters = read_log(PLAIN)
    snaps, info, counters = read_log(packed)

    assert _readings(snaps) == _readings(plain_snaps)
    assert (info.format, info.gpu_count, counters.bad_lines) == (
        plain_info.format,
        plain_info.gpu_count,
        plain_counters.bad_lines,
    )


@pytest.mark.parametrize("kind", sorted(COMPRESS))
def test_a_cut_compressed_log_reads_up_to_the_cut(tmp_path: Path, kind: str) -> None:
    plain = tmp_path / "gpu.csv"
    header, body = PLAIN.read_text().split("\n", 1)
    plain.write_text(header + "\n" + body * 4000)  # ~1.4 MB: bzip2 blocks are 900 kB
    whole, _info, _counters = read_log(plain)
    data = COMPRESS[kind](plain.read_bytes())
    cut = tmp_path / "gpu.csv.cut"
    cut.write_bytes(data[: len(data) * 3 // 4])

    stream = open_stream(cut)
    got = list(stream)
    stream.close()

    assert 0 < len(got) < len(whole)
    assert _readings(got) == _readings(whole[: len(got)])
    result = run_cli("report", str(cut))
    assert "Traceback" not in result.stderr
    assert result.returncode == 0, result.stderr


def test_an_xz_recording_reads_as_the_plain_one(tmp_path: Path) -> None:
    source = DemoSource("mixed", gpus=2, processes=4)
    path = tmp_path / "run.jsonl"
    with RecordingWriter(path) as writer:
        for _ in range(5):
            writer.write(source.sample())
    packed = tmp_path / "run.jsonl.xz"
    packed.write_bytes(lzma.compress(path.read_bytes()))

    snaps, info, _counters = read_log(packed)
    assert info.format == "recording"
    assert "(xz)" in info.detail
    assert _readings(snaps) == _readings(read_log(path)[0])


@pytest.mark.parametrize(
    ("magic", "says"),
    [
        (b"\x28\xb5\x2f\xfd", "zstd -d FILE"),
        (b"PK\x03\x04", "unzip FILE"),
    ],
)
def test_zstd_and_zip_are_refused_saying_how_to_unpack(
    tmp_path: Path, magic: bytes, says: str
) -> None:
    path = tmp_path / "gpu.log.packed"
    path.write_bytes(magic + bytes(range(256)) * 8)
    with pytest.raises(UnrecognisedFormat) as caught:
        open_stream(path)
    assert says in str(caught.value)
    result = run_cli("report", str(path))
    assert result.returncode == 2
    assert says in result.stderr
    assert "Traceback" not in result.stderr
