"""What ``--notify`` is told: the channels, the command, the hold-off and the rate limits.

The same settings come from the command line (``--notify``, ``--notify-cmd``) and
from the ``notify:`` section of the config file (:mod:`.config`); the command line
wins where both say something.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field

from gputop_hints.hints.findings import Severity

CHANNELS = ("bell", "osc", "cmd")
"""``bell``: the terminal bell (BEL). ``osc``: a desktop notification through the
terminal (OSC 9 and OSC 777). ``cmd``: ``--notify-cmd``, the event as JSON on stdin."""

DEFAULT_TERMINAL_CHANNELS = frozenset({"bell", "osc"})


class BadNotifySetting(ValueError):
    """A ``--notify`` value or ``--notify-cmd`` that cannot be used (the message says why)."""


@dataclass(frozen=True)
class NotifySettings:
    """Whether and how findings become notifications; no channel: nothing is sent."""

    channels: frozenset[str] = field(default_factory=frozenset)
    command: tuple[str, ...] = ()
    """``--notify-cmd`` split as a shell would split it (never run through a shell)."""
    min_severity: Severity = Severity.WARNING
    clear_after_s: float = 60.0
    """A finding gone this long (tick time) is cleared; back sooner, it was never gone."""
    min_interval_s: float = 300.0
    """At most one 'raised' per subject and rule in this span (tick time)."""
    max_per_minute: int = 6
    """At most this many events a minute (tick time), all subjects together."""
    command_timeout_s: float = 10.0
    queue_size: int = 16
    """Events waiting for the command; more are dropped and counted."""

    @property
    def enabled(self) -> bool:
        return bool(self.channels)


def parse_channels(text: str) -> frozenset[str]:
    """``bell,osc,cmd`` (any subset, comma-separated) as a set; BadNotifySetting if unknown."""
    names = [part.strip().lower() for part in text.split(",") if part.strip()]
    unknown = [name for name in names if name not in CHANNELS]
    if unknown:
        raise BadNotifySetting(
            f"unknown notify channel {unknown[0]!r} (choose from {', '.join(CHANNELS)})"
        )
    if not names:
        raise BadNotifySetting(f"no notify channel given (choose from {', '.join(CHANNELS)})")
    return frozenset(names)


def split_command(text: str) -> tuple[str, ...]:
    """``--notify-cmd CMD`` as an argument list (shlex, no shell); BadNotifySetting if empty
    or unbalanced."""
    try:
        argv = tuple(shlex.split(text))
    except ValueError as exc:
        raise BadNotifySetting(f"cannot split the notify command: {exc}") from None
    if not argv:
        raise BadNotifySetting("the notify command is empty")
    return argv


def combine(base: NotifySettings, notify: str | None, notify_cmd: str | None) -> NotifySettings:
    """``base`` (the config file's section) with the command line's ``--notify`` and
    ``--notify-cmd`` over it.

    ``--notify`` alone (no list): the config's channels, else bell and osc; a command
    (from either place) adds ``cmd``. ``--notify-cmd`` alone turns on ``cmd``."""
    from dataclasses import replace

    command = split_command(notify_cmd) if notify_cmd is not None else base.command
    if notify is None:
        channels = base.channels | ({"cmd"} if notify_cmd is not None else set())
    elif notify == "":
        channels = base.channels or DEFAULT_TERMINAL_CHANNELS
        if command:
            channels = channels | {"cmd"}
    else:
        channels = parse_channels(notify)
    if "cmd" in channels and not command:
        raise BadNotifySetting(
            "the cmd channel needs a command: --notify-cmd CMD (or notify.command in the config)"
        )
    return replace(base, channels=frozenset(channels), command=command)
