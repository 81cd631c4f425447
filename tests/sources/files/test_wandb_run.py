"""W&B's binary run file (``run-<id>.wandb``): its system-metrics records.

The fixture was written by wandb 0.19.11's own ``DataStore`` and protobuf classes
(tests/fixtures/import/README.md); the expected figures are the formulas its values
were written from, repeated here, and the chunk layout is walked with ``struct``
here, not by the reader under test."""

from __future__ import annotations

import gzip
import shutil
import struct
import zlib
from pathlib import Path

import pytest

from gputop_hints.sources.files import UnrecognisedFormat, open_stream
from tests.support.cli import run_cli
from tests.support.paths import FIXTURES

RUN_FILE = FIXTURES / "import" / "run-g7x2k9qa.wandb"
T0 = 1733300000
SAMPLES = 42
GIB = 2**30


def _written(k: int, i: int) -> dict[str, float]:
    """GPU ``i``'s values in the fixture's ``k``-th stats record, as they were written."""
    alloc = (20 + (k % 40) + i * 5) * GIB // 4
    return {
        "sm": float((k * 7 + i * 31) % 101),
        "mem": float((k * 3 + i * 11) % 61),
        "vram": float(alloc),
        "temp": 40.0 + (k + i) % 30,
        "power": 100.0 + (k * 13 + i * 7) % 500 + 0.25,
    }


def _chunks(data: bytes) -> list[tuple[int, int, int]]:
    """(offset, length, type) of each chunk: 7-byte file header, 32 KiB blocks."""
    out = []
    pos = 7
    while pos + 7 <= len(data):
        room = 32768 - pos % 32768
        if room < 7:
            pos += room
            continue
        _crc, length, kind = struct.unpack_from("<IHB", data, pos)
        if kind == 0:
            pos += room
            continue
        out.append((pos, length, kind))
        pos += 7 + length
    return out


def test_a_wandb_run_file_reads_every_system_sample_as_written() -> None:
    stream = open_stream(RUN_FILE)
    assert stream.info.format == "wandb-run"
    assert stream.info.hostname == "trainbox-01"
    assert stream.info.gpu_count == 2
    assert stream.info.interval_s == 15.0
    assert "processes" in stream.info.missing and "sm" not in stream.info.missing
    snaps = list(stream)
    assert len(snaps) == SAMPLES
    for k, snap in enumerate(snaps):
        assert snap.timestamp == T0 + 15 * (k + 1)
        assert snap.host.cpu_percent_per_core == (50.0 + k % 7, 20.0 + k % 5)
        for i in range(2):
            gpu = snap.gpu(i)
            want = _written(k, i)
            assert gpu is not None
            assert gpu.sm_percent == want["sm"]
            assert gpu.memory_access_percent == want["mem"]
            assert gpu.vram_used_bytes == want["vram"]
            assert gpu.vram_total_bytes == 80 * GIB
            assert gpu.temperature_c == want["temp"]
            assert gpu.power_watts == want["power"]
            assert gpu.power_limit_watts == 700.0
            assert gpu.sm_clock_mhz == 1980
    assert stream.counters.bad_lines == 0
    cpu = stream.counters.found["system_cpu_percent"]
    assert isinstance(cpu, dict)
    assert cpu["all"]["n"] == SAMPLES
    assert cpu["all"]["mean"] == pytest.approx(sum(12.5 + k % 10 for k in range(SAMPLES)) / SAMPLES)


def test_the_fixture_holds_a_record_split_across_a_block_boundary() -> None:
    kinds = [kind for _at, _n, kind in _chunks(RUN_FILE.read_bytes())]
    assert kinds.count(2) == 1 and kinds.count(4) == 1  # one FIRST, one LAST


def test_a_gzipped_run_file_reads_the_same(tmp_path: Path) -> None:
    packed = tmp_path / "run-g7x2k9qa.wandb.gz"
    packed.write_bytes(gzip.compress(RUN_FILE.read_bytes()))
    stream = open_stream(packed)
    assert stream.info.format == "wandb-run"
    assert [s.gpus for s in stream] == [s.gpus for s in open_stream(RUN_FILE)]


