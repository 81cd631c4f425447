"""tensor-cores-idle: busy SMs, idle tensor pipes -- a training job doing its matmuls in FP32.

GPM (Hopper and newer; DCGM ``SMACT`` / ``TENSO`` in a dcgmi log) says what utilization
cannot: SM activity is the share of SM cycles with a warp resident, averaged over the
SMs; tensor activity the share of cycles the tensor (HMMA) pipes were busy. A matmul or
convolution in bf16, fp16 or TF32 runs on the tensor cores, so a training step built of
them keeps the tensor pipes busy a visible share of the time. PyTorch's default for
FP32 matmuls is full FP32 (``torch.backends.cuda.matmul.allow_tf32 = False`` since
1.12): they run on the CUDA cores at a fraction of the tensor cores' rate (H100 SXM:
67 TFLOPS FP32 against ~495 TF32 and ~990 bf16, dense). SMs busy at least
``sm_active_above_percent`` with tensor activity below ``tensor_active_below_percent``
over the window is that: the math is there, the tensor cores sit idle.

Only where both are known, and only for processes that are not inference servers (a
server's precision is its model's, set at load).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from gputop_hints.hints.findings import Evidence, Finding, Severity, Subject
from gputop_hints.hints.kinds import is_server
from gputop_hints.hints.rules.signals import sm_active, tensor_active
from gputop_hints.hints.rules.spec import RuleSpec
from gputop_hints.hints.thresholds_base import Hysteresis, threshold
from gputop_hints.hints.window import GIB, Window
from gputop_hints.model import METRIC_PROCESSES, METRIC_VRAM

if TYPE_CHECKING:
    from gputop_hints.hints.thresholds import Thresholds

ID = "tensor-cores-idle"


@dataclass(frozen=True)
class TensorCoresIdle:
    """tensor-cores-idle's thresholds: the ``tensor_cores_idle:`` section of defaults.yaml."""

    sm_active_above_percent: float = field(
        metadata=threshold(0, 100, "%", "GPM SM active at or above this (the SMs do work) ...")
    )
    tensor_active_below_percent: float = field(
        metadata=threshold(0, 100, "%", "... with GPM tensor active below this (~0)")
    )
    hysteresis: Hysteresis


def check(win: Window, t: Thresholds) -> list[Finding]:
    """Busy SMs with idle tensor pipes under a training process."""
    c = t.tensor_cores_idle
    min_vram = t.general.min_vram_gib * GIB
    out: list[Finding] = []
    for proc in win.processes():
        if is_server(proc) or (proc.vram_bytes or 0) < min_vram:
            continue
        active = sm_active(win, proc.gpu_index)
        tensor = tensor_active(win, proc.gpu_index)
        if active is None or tensor is None:
            continue
        if active < c.sm_active_above_percent or tensor >= c.tensor_active_below_percent:
            continue
        out.append(
            Finding(
                rule=ID,
                subject=Subject(proc.gpu_index, proc.pid),
                severity=Severity.WARNING,
                label="tensor cores idle",
                summary=(
                    f"GPU {proc.gpu_index}'s SMs hold work {active:.0f} % of the time but its "
                    f"tensor cores are busy {tensor:.1f} % (GPM): the matmuls run in FP32 on the "
                    "CUDA cores, at a fraction of what the tensor cores do in bf16, fp16 or "
                    "TF32."
                ),
                advice=(
                    "Train in bf16 autocast: with torch.autocast('cuda', dtype=torch.bfloat16): "
                    "(fp16 with a GradScaler on GPUs without bf16).",
                    "Or let FP32 matmuls use TF32: torch.backends.cuda.matmul.allow_tf32 = True "
                    "(and torch.backends.cudnn.allow_tf32 = True), or "
                    'torch.set_float32_matmul_precision("high").',
                    "If the model has few matmuls (elementwise, scatter, sorting), the tensor "
                    "cores have little to do: profile a step to see where the time goes.",
                ),
                evidence=(
                    Evidence(
                        "SM active % (GPM, mean)",
                        active,
                        f">= {c.sm_active_above_percent:g} (the SMs do work)",
                    ),
                    Evidence(
                        "tensor active % (GPM, mean)",
                        tensor,
                        f"< {c.tensor_active_below_percent:g} (tensor pipes idle)",
                    ),
                ),
            )
        )
    return out


SPEC = RuleSpec(
    id=ID,
    check=check,
    thresholds_class=TensorCoresIdle,
    title="Tensor cores idle",
    sentence=(
        "With GPM: the SMs are busy but the tensor cores do nothing -- the matmuls run in FP32 "
        "on the CUDA cores; bf16 autocast or TF32 puts them on the tensor cores."
    ),
    subject="process",
    needs=(METRIC_VRAM, METRIC_PROCESSES),
    needs_profiling=True,
    judges_level=True,
)
