"""The partial-output patch draws, cell for cell, what Textual's own writer draws.

:mod:`gputop_hints.tui.partial_output` replaces Textual's private
``ChopsUpdate.render_segments`` to send fewer bytes. It is only right while it
means what Textual's method means, so these tests render randomised screens --
seeded random widget trees, contents and styles, at a few sizes, with partial
and whole-widget updates between frames -- and the real monitor, and feed every
frame both ways into a terminal emulator (``pyte``): Textual's method into one
screen, the patch into another. After every frame the two screens must hold the
same characters with the same colours and attributes. A Textual release that
changes what the method must produce fails here, loudly, before anyone sees a
garbled terminal.

The app runs with a driver that is not headless (Textual writes nothing in
headless mode) but discards what it is given: the frames are taken where
Textual turns an update into terminal text.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pyte
import pytest
from rich.console import Console
from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual._compositor import ChopsUpdate, LayoutUpdate
from textual.app import App, ComposeResult
from textual.containers import Horizontal, Vertical
from textual.css.types import EdgeType
from textual.drivers import headless_driver
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget
from textual.widgets import Static

from gputop_hints.sources.demo import DemoSource
from gputop_hints.tui import partial_output
from gputop_hints.tui.app import GputopApp

SIZES = [(40, 12), (80, 24), (131, 37)]
SEEDS = [0, 1, 2, 3]
FRAMES = 14
"""Updates per run; each is drawn before the next is made."""

TEXT = "abcdefghij KLMNOP 0123456789 .,:;-_/|()[]"
SYMBOLS = "▁▂▃▄▅▆▇█│─·‼→"
WIDE = "漢字表示ＧＰＵ"
"""Two cells each: a cut through one must not leave half of it on screen."""
TEXTUAL_FULL: Callable[[Any, Console], str] = LayoutUpdate.render_segments
"""Textual's own full-repaint writer, taken before any test patches it."""
COLOURS = ["#e06c75", "#98c379", "#61afef", "#c678dd", "#282c34", "#d19a66", "#abb2bf"]


class DrawingDriver(headless_driver.HeadlessDriver):
    """Textual's test driver, except that the app believes it draws on a terminal."""

    @property
    def is_headless(self) -> bool:
        return False

    def write(self, data: str) -> None:
        """Drop it: the frames are taken from the updates themselves (see :class:`Frames`)."""


@dataclass
class Frames:
    """Every update as Textual writes it and as the patch writes it, in order."""

    pairs: list[tuple[str, str]] = field(default_factory=list)
    partial: int = 0
    """Updates that were partial (ChopsUpdate): the ones the patch rewrites."""
    shorter: int = 0
    """Partial updates the patch wrote in fewer characters (it cut something)."""


@pytest.fixture
def frames(monkeypatch: pytest.MonkeyPatch) -> Iterator[Frames]:
    """Run apps with :class:`DrawingDriver` and record each frame both ways."""
    recorded = Frames()
    textual_partial: Callable[[Any, Console], str] = ChopsUpdate.render_segments
    textual_full: Callable[[Any, Console], str] = LayoutUpdate.render_segments

    def partial(update: ChopsUpdate, console: Console) -> str:
        theirs = textual_partial(update, console)
        ours = partial_output.render_segments(update, console)
        recorded.pairs.append((theirs, ours))
        recorded.partial += 1
        recorded.shorter += len(ours) < len(theirs)
        return theirs

    def full(update: LayoutUpdate, console: Console) -> str:
        ours = partial_output.render_layout(update, console)  # first: it keeps the strips
        whole = textual_full(update, console)
        recorded.pairs.append((whole, ours))
        return whole

    monkeypatch.setattr(headless_driver, "HeadlessDriver", DrawingDriver)
    monkeypatch.setattr(ChopsUpdate, "render_segments", partial)
    monkeypatch.setattr(LayoutUpdate, "render_segments", full)
    # The monitor would install the patch over the recorder; here it is called directly.
    monkeypatch.setattr(partial_output, "install", lambda: False)
    yield recorded


