"""The widgets' caches draw what building everything again would draw."""

from __future__ import annotations

import math

from rich.segment import Segment
from rich.style import Style
from textual.dom import DOMNode
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from gputop_hints.sources.demo import DemoSource
from gputop_hints.tui.app import GputopApp
from gputop_hints.tui.render import bucketed, fitted_strip, merge_onto, merge_segments
from gputop_hints.tui.widgets.base import StripWidget
from gputop_hints.tui.widgets.cpu_panel import CpuPanel
from gputop_hints.tui.widgets.footer import KeysFooter
from gputop_hints.tui.widgets.gpu_area import GpuArea
from gputop_hints.tui.widgets.gpu_panel import GpuPanel
from gputop_hints.tui.widgets.header import HeaderBar
from gputop_hints.tui.widgets.steady_render import SteadyRender

RED = Style(color="red", bgcolor="black")
BLUE = Style(color="blue", bgcolor="black")
UNDER = Style(underline=True, bgcolor="black")
SEGMENTS = [
    Segment(" SM   ", RED),
    Segment("   ", BLUE),
    Segment("xx", BLUE),
    Segment(" ", None),
    Segment("  ", UNDER),
    Segment("12%", RED),
    Segment("  ", None),
    Segment("note", BLUE),
]


def test_a_line_merged_in_two_parts_is_the_line_merged_whole() -> None:
    for base in (None, Style(bgcolor="black"), Style(bgcolor="white")):
        whole = merge_segments(SEGMENTS, base)
        for cut in range(len(SEGMENTS) + 1):
            start = merge_segments(SEGMENTS[:cut], base)
            assert merge_onto(start, SEGMENTS[cut:], base) == whole


def _shows_on_blanks(style: Style) -> bool:
    names = ("underline", "underline2", "strike", "reverse", "overline", "blink", "blink2")
    return any(getattr(style, name) for name in names)


def _merged_plainly(segments: list[Segment], base: Style | None) -> list[Segment]:
    """The merge as first written: one neighbour at a time, a new segment each time."""
    merged: list[Segment] = []
    for segment in segments:
        text, style, control = segment
        if control or not text:
            merged.append(segment)
            continue
        own = style if style is not None else base
        if merged:
            last_text, last_style, last_control = merged[-1]
            last_own = last_style if last_style is not None else base
            if not last_control:
                if last_own == own:
                    merged[-1] = Segment(last_text + text, last_style)
                    continue
                blank = not text.strip(" ")
                last_blank = not blank and not last_text.strip(" ")
                if (
                    (blank or last_blank)
                    and own is not None
                    and last_own is not None
                    and own.bgcolor == last_own.bgcolor
                    and not _shows_on_blanks(own)
                    and not _shows_on_blanks(last_own)
                ):
                    style = last_style if blank else style
                    merged[-1] = Segment(last_text + text, style)
                    continue
        merged.append(Segment(text, style))
    return merged


def test_merging_is_the_plain_merge_on_random_lines() -> None:
    import random

    from rich.control import Control

    bell = Control.bell().segment
    styles = [
        None,
        RED,
        Style(color="red", bgcolor="black"),  # equal to RED, another object
        BLUE,
        UNDER,
        Style(color="red", bgcolor="white"),
        Style(reverse=True, bgcolor="black"),
        Style(bold=True),
    ]
    texts = ["", " ", "   ", "ab", " x ", "12%", "é "]
    rng = random.Random(49)
    for _ in range(3000):
        line = [
            bell if rng.random() < 0.05 else Segment(rng.choice(texts), rng.choice(styles))
            for _ in range(rng.randrange(12))
        ]
        for base in (None, Style(bgcolor="black"), Style(bgcolor="white")):
            whole = _merged_plainly(line, base)
            assert merge_segments(line, base) == whole, (line, base)
            cut = rng.randrange(len(line) + 1)
            assert merge_onto(merge_segments(line[:cut], base), line[cut:], base) == whole


