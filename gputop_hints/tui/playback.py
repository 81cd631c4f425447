"""Pause, and the replay keys: step, speed, jump to the start or end, seek to a time.

A part of :class:`~gputop_hints.tui.app.GputopApp` kept in its own module: the
app owns the sampler or replay thread and the header; these actions only send
commands to that thread and say what happened. The replay keys exist (and show
in the footer) only when replaying.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual.app import App

from gputop_hints.model import Snapshot
from gputop_hints.sampling.replay_time import SeekError, parse_seek, span_text, speed_text
from gputop_hints.sampling.sampler import Sampler
from gputop_hints.tui.widgets.header import HeaderBar, ReplayStatus

if TYPE_CHECKING:  # the replay machinery loads every file reader: only when replaying
    from gputop_hints.sampling.replay_player import ReplayPlayer
    from gputop_hints.sources.replay import ReplaySource

END_OF_RECORDING_NOTE = "End of recording: g goes back to the start, / seeks to a time."


class PlaybackControls(App[None]):
    """Pause for live monitoring and replay; step, speed and seeks for replay."""

    REPLAY_ACTIONS: ClassVar[frozenset[str]] = frozenset(
        {
            "replay_step",
            "replay_faster",
            "replay_slower",
            "replay_start",
            "replay_end",
            "replay_seek",
        }
    )
    """Actions that mean something only while replaying."""

    # Set by the app's constructor and its compose.
    header: HeaderBar
    sampler: Sampler | None
    player: ReplayPlayer | None
    replay: ReplaySource | None
    paused: bool
    replay_ended: bool
    snapshot: Snapshot | None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Replay keys exist (and show in the footer) only when replaying.
        if action in self.REPLAY_ACTIONS:
            return self.replay is not None
        return True

    def action_toggle_pause(self) -> None:
        if self.paused and self.replay_ended:
            self.notify(END_OF_RECORDING_NOTE, timeout=4)
            return
        self.set_paused(not self.paused)

    def set_paused(self, paused: bool) -> None:
        """Pause or resume sampling (or playback), and say so in every header."""
        self.paused = paused
        if self.sampler is not None:
            self.sampler.pause(paused)
        if self.player is not None:
            self.player.pause(paused)
        self.header.set_paused(paused)
        for header in self.screen.query(HeaderBar):
            header.set_paused(paused)

    def replay_status(self) -> ReplayStatus | None:
        """What the header says about the replay (None when not replaying)."""
        replay = self.replay
        if replay is None:
            return None
        read = replay.read_percent if replay.end_time is None else None
        return ReplayStatus(
            replay.speed,
            replay.start_time,
            replay.end_time,
            self.replay_ended,
            None if read is None else int(read),
        )

    def show_replay_status(self) -> None:
        """Bring the replay badge, position and span up to date in every header."""
        status = self.replay_status()
        if status is None:
            return
        self.header.set_replay(status)
        for header in self.screen.query(HeaderBar):
            header.set_replay(status)

    def action_replay_step(self) -> None:
        """One recorded tick forward; pauses first if playing."""
        if self.player is None:
            return
        if not self.paused:
            self.set_paused(True)
        self.player.step()

    def action_replay_faster(self) -> None:
        self._set_speed(2.0)

    def action_replay_slower(self) -> None:
        self._set_speed(0.5)

    def _set_speed(self, factor: float) -> None:
        replay = self.replay
        if replay is None:
            return
        from gputop_hints.sampling.replay_player import clamp_speed

        wanted = clamp_speed(replay.speed * factor)
        if wanted == replay.speed:
            limit = "fastest" if factor > 1 else "slowest"
            self.notify(f"{speed_text(wanted)} is the {limit} replay speed.", timeout=2)
            return
        if self.player is not None:
            self.player.set_speed(wanted)
        else:
            replay.speed = wanted
        self.show_replay_status()

    def action_replay_start(self) -> None:
        if self.player is not None:
            self.player.seek_start()

    def action_replay_end(self) -> None:
        if self.player is not None:
            self.player.seek_end()

    def action_replay_seek(self) -> None:
        # Imported on first use, like the help screen: most runs never seek.
        from gputop_hints.tui.screens.seek_prompt import SeekPrompt

        replay = self.replay
        if replay is None or isinstance(self.screen, SeekPrompt):
            return
        here = self.snapshot.timestamp if self.snapshot is not None else None
        self.push_screen(
            SeekPrompt(span_text(replay.start_time, replay.end_time, here)), self.seek_to
        )

    def seek_to(self, text: str | None) -> None:
        """Jump to the time ``text`` names (the seek prompt's answer); a bad one is
        reported and the position kept."""
        replay = self.replay
        if text is None or replay is None:
            return
        position = self.snapshot.timestamp if self.snapshot is not None else replay.start_time
        try:
            target = parse_seek(
                text, position=position, start=replay.start_time, end=replay.end_time
            )
        except SeekError as exc:
            self.notify(str(exc), title="Seek", severity="error", timeout=6)
            return
        if self.player is not None:
            self.player.seek(target)