Cell = tuple[str, str, str, bool, bool, bool, bool, bool]


def cells(screen: pyte.Screen) -> list[list[Cell]]:
    """Every cell's character, colours and attributes."""
    return [
        [
            (c.data, c.fg, c.bg, c.bold, c.italics, c.underscore, c.strikethrough, c.reverse)
            for c in (screen.buffer[y][x] for x in range(screen.columns))
        ]
        for y in range(screen.lines)
    ]


def assert_same_screens(recorded: Frames, size: tuple[int, int]) -> None:
    """Feed both versions of every frame to a terminal each; compare after every frame."""
    assert recorded.pairs, "nothing was drawn"
    width, height = size
    theirs_screen, ours_screen = pyte.Screen(width, height), pyte.Screen(width, height)
    theirs_stream, ours_stream = pyte.Stream(theirs_screen), pyte.Stream(ours_screen)
    for number, (theirs, ours) in enumerate(recorded.pairs):
        theirs_stream.feed(theirs)
        ours_stream.feed(ours)
        expected, actual = cells(theirs_screen), cells(ours_screen)
        if expected != actual:
            y = next(y for y in range(height) if expected[y] != actual[y])
            x = next(x for x in range(width) if expected[y][x] != actual[y][x])
            raise AssertionError(
                f"frame {number}: cell ({x}, {y}) is {actual[y][x]} with the patch, "
                f"{expected[y][x]} without\nwith:    {theirs_screen.display[y]!r}"
                f"\nwithout: {ours_screen.display[y]!r}"
            )


# --- random screens ---------------------------------------------------------------


def random_style(rng: random.Random) -> Style | None:
    if rng.random() < 0.2:
        return None
    return Style(
        color=rng.choice(COLOURS),
        bgcolor=rng.choice([None, *COLOURS]),
        bold=rng.random() < 0.3,
        italic=rng.random() < 0.15,
        underline=rng.random() < 0.15,
        reverse=rng.random() < 0.1,
        strike=rng.random() < 0.05,
    )


def random_text(rng: random.Random) -> str:
    alphabet = rng.choice([TEXT, TEXT + SYMBOLS, TEXT + WIDE, SYMBOLS, WIDE + " "])
    return "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 14)))


def random_segments(rng: random.Random) -> list[Segment]:
    return [Segment(random_text(rng), random_style(rng)) for _ in range(rng.randint(1, 7))]


class RandomLines(Widget):
    """Lines of random styled segments; an update changes part of a line and repaints
    only from that part on, as the monitor's widgets do."""

    def __init__(self, rng: random.Random) -> None:
        super().__init__()
        self.rng = rng
        self.lines = [random_segments(rng) for _ in range(rng.randint(1, 14))]

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if y >= len(self.lines):
            return Strip.blank(width)
        return Strip(self.lines[y]).adjust_cell_length(width)

    def change_some(self) -> None:
        rng = self.rng
        y = rng.randrange(len(self.lines))
        line = self.lines[y]
        keep = rng.randrange(len(line))
        tail = rng.randint(0, len(line) - keep - 1)
        middle = random_segments(rng)[: rng.randint(1, 3)]
        self.lines[y] = line[:keep] + middle + line[len(line) - tail :]
        start = sum(segment.cell_length for segment in line[:keep])
        old_end = sum(segment.cell_length for segment in line[: len(line) - tail])
        new = self.lines[y]
        new_end = sum(segment.cell_length for segment in new[: len(new) - tail])
        if old_end == new_end and rng.random() < 0.6:
            # The tail did not move: only the changed cells, so the right end is cut too.
            self.refresh(Region(start, y, max(1, new_end - start), 1))
        else:
            self.refresh(Region(start, y, max(1, self.size.width - start), 1))


