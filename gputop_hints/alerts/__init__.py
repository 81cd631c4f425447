"""Alerts (``--notify``): findings that appear or clear, told to a person who is not looking.

:class:`Notifier` is what the monitor, ``record`` and the ``--prometheus`` job
view hold: each tick they hand it the findings and the snapshot; it decides
(:mod:`.engine`), writes the terminal's bytes through the callable it was given
(the TUI's driver, ``record``'s terminal) and queues the command's events
(:mod:`.channels`). No Textual or Rich here: the TUI only writes the bytes.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping

from gputop_hints.alerts.channels import CommandChannel, terminal_bytes
from gputop_hints.alerts.engine import CLEARED, RAISED, AlertEngine, AlertEvent
from gputop_hints.alerts.settings import (
    CHANNELS,
    BadNotifySetting,
    NotifySettings,
    combine,
    parse_channels,
)
from gputop_hints.hints.findings import Finding
from gputop_hints.model import Snapshot

__all__ = [
    "CHANNELS",
    "CLEARED",
    "RAISED",
    "AlertEngine",
    "AlertEvent",
    "BadNotifySetting",
    "Notifier",
    "NotifySettings",
    "combine",
    "parse_channels",
]


class Notifier:
    """The alert engine and its channels, for one run."""

    def __init__(
        self,
        settings: NotifySettings,
        write_terminal: Callable[[str], None] | None,
        on_problem: Callable[[str], None],
        env: Mapping[str, str] = os.environ,
    ) -> None:
        """``write_terminal`` None: no terminal to write to (``bell`` and ``osc`` say
        nothing). ``on_problem``: where a failing command is reported, once."""
        self.settings = settings
        self.engine = AlertEngine(settings)
        self._write = write_terminal
        self._terminal_channels = settings.channels & {"bell", "osc"}
        self._in_tmux = bool(env.get("TMUX"))
        self.command = (
            CommandChannel(
                settings.command, settings.command_timeout_s, settings.queue_size, on_problem
            )
            if "cmd" in settings.channels
            else None
        )
        self.sent: list[AlertEvent] = []
        """Every event sent, in order (the last 100)."""

    def tick(self, findings: Iterable[Finding], snapshot: Snapshot) -> list[AlertEvent]:
        """Decide and send this tick's events; returns them."""
        events = self.engine.observe(findings, snapshot)
        for event in events:
            if self._write is not None and self._terminal_channels:
                self._write(terminal_bytes(event, self._terminal_channels, self._in_tmux))
            if self.command is not None:
                self.command.send(event)
        if events:
            self.sent = [*self.sent, *events][-100:]
        return events

    def close(self, wait_s: float | None = None) -> None:
        """Let the command finish what is queued (at most ``wait_s``)."""
        if self.command is not None:
            self.command.close(wait_s)