def test_fitted_strip_is_adjust_cell_length() -> None:
    for width in (0, 5, 21, 22, 40):
        expected = Strip(merge_segments(SEGMENTS), 22).adjust_cell_length(width, RED)
        strip = fitted_strip(merge_segments(SEGMENTS), 22, width, RED)
        assert list(strip) == list(expected)
        assert strip.cell_length == expected.cell_length == width


def _bucketed_plainly(values: list[float | None], per_cell: int, ticks: int) -> list[float | None]:
    filling = ticks % per_cell
    done = values[: len(values) - filling] if filling else values
    cells: list[float | None] = []
    end = len(done)
    while end > 0:
        known = [v for v in done[max(0, end - per_cell) : end] if v is not None and v == v]
        cells.append(sum(known) / len(known) if known else None)
        end -= per_cell
    return cells[::-1]


def test_bucket_means_are_the_means_of_the_known_samples() -> None:
    values: list[float | None] = [
        0.1, 0.7, None, 33.3, math.nan, 1e308, 1e308, 5.0, math.inf, -math.inf, 2.2, None,
        None, None, 0.3, 0.30000000000000004, 17.0,
    ]  # fmt: skip
    for per_cell in (2, 3, 4):
        for ticks in range(5):
            got = bucketed(values, per_cell, ticks)
            want = _bucketed_plainly(values, per_cell, ticks)
            assert [repr(v) for v in got] == [repr(v) for v in want]


def _uncached(node: DOMNode) -> Style:
    rich_style = DOMNode.rich_style.fget  # type: ignore[attr-defined]
    style: Style = rich_style(node)
    return style


async def test_the_kept_rich_style_follows_theme_and_css_changes() -> None:
    source = DemoSource("mixed", gpus=2, processes=4, seed=0)
    app = GputopApp(source, autostart=False, theme="dark")
    async with app.run_test(size=(120, 40)) as pilot:
        app.ingest(source.sample())
        await pilot.pause()
        panel = app.query(GpuPanel).first()
        before = panel.rich_style
        assert before == _uncached(panel)
        assert panel.rich_style is before  # kept while nothing changed
        await pilot.press("c")  # the next theme
        await pilot.pause()
        assert panel.rich_style == _uncached(panel) != before
        parent = panel.parent
        assert isinstance(parent, DOMNode)
        parent.styles.background = "red"  # an ancestor's inline style
        assert panel.rich_style == _uncached(panel)
        panel.styles.background = "blue"
        panel.styles.color = "yellow"
        assert panel.rich_style == _uncached(panel)
        panel.add_class("some-class")
        await pilot.pause()
        assert panel.rich_style == _uncached(panel)


def test_what_visible_rewrites_is_never_printable() -> None:
    # Line.add skips visible() for printable text: that must change nothing.
    from gputop_hints.text import visible

    assert not [c for c in map(chr, range(0x110000)) if c.isprintable() and visible(c) != c]


def _through_textual(widget: Widget, crop: Region) -> list[list[Segment]]:
    widget._styles_cache.clear()
    return [list(strip) for strip in Widget.render_lines(widget, crop)]


