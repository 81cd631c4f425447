"""Known loads on a real GPU, for the real-hardware check (bench/gpu_check.sh).

Each load runs one mechanism for ``--seconds`` on CUDA device 0, so that what the
monitor records beside it has a known cause (the load's name is the ground truth of
tests/real/test_real_gpu.py). PyTorch is needed (the device machine has it); this
file is never imported by the project or the tests::

    python bench/gpu_loads.py LOAD [--seconds S]

Loads, each with what NVML and GPM should then show (H100/H200):

``bf16-matmul``   8192^2 bf16 matmuls back to back: utilization ~100 %, SM activity
                  high, tensor pipes busy -- compute-bound, nothing to fix.
``fp32-matmul``   the same in full FP32 (TF32 off, PyTorch's default for matmuls):
                  SMs busy, tensor pipes idle -- tensor-cores-idle.
``copy``          2 GiB device-to-device copies: DRAM bandwidth near its peak, few
                  FLOPs -- memory-bound.
``tiny-kernels``  a 256-element add launched back to back: a kernel always running
                  (utilization ~100 %) on one or two of the SMs -- utilization that
                  overstates the work.
``idle-vram``     10 GiB allocated, then nothing -- idle-holding-vram.
``starved``       a conv net fed by a DataLoader with num_workers=0 and a heavy CPU
                  transform: bursts, then idle gaps -- input-starved/num-workers-0.
``small-batch``   a 12-layer MLP on batches of 2: launches set the pace -- small-batch.
``pcie``          256 MiB of pageable host memory to the GPU and back every step --
                  pcie-thrash.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable

import torch  # type: ignore[import-not-found]

GIB = 2**30


def _until(seconds: float) -> Callable[[], bool]:
    end = time.monotonic() + seconds
    return lambda: time.monotonic() < end


def matmul(seconds: float, dtype: torch.dtype, tf32: bool) -> None:
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32
    a = torch.randn(8192, 8192, device="cuda", dtype=dtype)
    b = torch.randn(8192, 8192, device="cuda", dtype=dtype)
    going = _until(seconds)
    while going():
        for _ in range(8):
            c = a @ b
        torch.cuda.synchronize()
    del c


def copy(seconds: float) -> None:
    x = torch.empty(2 * GIB, dtype=torch.uint8, device="cuda")
    y = torch.empty_like(x)
    going = _until(seconds)
    while going():
        for _ in range(16):
            y.copy_(x)
        torch.cuda.synchronize()


def tiny_kernels(seconds: float) -> None:
    x = torch.zeros(256, device="cuda")
    going = _until(seconds)
    while going():
        for _ in range(2000):
            x.add_(1.0)
        torch.cuda.synchronize()


def idle_vram(seconds: float) -> None:
    held = torch.empty(10 * GIB, dtype=torch.uint8, device="cuda")
    held.fill_(1)
    torch.cuda.synchronize()
    time.sleep(seconds)
    del held


class _Heavy(torch.utils.data.Dataset):  # type: ignore[misc]
    """Images built on the CPU with a costly transform per sample (a few ms)."""

    def __len__(self) -> int:
        return 1 << 20

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        g = torch.Generator().manual_seed(i)
        img = torch.rand(3, 224, 224, generator=g)
        for _ in range(6):  # a blur and a normalisation, repeated: the augmentation
            img = torch.nn.functional.avg_pool2d(img[None], 3, 1, 1)[0]
            img = (img - img.mean()) / (img.std() + 1e-6)
        return img, i % 10


def starved(seconds: float) -> None:
    torch.set_num_threads(1)  # one core, as a DataLoader-less loop uses
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 64, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.Conv2d(64, 64, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(64, 10),
    ).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = torch.utils.data.DataLoader(_Heavy(), batch_size=32, num_workers=0)
    going = _until(seconds)
    for x, y in loader:
        if not going():
            break
        loss = torch.nn.functional.cross_entropy(model(x.cuda()), y.cuda())
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss.item()


def small_batch(seconds: float) -> None:
    layers: list[torch.nn.Module] = []
    for _ in range(12):
        layers += [torch.nn.Linear(512, 512), torch.nn.ReLU()]
    model = torch.nn.Sequential(*layers).cuda()
    opt = torch.optim.Adam(model.parameters())
    x = torch.randn(2, 512, device="cuda")
    going = _until(seconds)
    while going():
        loss = model(x).square().mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        loss.item()


def pcie(seconds: float) -> None:
    host = torch.empty(256 * 2**20, dtype=torch.uint8)  # pageable
    host.fill_(1)
    weights = torch.randn(1024, 1024, device="cuda")
    going = _until(seconds)
    while going():
        dev = host.to("cuda")
        weights.add_(dev[: 4 * 2**20].view(torch.float32).view(1024, 1024), alpha=1e-9)
        host.copy_(dev)  # and back: a device-to-host copy each step


LOADS: dict[str, Callable[[float], None]] = {
    "bf16-matmul": lambda s: matmul(s, torch.bfloat16, tf32=False),
    "fp32-matmul": lambda s: matmul(s, torch.float32, tf32=False),
    "copy": copy,
    "tiny-kernels": tiny_kernels,
    "idle-vram": idle_vram,
    "starved": starved,
    "small-batch": small_batch,
    "pcie": pcie,
}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("load", choices=sorted(LOADS))
    parser.add_argument("--seconds", type=float, default=40.0)
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("gpu_loads.py: no CUDA device", file=sys.stderr)
        return 2
    LOADS[args.load](args.seconds)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