def random_leaf(rng: random.Random) -> Widget:
    leaf: Widget
    if rng.random() < 0.7:
        leaf = RandomLines(rng)
    else:
        leaf = Static(Text(random_text(rng) * rng.randint(1, 6), style=random_style(rng) or ""))
    if rng.random() < 0.3:
        kind: EdgeType = rng.choice(["round", "solid", "heavy", "ascii"])
        leaf.styles.border = (kind, rng.choice(COLOURS))
    if rng.random() < 0.3:
        leaf.styles.padding = (0, rng.randint(1, 3))
    if rng.random() < 0.5:
        leaf.styles.background = rng.choice(COLOURS)
    leaf.styles.width = rng.choice(["1fr", "2fr", str(rng.randint(3, 30))])
    leaf.styles.height = rng.choice(["1fr", str(rng.randint(1, 10))])
    return leaf


class RandomScreenApp(App[None]):
    """Rows of random leaves and columns of leaves, changed at random between frames."""

    def __init__(self, seed: int) -> None:
        super().__init__()
        self.rng = random.Random(seed)

    def compose(self) -> ComposeResult:
        rng = self.rng
        for _ in range(rng.randint(1, 3)):
            with Horizontal() as row:
                row.styles.height = rng.choice(["1fr", str(rng.randint(2, 12))])
                for _ in range(rng.randint(1, 4)):
                    if rng.random() < 0.4:
                        with Vertical():
                            for _ in range(rng.randint(1, 3)):
                                yield random_leaf(rng)
                    else:
                        yield random_leaf(rng)

    def change_something(self) -> None:
        rng = self.rng
        lines = list(self.query(RandomLines))
        statics = list(self.query(Static))
        for _ in range(rng.randint(1, 4)):
            if lines and (not statics or rng.random() < 0.8):
                rng.choice(lines).change_some()
            elif statics:
                rng.choice(statics).update(Text(random_text(rng), style=random_style(rng) or ""))


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("seed", SEEDS)
async def test_random_screens_look_the_same_with_the_patch(
    frames: Frames, seed: int, size: tuple[int, int]
) -> None:
    app = RandomScreenApp(seed)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        for _ in range(FRAMES):
            app.change_something()
            await pilot.pause()
    assert frames.partial > 0, "no partial update: the patch was never exercised"
    assert_same_screens(frames, size)


@pytest.mark.parametrize("size", [(160, 50), (80, 24)], ids=lambda s: f"{s[0]}x{s[1]}")
async def test_the_monitor_looks_the_same_with_the_patch(
    frames: Frames, size: tuple[int, int]
) -> None:
    """The demo, tick by tick: the patch cuts something (it saves bytes) and changes no cell."""
    source = DemoSource("mixed", gpus=4, processes=24, seed=0)
    app = GputopApp(source, autostart=False, theme="dark")
    async with app.run_test(size=size) as pilot:
        for _ in range(FRAMES):
            app.ingest(source.sample())
            await pilot.pause()
        # The app's own rendering of the screen now, as Textual would repaint it whole.
        final = TEXTUAL_FULL(app.screen._compositor.render_update(full=True), app.console)
    assert frames.shorter > 0, "the patch never cut a chop: nothing here tests it"
    assert_same_screens(frames, size)
    ours = pyte.Screen(*size)
    ours_stream = pyte.Stream(ours)
    for _, written in frames.pairs:
        ours_stream.feed(written)
    expected = pyte.Screen(*size)
    pyte.Stream(expected).feed(final)
    assert cells(ours) == cells(expected), "the terminal does not show the app's screen"
    theirs_bytes = sum(len(theirs) for theirs, _ in frames.pairs[1:])
    ours_bytes = sum(len(written) for _, written in frames.pairs[1:])
    assert ours_bytes * 2 < theirs_bytes, (ours_bytes, theirs_bytes)


# --- when the patch is in place ------------------------------------------------------


