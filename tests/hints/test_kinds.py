"""Which processes are inference servers and compile workers (gputop_hints.hints.kinds)."""

from __future__ import annotations

import pytest

from gputop_hints.hints.kinds import is_compile_worker, is_server, server_name
from gputop_hints.model import GpuProcess, WorkerProcess


def process(command: str) -> GpuProcess:
    return GpuProcess(pid=4242, gpu_index=0, vram_bytes=1 << 30, command=command)


@pytest.mark.parametrize(
    ("command", "name"),
    [
        ("python -m vllm.entrypoints.openai.api_server --model m", "vLLM"),
        ("/usr/bin/vllm serve meta-llama/Llama-3-8B", "vLLM"),
        ("python vllm/api_server.py", "vLLM"),
        ("VLLM::EngineCore", "vLLM"),
        ("text-generation-launcher --model-id m", "TGI"),
        ("/opt/tgi/text-generation-server serve m", "TGI"),
        ("python -m sglang.launch_server --model-path m", "SGLang"),
        ("sglang serve m", "SGLang"),
        ("/opt/tritonserver/bin/tritonserver --model-repository=/models", "Triton"),
        ("ollama serve", "Ollama"),
        ("/usr/local/bin/ollama runner --model /m", "Ollama"),
        ("./llama-server -m model.gguf --port 8080", "llama.cpp"),
        ("/build/bin/server --host 0 -m /models/q4.gguf", "llama.cpp"),
    ],
)
def test_each_server_is_named(command: str, name: str) -> None:
    assert server_name(process(command)) == name
    assert is_server(process(command))


@pytest.mark.parametrize(
    "command",
    [
        "python train.py --epochs 3",
        "sleep 600",
        "python -m torch.distributed.run --nproc 8 train.py",
        "python serve_results.py",  # "serve" alone is no server
        "vllm-benchmark --help",  # vllm, but neither serve nor the entrypoints
        "python my_server.py -m model.bin",  # server, but no .gguf model
        "sglang.bench_serving --backend vllm",  # neither launch_server nor serve
    ],
)
def test_other_commands_are_no_server(command: str) -> None:
    assert server_name(process(command)) is None
    assert not is_server(process(command))


def test_inductor_compile_workers_are_told_from_dataloader_workers() -> None:
    compile_worker = WorkerProcess(
        pid=7,
        command="python /env/lib/torch/_inductor/compile_worker/__main__.py --workers=8",
    )
    loader = WorkerProcess(pid=8, command="python train.py --epochs 3")
    assert is_compile_worker(compile_worker)
    assert not is_compile_worker(loader)
    assert not is_compile_worker(WorkerProcess(pid=9))