async def test_the_widgets_paint_what_textuals_styles_cache_paints() -> None:
    source = DemoSource("mixed", gpus=2, processes=8, seed=0, cores=64)
    app = GputopApp(source, autostart=False, theme="dark")
    async with app.run_test(size=(120, 40)) as pilot:
        for _ in range(3):
            app.ingest(source.sample())
            await pilot.pause()
        widgets = [w for w in app.screen.query(StripWidget) if w.display and w.size.area]
        assert {type(w).__name__ for w in widgets} >= {"CpuPanel", "GpuPanel", "ProcessTable"}
        for theme_key in ("", "c"):  # this theme, then the next one
            if theme_key:
                await pilot.press(theme_key)
                await pilot.pause()
            for widget in widgets:
                width, height = widget.size
                for crop in (
                    Region(0, 0, width, height),
                    Region(3, 1, max(1, width - 10), max(1, height - 1)),
                ):
                    painted = [list(strip) for strip in widget.render_lines(crop)]
                    assert painted == _through_textual(widget, crop), type(widget).__name__
        # With padding the lines are not the whole widget: Textual's way is taken.
        panel = app.query(GpuPanel).first()
        panel.styles.padding = (0, 1)
        await pilot.pause()
        crop = Region(0, 0, *panel.region.size)
        painted = [list(strip) for strip in panel.render_lines(crop)]
        assert painted == _through_textual(panel, crop)
        assert panel._styles_cache_used


async def test_the_cpu_panels_kept_rows_are_the_rows_built_again() -> None:
    source = DemoSource("mixed", gpus=1, processes=1, seed=0, cores=64)
    app = GputopApp(source, autostart=False, theme="dark")
    async with app.run_test(size=(120, 40)) as pilot:
        panel = app.cpu_panel
        for compact in (False, True, False):
            panel.set_compact(compact)
            for _ in range(4):
                app.ingest(source.sample())
                await pilot.pause()
                width, height = panel.size
                lines = [list(strip) for strip in panel.render_lines(Region(0, 0, width, height))]
                assert panel._palette_for is not None
                _, base, palette = panel._palette_for
                fresh = CpuPanel()
                fresh.host, fresh.job, fresh.compact = panel.host, panel.job, panel.compact
                built = fresh.build_lines(width, height, base, palette)
                assert lines[: len(built)] == [list(strip) for strip in built]


def test_the_truecolor_filter_draws_what_textuals_draws() -> None:
    """The monitor's ANSI-to-truecolor filter gives every line what Textual's gives:
    ANSI and 256 colours, dim text and control codes still converted, truecolor lines
    passed through."""
    from rich.control import Control
    from rich.terminal_theme import MONOKAI
    from textual.color import Color
    from textual.filter import ANSIToTruecolor

    from gputop_hints.tui.truecolor import SkipTruecolor

    true = Style(color="#ff8800", bgcolor="#101010", bold=True)
    styles = [
        None,
        true,
        Style(color="#ff8800"),
        Style(bgcolor="#202020"),
        Style(color="#ff8800", dim=True),
        Style(dim=True),
        Style(color="red"),
        Style(bgcolor="blue"),
        Style(color="color(200)", bgcolor="#000000"),
        Style(color="default"),
        RED,
        UNDER,
    ]
    theirs = ANSIToTruecolor(MONOKAI)
    ours = SkipTruecolor(MONOKAI)
    for background in (Color(0, 0, 0), Color(250, 250, 250)):
        for first in styles:
            for second in styles:
                line = [Segment("ab", first), Segment(" c", true), Segment("d", second)]
                assert ours.apply(line, background) == theirs.apply(line, background)
        bell = Control.bell().segment
        line = [Segment("x", true), Segment(bell.text, None, bell.control)]
        assert ours.apply(line, background) == theirs.apply(line, background)


async def test_the_app_keeps_its_truecolor_filter_across_a_theme_change() -> None:
    from gputop_hints.tui.truecolor import SkipTruecolor

    app = GputopApp(DemoSource("mixed", gpus=1, processes=1, seed=0), autostart=False)
    async with app.run_test(size=(120, 40)) as pilot:
        assert any(isinstance(f, SkipTruecolor) for f in app.get_line_filters())
        for name in app.theme_names:  # Textual makes its filter again for each theme
            app.theme = name
            await pilot.pause()
            assert any(isinstance(f, SkipTruecolor) for f in app.get_line_filters()), name


