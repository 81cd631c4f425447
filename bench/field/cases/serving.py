"""Family 2: inference servers and frameworks that pre-allocate device memory.

* vLLM reserves ``gpu_memory_utilization`` (default 0.9) of the GPU at start-up:
  weights, a profiling pass, then the KV cache fills the rest (vLLM docs,
  "Engine arguments"; "Optimization and tuning"). SGLang does the same with
  ``--mem-fraction-static``; TGI sizes its KV cache to the free memory.
* TensorFlow maps nearly all GPU memory at start unless memory growth is set
  (TF guide "Use a GPU: limiting GPU memory growth"); JAX pre-allocates 75 %
  (JAX docs "GPU memory allocation", XLA_PYTHON_CLIENT_MEM_FRACTION).
* A server runs decode steps back to back while requests are in flight
  (continuous batching) and nothing in between: bursts and idle stretches.
  Ollama and llama.cpp hold the model (and context) while loaded.
"""

from __future__ import annotations

from collections.abc import Sequence

from field.case import Case, process, scenario
from field.hardware import A100_40GB, A100_80GB, GIB, H100_80GB, RTX_4090, GpuModel
from field.timeline import VramPoint
from field.verdicts import Expect, Verdict, expect
from field.workloads import Server, TrainLoop

FAMILY = "serving"
DURATION = 480.0


def _startup(total: int, fraction: float, weights: int, load_s: float) -> list[VramPoint]:
    """Weights stream in, a profiling pass, then the KV cache takes the rest at once."""
    return [
        VramPoint(0.0, 600 * 2**20),
        VramPoint(load_s, weights),
        VramPoint(load_s + 8.0, weights + 2 * GIB),
        VramPoint(load_s + 9.0, int(fraction * total)),
    ]


def _server(
    name: str,
    model: GpuModel,
    seed: int,
    command: str,
    vram: int | Sequence[VramPoint],
    server: Server,
    pre_allocated: bool,
    process_name: str = "python",
    workers: int = 0,
    sources: tuple[str, ...] = (),
) -> Case:
    full = f"{FAMILY}/{name}/{model.tag}-s{seed}"
    p = process(
        7100,
        0,
        full,
        DURATION,
        lambda b, r: server.run(b, r, DURATION),
        vram,
        command,
        name=process_name,
        workers=workers,
        user="svc-infer",
    )
    must_show: tuple[Expect, ...] = (
        (expect("vram-preallocated", gpu=0, pid=7100),) if pre_allocated else ()
    )
    return Case(
        full,
        FAMILY,
        scenario([model], [p], DURATION, 1.0, seed, full),
        Verdict(
            top=expect("serving-idle", gpu=0, pid=7100),
            healthy=True,
            must_show=must_show,
            must_not=(
                expect("input-starved"),
                expect("small-batch"),
                expect("idle-holding-vram"),
                expect("vram-near-limit"),
            ),
            why="A server recognisable from its command line, busy in request bursts and idle "
            "between them"
            + (", with VRAM pre-allocated flat from the first minute." if pre_allocated else "."),
        ),
        ("nvml-util", *sources),
    )


def _preallocating_training(
    name: str, model: GpuModel, seed: int, fraction: float, command: str, framework: str
) -> Case:
    full = f"{FAMILY}/{name}/{model.tag}-s{seed}"
    loop = TrainLoop(step_gpu_s=0.3, batch_cpu_s=1.0, workers=6, main_cpu=90.0)
    total = model.vram_total_bytes
    vram = [VramPoint(0.0, 500 * 2**20), VramPoint(4.0, int(fraction * total))]
    p = process(
        7200,
        0,
        full,
        300,
        lambda b, r: loop.run(b, r, 300),
        vram,
        command,
        workers=6,
        frameworks=(framework,),
    )
    return Case(
        full,
        FAMILY,
        scenario([model], [p], 300, 1.0, seed, full),
        Verdict(
            top=expect("compute-bound", gpu=0),
            healthy=True,
            must_show=(expect("vram-preallocated", gpu=0, pid=7200),),
            must_not=(expect("vram-near-limit"),),
            why="The framework maps its default share of device memory within seconds and never "
            "changes it: pre-allocation, not a model about to run out of memory.",
        ),
        ("tf-gpu-guide", "jax-memory"),
    )