@pytest.fixture
def textual_writer() -> Iterator[Callable[[Any, Console], str]]:
    """Textual's own method, with no patch in place before or after the test."""
    while partial_output.installed():
        partial_output.uninstall()
    original: Callable[[Any, Console], str] = ChopsUpdate.render_segments
    yield original
    while partial_output.installed():
        partial_output.uninstall()
    assert ChopsUpdate.render_segments is original


async def test_the_patch_is_in_place_only_while_the_monitor_runs(
    textual_writer: Callable[[Any, Console], str],
) -> None:
    app = GputopApp(DemoSource("healthy", seed=0), autostart=False)
    assert ChopsUpdate.render_segments is textual_writer, "building the app patched Textual"
    async with app.run_test(size=(80, 24)):
        assert partial_output.installed()
        assert ChopsUpdate.render_segments is not textual_writer
    assert not partial_output.installed()
    assert ChopsUpdate.render_segments is textual_writer


def test_nested_installs_keep_the_patch_until_the_last_uninstall(
    textual_writer: Callable[[Any, Console], str],
) -> None:
    assert partial_output.install() and partial_output.install()
    partial_output.uninstall()
    assert ChopsUpdate.render_segments is not textual_writer
    partial_output.uninstall()
    assert ChopsUpdate.render_segments is textual_writer


