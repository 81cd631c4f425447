"""The ``?`` screen: what each metric means (the packaged metrics guide), the replay
keys, and what each hint means.

The hints section is generated from the rule catalogue, so a new rule shows up
here with no edit to this file.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import ClassVar

from rich.markdown import Markdown as RichMarkdown
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from gputop_hints.hints.catalogue import CATALOGUE
from gputop_hints.hints.findings import Severity
from gputop_hints.tui.hint_text import GPU_LEVEL_PREFIX, SEVERITY_MARK
from gputop_hints.tui.widgets.footer import KeysFooter

_MISSING = """\
# What each metric means

The metrics guide (`docs/metrics.md`) is not installed with this copy of
gputop-hints. It is in the project's repository under `docs/`.
"""


def load_metrics_doc() -> str:
    """The metrics guide as Markdown.

    Installed wheels carry it as ``gputop_hints/_data/metrics.md``; a source
    checkout or editable install reads the repository's ``docs/metrics.md``.
    """
    packaged = resources.files("gputop_hints") / "_data" / "metrics.md"
    if packaged.is_file():
        return packaged.read_text(encoding="utf-8")
    repo_copy = Path(__file__).resolve().parents[3] / "docs" / "metrics.md"
    if repo_copy.is_file():
        return repo_copy.read_text(encoding="utf-8")
    return _MISSING


def profiling_help() -> str:
    """The "Inside utilization" section: the GPM rows of a GPU panel, against SM %."""
    lines = [
        "## Inside utilization: SM active, occupancy, tensor, DRAM (GPM)",
        "",
        "On Hopper and newer GPUs (H100, H200, B200; driver R520+) each GPU panel adds "
        "four rows under TX, each a sparkline on a fixed 0-100 % scale, from NVML's GPU "
        "Performance Monitoring (the counters DCGM's profiling fields read). They say "
        "what the SM row cannot:",
        "",
        "| row | what it is | how it differs from SM % |",
        "|---|---|---|",
        "| `SM` (utilization.gpu) | share of time one or more kernels ran | one tiny "
        "kernel running all the time reads 100 % |",
        "| `SMACT` (SM active) | share of SM cycles with at least one warp resident, "
        "averaged over all SMs | a kernel that fills 2 of 132 SMs reads ~2 %, not 100 % |",
        "| `OCC` (occupancy) | resident warps as a share of the maximum warps the SMs "
        "can hold | how full the active SMs are: latency hiding, not speed |",
        "| `TENS` (tensor active) | share of cycles the tensor-core pipes were busy | ~0 "
        "with busy SMs: matmuls in FP32 on the CUDA cores (bf16 autocast or TF32 would "
        "use the tensor cores) |",
        "| `DRAM` (DRAM active) | share of cycles the device memory interface was busy "
        "sending or receiving data | a bandwidth share (100 % = peak; ~80-90 % is the "
        "practical ceiling of HBM), where MEM is a time share |",
        "",
        "Where the GPU has GPM but cannot give it here, one line says `GPM n/a` and why "
        "(not four rows of n/a); a GPU without GPM (A100 and older), the demo and logs "
        "without profiling fields show nothing in their place -- except `--demo gpm`, "
        "whose simulated H100s show all four rows. Profiling counters are "
        "restricted to administrators on many machines: a site enables them for every "
        "user with the nvidia kernel module option "
        "`NVreg_RestrictProfilingToAdminUsers=0` (for example "
        "`options nvidia NVreg_RestrictProfilingToAdminUsers=0` in "
        "`/etc/modprobe.d/nvidia-profiling.conf`, then reload the module or reboot). "
        "Where they are known, collective-hang, utilization-overstated, small-batch and "
        "memory-bound decide on them, and tensor-cores-idle runs.",
    ]
    return "\n".join(lines) + "\n"


def hints_help() -> str:
    """The "Hints" section: how to read the HINT column, then one sentence per rule."""
    info = SEVERITY_MARK[Severity.INFO]
    warning = SEVERITY_MARK[Severity.WARNING]
    critical = SEVERITY_MARK[Severity.CRITICAL]
    prefix = GPU_LEVEL_PREFIX.strip()
    lines = [
        "## Hints",
        "",
        "The HINT column says, beside each process, what most likely holds it back. "
        "Each cell starts with a severity mark, drawn in the theme's severity colour: "
        f"`{critical}` critical, `{warning}` warning, `{info}` info. A cell that starts "
        f"with `{prefix}` is about the whole GPU the process runs on (for example "
        "memory-bound kernels), not the process itself. An empty cell means no rule "
        "holds. A hint appears only after its condition has held for a while and "
        "clears only after it has stopped holding for a while, so it does not flicker.",
        "",
        "Each GPU panel shows its worst whole-GPU hint at the right of its title row, "
        "with `+N` for the others; the compact one-line-per-GPU layout shows the mark "
        "and the rule's name. Whole-GPU info (healthy, overlap) stays in the panel; only "
        "warnings and worse reach the HINT column. When SM % + memory-access % passes "
        "100 (the `overlap_explained` threshold) the MEM row (compact: `Σ`) says the "
        "two overlap.",
        "",
        "Press Enter on a process for all its hints and its GPU's: why, the evidence "
        "(metric, value, threshold, whether it was met, and whose numbers they are -- "
        "*process*, the whole *device*, or the *host*), what to change, since when, "
        "and the section of `docs/hints.md` that explains the rule. `s` can sort the "
        "table by HINT, worst first.",
        "",
        "Every threshold comes from YAML: print the defaults with "
        "`gputop-hints config --print-defaults`, copy and edit them, and pass the file "
        "with `--config` (see `docs/config.md`).",
        "",
        "### The rules",
        "",
    ]
    for rule in CATALOGUE:
        about = "whole GPU" if rule.subject == "gpu" else "process"
        lines.append(f"- **{rule.title}** (`{rule.rule}`, {about}): {rule.sentence}")
    return "\n".join(lines) + "\n"


def replay_help() -> str:
    """The "Replay" section: the keys of ``gputop-hints replay FILE``."""
    lines = [
        "## Replay",
        "",
        "`gputop-hints replay FILE` plays a recording back in this monitor. The header "
        "shows a REPLAY badge with the speed, the recorded date and time of the tick on "
        "screen, and the recording's first and last tick. Hints are computed from the "
        "recorded ticks exactly as they were live.",
        "",
        "| key | does |",
        "|---|---|",
        "| `space` / `p` | pause / resume |",
        "| `n` | one recorded tick forward (pauses first) |",
        "| `+` / `-` | speed ×2 / ÷2, from 1× (real time) to 64× |",
        "| `g` / `G` | jump to the start / the end |",
        "| `/` or `:` | seek to a time: `HH:MM:SS`, `YYYY-mm-dd HH:MM:SS`, or an offset "
        "from the tick on screen such as `+10m`, `-30s`, `+1h30m` |",
        "",
        "At high speed several recorded ticks go through the hints per screen refresh "
        "(at most four refreshes a second). After a jump, graphs and hints start over "
        "from the window before the new position, so they are full at once. At the end "
        "of the file playback pauses and says *end of recording*; the monitor stays "
        "open. Arrows, `home` and `end` move in the process table as usual.",
    ]
    return "\n".join(lines) + "\n"


def keys_help() -> str:
    """The "Process tree and signals" section: ``t``, the fold keys and I/T/K."""
    lines = [
        "## Process tree and signals",
        "",
        "| key | does |",
        "|---|---|",
        "| `t` | process tree on / off: GPU processes under the launcher that started them "
        "(torchrun, `python -m torch.distributed.run`, deepspeed, accelerate launch, mpirun, "
        "srun), DataLoader workers under each rank |",
        "| `→` / `←` | in the tree: unfold / fold the selected row; `←` on a child goes to "
        "its parent; `Enter` on a launcher folds or unfolds it |",
        "| `s` / `r` | next sort column / reverse the order (unknown values stay last) |",
        "| `a` | hide / show the commands' arguments: the program and the script or `-m` "
        "module it runs |",
        "| `u` | list everyone's processes, only yours, or each other user's in turn "
        "(`--user NAME` starts on one) |",
        "| `/` (`f` in replay) | list only processes whose command line holds a text |",
        "| `N` | a job across nodes (`--prometheus`): only one node's GPUs, each node in "
        "turn, then all |",
        "| `Esc` | every process again (clears the user and command filters) |",
        "| mouse | click a row to select it, a column title to sort by it (again: reverse) |",
        "| `w` | where the selected process waits: its Python stacks read with py-spy, in "
        "its detail view (docs/stacks.md) |",
        "| `h` | who holds the GPUs' device files: `fuser -v /dev/nvidia*` run once, shown "
        "read-only (live only; docs/hints.md#ghost-memory) |",
        "| `c` | next colour theme |",
        "| `I` / `T` / `K` | send SIGINT / SIGTERM / SIGKILL to the selected row's process |",
        "",
        "A launcher row's HINT cell rolls up its ranks' own findings: the worst, and "
        "`N on M` when there are N findings on M ranks.",
        "",
        "A signal is never sent on one key press: a confirmation names the pid, the user "
        "and the command, and only `y` sends it (`n` or `Esc` cancels). The result is "
        "shown: sent, *not permitted* (another user's process, as the OS decides), or "
        "*no such process*. With `--readonly` signals are disabled entirely and the keys "
        "say so; in the demo and in replay they are refused too, since those pids are "
        "not this machine's processes.",
    ]
    return "\n".join(lines) + "\n"


def help_text(replay: bool = False) -> str:
    """Everything ``?`` shows: the metrics guide, the replay keys, then the hints
    (the replay keys first when replaying)."""
    metrics = load_metrics_doc().rstrip("\n") + "\n\n" + profiling_help() + "\n"
    if replay:
        return replay_help() + "\n" + metrics + keys_help() + "\n" + hints_help()
    return metrics + keys_help() + "\n" + replay_help() + "\n" + hints_help()


class HelpScreen(Screen[None]):
    """The metrics guide and the hints, scrollable; Esc (or ? again) goes back."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("question_mark", "app.pop_screen", "Back", key_display="?", show=False),
    ]

    def __init__(self, replay: bool = False) -> None:
        super().__init__()
        self._replay = replay
        # Kept by reference, not looked up: a paste full of `?` and Esc can show and
        # hide this screen faster than it mounts, and a query then finds nothing.
        self._scroll = VerticalScroll(id="help-scroll")

    def compose(self) -> ComposeResult:
        with self._scroll:
            # One widget rendering the whole guide (Rich's Markdown), not Textual's
            # Markdown widget, which builds one widget per block -- hundreds, each
            # restyled on every theme change and torn down on quit.
            yield Static(RichMarkdown(help_text(self._replay)), id="help-doc")
        yield KeysFooter()

    def on_screen_resume(self) -> None:
        # The app builds this screen once and shows it again on every `?`.
        self._scroll.focus()