def cases() -> list[Case]:
    h100, a100 = H100_80GB.vram_total_bytes, A100_80GB.vram_total_bytes
    return [
        _server(
            "vllm",
            H100_80GB,
            0,
            "python -m vllm.entrypoints.openai.api_server --model meta-llama/Llama-3.1-8B-Instruct"
            " --gpu-memory-utilization 0.9",
            _startup(h100, 0.9, 16 * GIB, 25.0),
            Server(busy_s=20, idle_s=40),
            True,
            sources=("vllm-engine-args",),
        ),
        _server(
            "vllm",
            A100_80GB,
            1,
            "vllm serve Qwen/Qwen2.5-14B-Instruct --max-model-len 8192",
            _startup(a100, 0.9, 28 * GIB, 40.0),
            Server(busy_s=30, idle_s=25),
            True,
            process_name="vllm",
            sources=("vllm-engine-args",),
        ),
        _server(
            "tgi",
            A100_80GB,
            0,
            "/opt/conda/bin/python3.11 /opt/conda/bin/text-generation-server serve "
            "mistralai/Mistral-7B-Instruct-v0.2 --uds-path /tmp/text-generation-server-0",
            _startup(a100, 0.93, 15 * GIB, 30.0),
            Server(busy_s=15, idle_s=45),
            True,
            process_name="text-generation",
            sources=("tgi-docs",),
        ),
        _server(
            "sglang",
            H100_80GB,
            1,
            "python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B-Instruct "
            "--mem-fraction-static 0.88 --port 30000",
            _startup(h100, 0.88, 15 * GIB, 20.0),
            Server(busy_s=25, idle_s=35),
            True,
            sources=("sglang-args",),
        ),
        _server(
            "triton",
            RTX_4090,
            0,
            "tritonserver --model-repository=/models --http-port 8000 --grpc-port 8001",
            7 * GIB,
            Server(busy_s=12, idle_s=30, peak_kernel=0.7, power=0.6, memory=0.5),
            False,
            process_name="tritonserver",
            sources=("triton-docs",),
        ),
        _server(
            "ollama",
            RTX_4090,
            1,
            "/usr/local/bin/ollama runner --model /root/.ollama/models/blobs/sha256-6a0746a1ec1a"
            " --ctx-size 8192 --batch-size 512 --n-gpu-layers 33 --threads 8 --parallel 4"
            " --port 39457",
            int(5.8 * GIB),
            Server(busy_s=8, idle_s=45, main_cpu_busy=100.0),
            False,
            process_name="ollama",
            sources=("ollama-docs",),
        ),
        _server(
            "llama-cpp",
            A100_40GB,
            0,
            "./build/bin/llama-server -m models/Meta-Llama-3-8B-Instruct-Q4_K_M.gguf -ngl 99 "
            "-c 8192 --host 0.0.0.0 --port 8080",
            int(6.4 * GIB),
            Server(busy_s=10, idle_s=40, main_cpu_busy=100.0),
            False,
            process_name="llama-server",
            sources=("llama-cpp-server",),
        ),
        _preallocating_training(
            "tensorflow-prealloc",
            A100_40GB,
            0,
            0.975,
            "python -m official.vision.train --experiment=resnet_imagenet --mode=train "
            "--model_dir=/ckpt/resnet",
            "tensorflow",
        ),
        _preallocating_training(
            "jax-prealloc",
            H100_80GB,
            1,
            0.75,
            "python -m big_vision.train --config big_vision/configs/vit_i1k.py --workdir /ckpt/vit",
            "jax",
        ),
    ]