def test_another_textual_major_version_is_left_alone(
    textual_writer: Callable[[Any, Console], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(partial_output, "TEXTUAL_MAJOR", partial_output.TEXTUAL_MAJOR + 1)
    assert not partial_output.install()
    assert ChopsUpdate.render_segments is textual_writer


# --- the bytes of one change ---------------------------------------------------------

RED = Style(color="#e06c75", bold=True)
GREEN = Style(color="#98c379")
BLUE_ON_GREY = Style(color="#61afef", bgcolor="#282c34")
SGR = re.compile(r"\x1b\[[0-9;]*m")


def styled_line(value: str) -> Strip:
    return Strip(
        [
            Segment("GPU0 ", RED),
            Segment(value, GREEN),
            Segment(" mem ", GREEN),
            Segment("▁▂▃▄漢", BLUE_ON_GREY),
            Segment(" end", None),
        ]
    )


def draw_line(console: Console, strip: Strip, width: int = 40) -> str:
    """Repaint the whole (one-line) screen, as Textual does first."""
    update = LayoutUpdate([[strip.adjust_cell_length(width)]], Region(0, 0, width, 1))
    return partial_output.render_layout(update, console)


def change_line(console: Console, strip: Strip, x1: int, x2: int, width: int = 40) -> str:
    """A partial update of columns x1..x2 of the line, which now holds ``strip``."""
    update = ChopsUpdate([{0: strip.adjust_cell_length(width)}], [(0, x1, x2)], [[width]])
    return partial_output.render_segments(update, console)


def terminal(*writes: str, width: int = 40) -> list[list[Cell]]:
    screen = pyte.Screen(width, 1)
    stream = pyte.Stream(screen)
    for written in writes:
        stream.feed(written)
    return cells(screen)


def test_one_changed_cell_is_a_cursor_move_and_that_cell() -> None:
    console = Console(color_system="truecolor", force_terminal=True, width=40)
    first = draw_line(console, styled_line("45%"))
    # The widget repaints the whole value and everything after it; one cell changed.
    changed = change_line(console, styled_line("46%"), 5, 40)
    assert re.fullmatch(r"\x1b\[1;7H(\x1b\[[0-9;]*m)?6(\x1b\[0m)?", changed), repr(changed)
    assert len(SGR.findall(changed)) <= 2  # the cell's style, and one reset at the end
    assert terminal(first, changed) == terminal(
        TEXTUAL_FULL(
            LayoutUpdate([[styled_line("46%").adjust_cell_length(40)]], Region(0, 0, 40, 1)),
            console,
        )
    )


def test_an_unchanged_line_writes_nothing() -> None:
    console = Console(color_system="truecolor", force_terminal=True, width=40)
    draw_line(console, styled_line("45%"))
    assert change_line(console, styled_line("45%"), 0, 40) == ""


def test_a_style_is_sent_once_per_change_and_reset_once() -> None:
    console = Console(color_system="truecolor", force_terminal=True, width=40)
    whole = draw_line(console, styled_line("45%"))
    # GPU0 (red bold), 45% + mem (one green), sparkline, plain text: three styles, one reset.
    assert len(SGR.findall(whole)) == 4, repr(whole)
    assert whole.count("\x1b[0m") == 1  # before the plain text; nothing after it to reset
    assert whole.endswith(" end" + " " * 17)


def test_only_the_attributes_that_change_are_sent() -> None:
    console = Console(color_system="truecolor", force_terminal=True, width=20)
    bold = Style(color="#e06c75", bold=True)
    bold_italic = Style(color="#e06c75", bold=True, italic=True)
    written = draw_line(console, Strip([Segment("ab", bold), Segment("cd", bold_italic)]), 20)
    assert "ab\x1b[3mcd" in written, repr(written)


def test_cells_between_two_changes_are_resent_when_that_is_shorter() -> None:
    console = Console(color_system="truecolor", force_terminal=True, width=40)
    first = draw_line(console, styled_line("45%"))
    changed = change_line(console, styled_line("56%"), 5, 40)
    # Two adjacent cells: one run, not two cursor moves.
    assert changed.count("\x1b[") - len(SGR.findall(changed)) == 1, repr(changed)
    assert terminal(first, changed) == terminal(draw_line(Console(width=40), styled_line("56%")))


def test_a_wide_character_is_never_cut() -> None:
    console = Console(color_system="truecolor", force_terminal=True, width=40)
    first = draw_line(console, styled_line("45%"))
    line = Strip(
        [
            Segment("GPU0 ", RED),
            Segment("45%", GREEN),
            Segment(" mem ", GREEN),
            Segment("▁▂▃▄", BLUE_ON_GREY),
            Segment("ab", BLUE_ON_GREY),
            Segment(" end", None),
        ]
    )
    changed = change_line(console, line, 18, 19)  # the right half of 漢 only
    assert terminal(first, changed) == terminal(draw_line(Console(width=40), line))
    # And the other way: a span that starts in the right half of a new wide character.
    again = change_line(console, styled_line("45%"), 18, 19)
    assert terminal(first, changed, again) == terminal(first)


def test_after_forget_every_cell_of_a_span_is_written_again() -> None:
    """The driver forgets the screen when it (re)starts: someone else may have drawn on it."""
    console = Console(color_system="truecolor", force_terminal=True, width=40)
    draw_line(console, styled_line("45%"))
    partial_output.forget()
    again = change_line(console, styled_line("45%"), 0, 40)
    assert SGR.sub("", again).endswith("GPU0 45% mem ▁▂▃▄漢 end" + " " * 17), repr(again)


def test_a_new_size_forgets_the_screen() -> None:
    console = Console(color_system="truecolor", force_terminal=True, width=40)
    draw_line(console, styled_line("45%"))
    again = change_line(console, styled_line("45%"), 0, 30, width=30)
    assert "GPU0" in again


def test_the_segment_cache_stays_bounded_by_cells_over_a_long_run() -> None:
    """Issue 43: a monitor left running drew new figures every tick, and the cache of
    segments' cells, bounded by segments (each up to a line), grew for tens of minutes.
    Held cells never pass the bound, and what is drawn stays right."""
    from rich.color import ColorSystem
    from rich.segment import Segment
    from textual.strip import Strip

    from gputop_hints.tui.partial_output import (
        MAX_CACHED_CELLS,
        _cached_cells,
        _segment_cells,
        cells_of,
    )

    for tick in range(3000):  # 3000 ticks of a wide line of changing figures
        line = f"GPU {tick % 8}  SM {tick * 7 % 101:3d} %  " + f"{tick:>12d} B/s " * 8
        cells = cells_of(Strip([Segment(line)]), ColorSystem.TRUECOLOR)
        assert "".join(c for c, _ in cells) == line
        held = sum(len(run) for run in _segment_cells.values())
        assert held == _cached_cells[0] <= MAX_CACHED_CELLS


def test_a_growing_sparkline_and_wide_characters_beside_its_glyphs_draw_as_textual_does() -> None:
    """A sparkline growing a cell a tick (the first minutes) is a new text every tick:
    each is drawn one cell a glyph, and a wide character among glyphs already seen still
    takes its two cells -- the terminal shows what Textual's own writer shows."""
    console = Console(color_system="truecolor", force_terminal=True, width=40)
    writes = [draw_line(console, Strip([Segment("GPU0 ", RED)]))]
    cells = "▁▂▃▄▅▆▇█" * 3
    for grown in range(1, len(cells) + 1):
        line = Strip([Segment("GPU0 ", RED), Segment(cells[:grown], GREEN)])
        writes.append(change_line(console, line, 5, 40))
        expected = TEXTUAL_FULL(
            LayoutUpdate([[line.adjust_cell_length(40)]], Region(0, 0, 40, 1)), console
        )
        assert terminal(*writes) == terminal(expected), grown
    for text in ("▂▃漢▁", "漢▁▂", "ＧＰＵ▁▂", "▂ＧＰＵ", "▁│─·→"):
        line = Strip([Segment("GPU0 ", RED), Segment(text, BLUE_ON_GREY)])
        writes.append(change_line(console, line, 5, 40))
        expected = TEXTUAL_FULL(
            LayoutUpdate([[line.adjust_cell_length(40)]], Region(0, 0, 40, 1)), console
        )
        assert terminal(*writes) == terminal(expected), text


def test_the_segment_cache_full_holds_little_memory() -> None:
    """Issue 49: the cache of segments' cells, filled to its bound by a long run's new
    figures and sparklines, held ~5 MB of small objects (a tuple a cell), and the
    allocator kept that high-water mark as the monitor's resident memory. A cell is
    shared by every segment of its style that shows it: the full cache is well under
    1.5 MB (8 bytes a held cell plus the shared cells), and what is drawn stays right."""
    import gc
    import tracemalloc

    from rich.color import ColorSystem

    from gputop_hints.tui import partial_output

    partial_output._segment_cells.clear()
    partial_output._cached_cells[0] = 0
    partial_output._cells_by_key.clear()
    partial_output._shared_cells[0] = 0
    styles = [Style(color=f"color({n})") for n in range(4)]
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        tick = 0
        while partial_output._cached_cells[0] < partial_output.MAX_CACHED_CELLS - 200:
            spark = "".join("▁▂▃▄▅▆▇█"[(tick + i * i) % 8] for i in range(60))
            line = f"GPU {tick % 8} {tick:>9d} B/s "
            cells = partial_output.cells_of(
                Strip([Segment(line, styles[tick % 4]), Segment(spark, styles[tick % 3])]),
                ColorSystem.TRUECOLOR,
            )
            assert "".join(c for c, _ in cells) == line + spark
            tick += 1
        gc.collect()
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert held < 1_500_000, f"{held / 1e6:.2f} MB for {partial_output._cached_cells[0]} cells"


def test_the_shared_cells_stay_bounded_with_ever_new_characters() -> None:
    """Process names and commands may bring any character: the shared cells are emptied
    at their bound and refilled, and every segment still reads back as written."""
    from rich.color import ColorSystem

    from gputop_hints.tui import partial_output

    for n in range(0, 3 * partial_output.MAX_SHARED_CELLS, 97):
        text = "".join(chr(0x4E00 + (n + i) % 20000) for i in range(97))  # CJK: two cells
        cells = partial_output.cells_of(
            Strip([Segment("name ", RED), Segment(text, GREEN)]), ColorSystem.TRUECOLOR
        )
        assert "".join(c for c, _ in cells) == "name " + text
        assert len(cells) == 5 + 2 * len(text)
        assert partial_output._shared_cells[0] <= partial_output.MAX_SHARED_CELLS
