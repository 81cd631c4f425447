"""PyTorch's ``torch.cuda.memory_allocated()`` / ``memory_reserved()`` in a log are
tensors (or the allocator's cache), less than the VRAM NVML/nvidia-smi shows used:
never read as VRAM used, by the log-line reader nor the CSV reader, and said so."""

from __future__ import annotations

from pathlib import Path

from tests.sources.files.test_real_shapes import FIXTURES
from tests.support.logs import read_log as load

GB = 2**30


def test_log_lines_leave_gpu_memory_allocated_unread() -> None:
    snaps, info, counters = load(FIXTURES / "kv_torch_allocated.log")
    assert [len(s.gpus) for s in snaps] == [2, 2, 2, 2]
    gpu0, gpu1 = snaps[0].gpus
    assert gpu0.vram_used_bytes == round(31.2 * GB)  # 'mem', not 'gpu_memory_allocated'
    assert gpu0.vram_total_bytes == round(80 * GB)
    assert gpu1.vram_used_bytes is None  # only the allocator's 18.1GB: unknown, not that
    assert (gpu1.sm_percent, gpu1.temperature_c) == (93, 58)
    assert "gpu_memory_allocated, gpu_memory_reserved: a caching allocator's figure" in info.detail
    assert "gpu_memory_allocated (vram_used)" not in info.detail
    assert counters.bad_lines == 0


def test_a_csv_allocator_column_is_left_unread_and_said(tmp_path: Path) -> None:
    path = tmp_path / "train.csv"
    path.write_text(
        "time,gpu_util,gpu_mem_alloc_mb,max_memory_reserved_mb\n"
        "1733306400,90,18000,22000\n1733306410,91,18100,22000\n"
    )
    snaps, info, _ = load(path)
    assert [s.gpus[0].vram_used_bytes for s in snaps] == [None, None]
    assert [s.gpus[0].sm_percent for s in snaps] == [90, 91]
    assert "gpu_mem_alloc_mb: a caching allocator's figure" in info.detail
    assert "max_memory_reserved_mb: a caching allocator's figure" in info.detail
