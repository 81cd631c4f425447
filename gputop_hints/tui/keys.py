"""The monitor's keys, in one table: the app's bindings and ``--help``'s key list are
both made from it, so the two cannot drift apart (``--help`` once said ``t theme``
while ``t`` was the tree). No Textual here: ``gputop-hints --help`` must not load it.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Key:
    """One key: what Textual binds, and what a person reads."""

    keys: str
    """Textual's key names, comma-separated ("plus,equals_sign")."""
    action: str
    description: str
    display: str | None = None
    """How the footer and the help write it ("?", "I/T/K"); None: ``keys`` as it is."""
    show: bool = True
    """Shown in the footer."""
    replay: bool = False
    """Only in replay (the app's check_action hides it otherwise)."""
    help: str | None = None
    """What ``--help`` says it does (None: not listed there, e.g. a second key for an
    action already listed)."""
    priority: bool = False
    """Checked before the screens' and widgets' own bindings (Textual's screens bind
    Ctrl+C to copy)."""


KEYS: tuple[Key, ...] = (
    Key("q", "quit", "Quit", help="quit"),
    # As in top, htop and nvitop; 130, what a shell reports for an interrupted program.
    Key("ctrl+c", "interrupt", "Quit", show=False, priority=True),
    Key("question_mark", "help", "Help", display="?", help="help"),
    Key("p", "toggle_pause", "Pause", help="pause"),
    Key("s", "cycle_sort", "Sort", help="sort (worst first, then GPU, VRAM, ...)"),
    Key("r", "reverse_sort", "Reverse", show=False, help="reverse the order"),
    Key("a", "toggle_arguments", "Args", show=False, help="arguments on/off"),
    Key("f", "filter", "Filter", show=False, help="filter by command (also /, not in replay)"),
    Key("u", "cycle_user", "User", show=False, help="one user's processes"),
    Key("N", "cycle_node", "Node", show=False, help="one node (cluster view)"),
    Key("escape", "clear_filters", "Everyone", show=False),
    Key("t", "toggle_tree", "Tree", help="tree of launchers and workers"),
    Key("w", "where_it_waits", "Where", show=False, help="where it waits (its stacks, py-spy)"),
    Key("c", "cycle_theme", "Theme", help="theme"),
    # ghost-memory's way back: who holds /dev/nvidia* (fuser -v), read-only, live only.
    Key("h", "device_holders", "Holders", show=False, help="holders of /dev/nvidia* (fuser -v)"),
    # Signals to the selected process, each after a confirmation (nvitop's keys).
    Key("I", "signal('SIGINT')", "Interrupt", show=False),
    Key("T", "signal('SIGTERM')", "Signal", display="I/T/K", help="signal INT/TERM/KILL"),
    Key("K", "signal('SIGKILL')", "Kill", show=False),
    # Like any terminal program: stop, back to the shell; `fg` resumes.
    Key("ctrl+z", "suspend_process", "Suspend", show=False),
    # Replay only (check_action hides them otherwise). Arrows, home and end stay with
    # the process table.
    Key("space", "toggle_pause", "Pause", show=False, replay=True),
    Key("n", "replay_step", "Step", replay=True, help="step"),
    Key("plus,equals_sign", "replay_faster", "Speed", display="+/-", replay=True, help="speed"),
    Key("minus", "replay_slower", "Slower", show=False, replay=True),
    Key("g", "replay_start", "Start/End", display="g/G", replay=True, help="start/end"),
    Key("G", "replay_end", "End", show=False, replay=True),
    Key("slash,colon", "replay_seek", "Seek", display="/", replay=True, help="seek to a time"),
    Key("slash", "live_filter", "Filter", display="/", show=False),
)


def _shown(key: Key) -> str:
    if key.display is not None:
        return key.display
    return {"question_mark": "?", "escape": "Esc", "space": "Space"}.get(key.keys, key.keys)


def help_lines(width: int = 79) -> list[str]:
    """The key list ``gputop-hints --help`` ends with, from :data:`KEYS`, wrapped."""
    live = [f"{_shown(k)} {k.help}" for k in KEYS if k.help and not k.replay]
    replay = [f"{_shown(k)} {k.help}" for k in KEYS if k.help and k.replay]
    text = [
        "keys in the monitor: " + ", ".join(live) + "; arrows/Enter open a process, Esc "
        "back; Ctrl-C quits with exit status 130; Ctrl-Z suspends (fg resumes).",
        "keys in replay, besides: " + ", ".join(replay) + ".",
    ]
    return [line for paragraph in text for line in textwrap.wrap(paragraph, width)]