def test_wandb_run_bad_checksum_skips_that_record_and_keeps_the_rest(tmp_path: Path) -> None:
    data = bytearray(RUN_FILE.read_bytes())
    big = [(at, n) for at, n, kind in _chunks(bytes(data)) if kind == 1 and n > 500]
    at, length = big[10]  # the 11th stats record
    data[at + 7 + length // 2] ^= 0xFF
    broken = tmp_path / "run-broken.wandb"
    broken.write_bytes(bytes(data))
    stream = open_stream(broken)
    snaps = list(stream)
    assert len(snaps) == SAMPLES - 1
    assert stream.counters.bad_lines == 1
    assert stream.counters.first_bad_reason == f"byte {at}: checksum mismatch"
    kept = [s.timestamp for s in snaps]
    assert T0 + 15 * 11 not in kept and T0 + 15 * 12 in kept


@pytest.mark.parametrize("cut", [34000, 32800, 32768, 20001])
def test_wandb_run_file_cut_mid_record_reads_up_to_the_cut(tmp_path: Path, cut: int) -> None:
    data = RUN_FILE.read_bytes()
    whole = [(at, n) for at, n, kind in _chunks(data) if kind in (1, 4)]
    complete = [at for at, n in whole if at + 7 + n <= cut]
    cut_file = tmp_path / "run-cut.wandb"
    cut_file.write_bytes(data[:cut])
    stream = open_stream(cut_file)
    snaps = list(stream)
    full = list(open_stream(RUN_FILE))
    assert [(s.timestamp, s.gpus) for s in snaps] == [
        (s.timestamp, s.gpus) for s in full[: len(snaps)]
    ]
    # Every complete record but the run's first 2 (header, run) and the history ones.
    assert 0 < len(snaps) < len(full) and len(snaps) <= len(complete) - 2
    assert stream.counters.bad_lines == 1
    assert stream.counters.first_bad_reason is not None
    assert "the file ends inside" in stream.counters.first_bad_reason
    result = run_cli("report", str(cut_file))
    assert result.returncode == 0, result.stderr
    assert "Traceback" not in result.stderr


def test_wandb_run_header_and_junk_counts_bad_records_without_a_traceback(
    tmp_path: Path,
) -> None:
    junk = tmp_path / "run-junk.wandb"
    junk.write_bytes(RUN_FILE.read_bytes()[:7] + bytes(range(256)) * 40)
    stream = open_stream(junk)
    assert stream.info.format == "wandb-run"
    assert list(stream) == []
    assert stream.counters.bad_lines >= 1
    result = run_cli("report", str(junk))
    assert "Traceback" not in result.stderr


def test_other_binary_files_are_still_refused_and_text_is_not_a_run_file(
    tmp_path: Path,
) -> None:
    other = tmp_path / "data.bin"
    other.write_bytes(b":W&C" + bytes(range(256)) * 40)
    with pytest.raises(UnrecognisedFormat, match="not a text log"):
        open_stream(other)
    text = tmp_path / "gpu.csv"
    shutil.copy(FIXTURES / "import" / "nvsmi_full_2gpu.csv", text)
    with pytest.raises(UnrecognisedFormat, match="no W&B run file header"):
        open_stream(text, format="wandb-run")
    with pytest.raises(UnrecognisedFormat, match="not a text log"):
        open_stream(RUN_FILE, format="csv")


def test_report_on_a_wandb_run_file() -> None:
    result = run_cli("report", str(RUN_FILE))
    assert result.returncode == 0, result.stderr
    assert "trainbox-01" in result.stdout
    assert "42 samples every 15 s" in result.stdout


def _varint(n: int) -> bytes:
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    return bytes([*out, n])


def _pb(number: int, payload: bytes) -> bytes:
    """A length-delimited protobuf field."""
    return _varint(number << 3 | 2) + _varint(len(payload)) + payload


def _run_file(records: list[bytes]) -> bytes:
    """``records`` framed as W&B's writer frames them: 7-byte file header, 32 KiB
    blocks, FULL or FIRST/MIDDLE/LAST chunks, zero padding under 7 bytes."""
    out = bytearray(b":W&B" + struct.pack("<HB", 0xBEE1, 0))
    for record in records:
        rest, first = record, True
        while True:
            room = 32768 - len(out) % 32768
            if room < 7:
                out += bytes(room)
                room = 32768
            piece, rest = rest[: room - 7], rest[room - 7 :]
            kind = (1 if first else 4) if not rest else (2 if first else 3)
            crc = zlib.crc32(bytes([kind]) + piece)
            out += struct.pack("<IHB", crc, len(piece), kind) + piece
            first = False
            if not rest:
                break
    return bytes(out)


def _stats(seconds: int, items: dict[str, str]) -> bytes:
    body = _pb(2, b"\x08" + _varint(seconds))
    body += b"".join(_pb(3, _pb(1, k.encode()) + _pb(16, v.encode())) for k, v in items.items())
    return _pb(7, body)


def test_node_labels_long_records_and_prefixed_keys(tmp_path: Path) -> None:
    """Samples after a 100 KB record (FIRST, MIDDLE, LAST; past the 64 KiB head):
    a key's node label read for the first label only; ``system.`` keys as they are."""
    console = _pb(4, _pb(2, b"x" * 100_000))  # an OutputRecord's line
    records = [console] + [
        _stats(
            1_700_000_000 + 15 * k,
            {
                "gpu.0.gpu/l:node-a": str(10 + k),
                "gpu.0.gpu/l:node-b": str(90 - k),
                "system.gpu.1.temp": str(50.5 + k),
                "gpu.1.gpu": '"not a number"',
            },
        )
        for k in range(3)
    ]
    path = tmp_path / "run-labels.wandb"
    data = _run_file(records)
    assert [kind for _at, _n, kind in _chunks(data)][:4] == [2, 3, 3, 4]
    path.write_bytes(data)
    stream = open_stream(path)
    assert stream.info.format == "wandb-run"
    assert stream.info.gpu_count == 2
    assert "node label 'node-a' read" in stream.info.detail
    snaps = list(stream)
    assert [s.timestamp for s in snaps] == [1_700_000_000 + 15 * k for k in range(3)]
    assert [g.sm_percent for s in snaps if (g := s.gpu(0))] == [10.0, 11.0, 12.0]
    assert [g.temperature_c for s in snaps if (g := s.gpu(1))] == [50.5, 51.5, 52.5]
    assert [g.sm_percent for s in snaps if (g := s.gpu(1))] == [None, None, None]
    assert stream.counters.found["wandb_node_labels_skipped"] == ["node-b"]
    assert stream.counters.bad_lines == 0
