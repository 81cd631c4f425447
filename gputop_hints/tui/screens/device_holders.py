"""The ``h`` screen: who holds the GPU device files (``fuser -v /dev/nvidia*``), read-only.

The listing ghost-memory's advice names, run for the user when asked: the run itself is
:mod:`gputop_hints.sources.live.device_holders` (in a thread, so the monitor keeps
drawing); this screen only shows what it gave, every character from outside made
visible. Nothing here signals anything. On a demo, replay or Prometheus source it says
why it does not run instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Static

from gputop_hints.hints.findings import Finding
from gputop_hints.sources.live.device_holders import DEVICE_GLOB, Holders, list_holders
from gputop_hints.text import visible, visible_lines
from gputop_hints.tui.widgets.footer import KeysFooter

TITLE = "Holders of the GPU device files -- read-only, nothing is signalled"


class DeviceHoldersScreen(Screen[None]):
    """fuser's listing, or why it was not run; Esc (or ``h`` again) goes back."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "app.pop_screen", "Back"),
        Binding("h", "app.pop_screen", "Back", show=False),
    ]

    def __init__(
        self,
        refused: str | None,
        findings: Sequence[Finding] = (),
        pattern: str = DEVICE_GLOB,
    ) -> None:
        super().__init__()
        self.refused = refused
        """Why fuser is not run here (:func:`device_holders.refusal`); None: it is."""
        self.pattern = pattern
        self.holders: Holders | None = None
        """fuser's result once it has come back."""
        self._findings = tuple(findings)
        self._body = Static(id="holders-text", markup=False)
        self.text = ""
        """What the screen shows now."""

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="holders-scroll"):
            yield self._body
        yield KeysFooter()

    def on_mount(self) -> None:
        if self.refused is not None:
            self._show(self.refused)
            return
        self._show(f"Running fuser -v {self.pattern} ...")
        self.run_worker(self._run, thread=True, exclusive=True)

    def _run(self) -> None:
        holders = list_holders(self.pattern)
        self.app.call_from_thread(self._done, holders)

    def _done(self, holders: Holders) -> None:
        self.holders = holders
        lines = [f"$ {holders.command}", "", holders.text]
        if holders.unreadable:
            lines += [
                "",
                f"({holders.unreadable} descriptors of other processes could not be read: "
                "run as root to list every holder.)",
            ]
        self._show("\n".join(lines))

    def _show(self, text: str) -> None:
        head = [TITLE, ""]
        if self._findings:
            head.append("ghost-memory now:")
            head += [f"  {_subject(f)}: {visible(f.label)}" for f in self._findings]
            head.append("")
        self.text = "\n".join(head) + visible_lines(text)
        self._body.update(self.text)


def _subject(finding: Finding) -> str:
    s = finding.subject
    return f"GPU {s.gpu_index}" if s.pid is None else f"pid {s.pid} on GPU {s.gpu_index}"
