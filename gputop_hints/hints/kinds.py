"""What kind of GPU process this is, from its command line.

Not every GPU process is a training loop with a DataLoader (issue 10 class 3).
An inference server is busy in request bursts and idle in between by design;
advice about input pipelines or forgotten notebooks is wrong for it. Servers
name themselves on their command line: the entry points below are the ones
each project documents (vLLM ``vllm serve`` / ``vllm.entrypoints``, TGI
``text-generation-server`` / ``text-generation-launcher``, SGLang
``sglang.launch_server``, Triton ``tritonserver``, Ollama ``ollama serve`` /
``ollama runner``, llama.cpp ``llama-server``). vLLM V1 runs the model in a
child that retitles itself ``VLLM::EngineCore`` (``VLLM::Worker...`` with
several GPUs; setproctitle rewrites /proc/PID/cmdline): that title is the
GPU process's command line.
"""

from __future__ import annotations

from functools import lru_cache

from gputop_hints.model import GpuProcess, WorkerProcess
from gputop_hints.text import pattern

_SERVERS: tuple[tuple[str, str], ...] = (
    ("vLLM", r"\bvllm(\.entrypoints|\s+serve\b)|\bvllm\b.*\bapi_server\b|^VLLM::"),
    ("TGI", r"text-generation-(server|launcher)\b"),
    ("SGLang", r"\bsglang\.launch_server\b|\bsglang\s+serve\b"),
    ("Triton", r"(^|/)tritonserver\b"),
    ("Ollama", r"(^|/)ollama\s+(serve|runner)\b"),
    ("llama.cpp", r"(^|/)(llama-server|server)\s.*\s-m\s.*\.gguf\b|(^|/)llama-server\b"),
)
"""Each server's expression, compiled at its first use (:func:`text.pattern`)."""

_SERVER_WORDS = ("server", "vllm", "VLLM::", "text-generation-", "sglang", "ollama")
"""What every match of :data:`_SERVERS` holds (``tritonserver``, ``llama-server`` and
``api_server`` hold ``server``): a command line with none of them is no server, told
without an expression -- most are none, and ``--once`` then compiles none of the six."""


def server_name(proc: GpuProcess) -> str | None:
    """The inference server ``proc`` runs ("vLLM", "TGI" ...), or None when it is not one."""
    return _server_in(proc.command or proc.name or "")


@lru_cache(maxsize=4096)
def _server_in(command: str) -> str | None:
    """Matched once per distinct command line: the rules ask every tick, for every process."""
    if not any(word in command for word in _SERVER_WORDS):
        return None
    for name, source in _SERVERS:
        if pattern(source).search(command):
            return name
    return None


def is_server(proc: GpuProcess) -> bool:
    """Whether ``proc`` is an inference server (its idle stretches wait for requests)."""
    # server_name's body inline: asked of every process by several rules every tick.
    return _server_in(proc.command or proc.name or "") is not None


_COMPILE_WORKER = r"torch/_inductor/compile_worker\b"
"""torch.compile's inductor compiles kernels in a SubprocPool whose children run
``torch/_inductor/compile_worker/__main__.py``; a DataLoader worker is a fork of the
main process and has its command line."""


def is_compile_worker(worker: WorkerProcess) -> bool:
    """Whether ``worker`` is one of inductor's compile workers, not a DataLoader worker."""
    return (
        worker.command is not None and pattern(_COMPILE_WORKER).search(worker.command) is not None
    )