async def test_kept_gpu_rows_and_header_parts_draw_what_a_fresh_build_draws() -> None:
    """The GPU panel's sparklines grown (the window filling, ticks 1-121) and moved on a
    value at a time, and the header's kept left part, give, tick after tick, the lines
    built with nothing kept (SM bursts and gaps: every cell of the sparkline moves)."""
    source = DemoSource("starved-loader", gpus=1, processes=1, seed=0, cores=8)
    app = GputopApp(source, autostart=False, theme="dark")
    async with app.run_test(size=(160, 50)) as pilot:
        header = app.header
        fresh_panel: GpuPanel | None = None
        for tick in range(160):  # past the window, so the sparklines scroll
            app.ingest(source.sample())
            await pilot.pause()
            panel = app.query(GpuPanel).first()
            if fresh_panel is None:
                fresh_panel = GpuPanel(panel.index)
            # Fed as the panel is (its bucket means follow the ticks it saw), but its
            # rows and sparklines built again each tick.
            fresh_panel.update_from(
                panel.gpu, panel.history, panel.findings, panel.ticks, panel.verdict
            )
            fresh_panel._rows.clear()
            fresh_panel._prefixes.clear()
            for widget in (panel, header):
                width, height = widget.size
                lines = [list(s) for s in widget.render_lines(Region(0, 0, width, height))]
                assert widget._palette_for is not None
                _, base, palette = widget._palette_for
                fresh: StripWidget
                if widget is panel:
                    fresh = fresh_panel
                else:
                    fresh = HeaderBar(header.interval_s)
                    fresh.source_kind, fresh.cost = header.source_kind, header.cost
                    fresh.update_from(header.snapshot)  # type: ignore[arg-type]
                built = fresh.build_lines(width, height, base, palette)
                assert lines[: len(built)] == [list(s) for s in built], (tick, widget)


async def test_the_screen_area_and_footer_paint_what_textual_paints() -> None:
    """The screen, the GPU area and the footer hand back their last paint only while
    it is what Textual's styles cache would paint now."""
    source = DemoSource("mixed", gpus=2, processes=8, seed=0, cores=16)
    app = GputopApp(source, autostart=False, theme="dark")
    async with app.run_test(size=(120, 40)) as pilot:
        for theme_key in ("", "", "c", ""):  # twice steady, a new theme, steady again
            if theme_key:
                await pilot.press(theme_key)
            app.ingest(source.sample())
            await pilot.pause()
            for widget in (app.screen, app.query_one(GpuArea), app.query_one(KeysFooter)):
                assert isinstance(widget, SteadyRender)
                crop = Region(0, 0, *widget.region.size)
                painted = [list(s) for s in widget.render_lines(crop)]
                again = [list(s) for s in widget.render_lines(crop)]
                assert painted == again == _through_textual(widget, crop), type(widget)


async def test_a_styles_cache_laid_out_otherwise_paints_as_textual_does() -> None:
    """On a Textual whose styles cache has none of what the kept paint reads (pyproject
    allows 0.86 to 8), the screen paints as Textual does: no error, the same lines."""
    source = DemoSource("mixed", gpus=1, processes=2, seed=0, cores=4)
    app = GputopApp(source, autostart=False, theme="dark")
    async with app.run_test(size=(100, 30)) as pilot:
        app.ingest(source.sample())
        await pilot.pause()
        widget = app.query_one(GpuArea)
        crop = Region(0, 0, *widget.region.size)
        expected = _through_textual(widget, crop)
        widget._styles_cache = _LaidOutOtherwise(widget._styles_cache)  # type: ignore[assignment]
        assert [list(s) for s in widget.render_lines(crop)] == expected


class _LaidOutOtherwise:
    """A styles cache that works as Textual's (its methods are the real one's) but has
    none of the attributes the kept paint reads."""

    def __init__(self, real: object) -> None:
        self._real = real

    def __getattr__(self, name: str) -> object:
        if name in ("_dirty_lines", "_cache", "_width"):
            raise AttributeError(name)
        return getattr(self._real, name)
