"""Fault matrix, escape sequences with absurd parameters on the monitor's input.

``ESC[99999999999~`` -- a paste, a terminal's answer, a hostile byte stream over
SSH -- reached Textual's parser, which turned the number into a C int and raised
OverflowError in the input thread: the monitor ended with a traceback, exit 0.
The decoder the input thread reads through (tui/input_decoding.py) now bounds
CSI sequences before the parser sees them. The fuzz tests feed decoder and
parser exactly as the input thread does, read by read; the tmux test types the
bytes into the installed console script.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest
from textual import events
from textual.message import Message

from gputop_hints.sources.demo import DemoSource
from gputop_hints.tui import input_decoding
from gputop_hints.tui.app import GputopApp
from gputop_hints.tui.tty_driver import BoundedParser
from tests.support.tmux_harness import SCRIPT, Tmux, tmux_session

HUGE = "9" * 11
ADVERSARIAL: list[bytes] = [
    f"\x1b[{HUGE}~".encode(),
    f"\x1b[{'9' * 400}~".encode(),
    f"\x1b[1;{HUGE}u".encode(),
    f"\x1b[1;1;{HUGE}u".encode(),
    b"\x1b[1114112u",  # one past the last code point
    b"\x1b[1;1;1114112:97u",
    b"\x1b[" + b";" * 5000 + b"~",
    b"\x1b[" + b"1;" * 3000 + b"u",
    b"\x1b[" + b"9" * 5000,  # unterminated
    b"\x1b[12;",  # unterminated, short
    f"\x1b[<0;{HUGE};{HUGE}M".encode(),  # SGR mouse, huge coordinates
    f"\x1b[<35;-{HUGE};5m".encode(),
    b"\x1b[M\xff\xff\xff",  # X10 mouse past column 223
    f"\x1b[48;{HUGE};{HUGE};{HUGE};{HUGE}t".encode(),  # in-band resize
    f"\x1b[{HUGE};{HUGE}R".encode(),  # cursor position report
    f"\x1b[?2026;{HUGE}$y".encode(),
    f"\x1b[200~pasted \x1b[{HUGE}~ and \x1b[1;{HUGE}u inside\x1b[201~".encode(),
    f"\x1b[200~\x1b[48;{HUGE};{HUGE};1;1t\x1b[201~".encode(),
    b"\x1b[200~never ended \x1b[A",
    b"\x1b]52;c;" + b"A" * 3000 + b"\x07",
    b"\x1b\x1b\x1b[[[\x1b[O\x1b[I\x1bO",
]
"""Hand-written junk: each fed alone, then split at every few bytes."""

PIECES = [
    "\x1b",
    "\x1b[",
    "[",
    ";",
    ":",
    "<",
    "?",
    "$",
    "-",
    HUGE,
    "1",
    "0",
    "200~",
    "201~",
    "~",
    "u",
    "M",
    "m",
    "R",
    "t",
    "y",
    "A",
    "48;",
    "\xff",
    "q",
    "\x07",
]
"""What the random streams are made of: pieces of escape sequences, more than bytes."""


def _flush(parser: BoundedParser) -> list[Message]:
    """What the parser gives when its escape timeout passes (the test does not wait it)."""
    if parser._timeout_time is None:
        return []
    parser._timeout_time = 0.0
    return list(parser.tick())


def _parse(parser: BoundedParser, text: str) -> list[Message]:
    """Feed one read's text; "" is the parser's end of input, never fed (as in the driver)."""
    return list(parser.feed(text)) if text else []


def _feed(chunks: list[bytes]) -> list[Message]:
    """The input thread's path, read by read: the installed decoder, then Textual's parser.
    After the junk: a bracketed paste's end (in case the junk began one), the escape
    timeout, then ``j`` and ``q`` typed."""
    decoder = input_decoding.lenient_decoder("utf-8")()
    parser = BoundedParser()
    out: list[Message] = []
    for chunk in [*chunks, b"\x1b[201~"]:
        out += _parse(parser, decoder.decode(chunk))
    # A sequence cut at the end of the last read: the input thread releases it when
    # no more bytes come (getattr: the test also runs against the decoder before it).
    out += _parse(parser, getattr(decoder, "release", str)())
    out += _flush(parser)
    out += _parse(parser, decoder.decode(b"j"))
    out += _parse(parser, decoder.decode(b"q"))
    return out


def _keys_at_the_end(out: list[Message]) -> list[str]:
    return [m.key for m in out if isinstance(m, events.Key)][-2:]


def _split(data: bytes, step: int) -> list[bytes]:
    return [data[i : i + step] for i in range(0, len(data), step)] or [b""]


@pytest.mark.parametrize("junk", ADVERSARIAL, ids=lambda b: repr(b[:24]))
def test_an_absurd_escape_sequence_is_dropped_and_keys_after_it_still_decode(junk: bytes) -> None:
    """ESC[99999999999~, 5000 ';', a mouse report at 1e11, a paste with escapes: keys still decode.

    Before the fix ESC[99999999999~ raised OverflowError in Textual's parser (the
    monitor died with a traceback, exit 0) and ESC[1114112u ValueError."""
    for step in (len(junk) or 1, 1, 3, 7, 64):
        out = _feed(_split(junk, step))
        assert _keys_at_the_end(out) == ["j", "q"], (step, out[-6:])
        for message in out:
            if isinstance(message, events.MouseEvent):
                assert abs(message.x) <= input_decoding.MAX_TERMINAL_CELLS
            if isinstance(message, events.Resize):
                assert max(message.size) <= input_decoding.MAX_TERMINAL_CELLS


@pytest.mark.parametrize(
    "junk",
    [f"\x1b[{HUGE}~", f"\x1b[1;{HUGE}u", "\x1b[1114112u", "\x1b[1;1:2u", "\x1b[" + ";" * 40 + "~"],
    ids=repr,
)
def test_the_decoder_drops_an_absurd_csi_sequence_whole(junk: str) -> None:
    """ESC[99999999999~ and its kind, whole or cut at every byte: the decoder drops all of it."""
    for step in (len(junk), 1, 2, 5):
        decoder = input_decoding.lenient_decoder("utf-8")()
        pieces = _split((junk + "j").encode(), step)
        text = "".join(decoder.decode(piece) for piece in pieces) + decoder.release()
        assert text in ("j", "\x1bj"), (step, text)  # an Esc sent on before the cut stays


def test_random_escape_streams_never_raise_and_keys_after_them_still_decode() -> None:
    """2000 seeded random streams of escape pieces and bytes, split at random: never an error."""
    rng = random.Random(43)
    for _ in range(2000):
        text = "".join(rng.choice(PIECES) for _ in range(rng.randint(1, 60)))
        data = text.encode("utf-8", "surrogateescape")
        if rng.random() < 0.3:
            data += bytes(rng.randrange(256) for _ in range(rng.randint(1, 40)))
        cuts = sorted(rng.sample(range(len(data) + 1), min(len(data), rng.randint(0, 5))))
        chunks = [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)], strict=True)]
        out = _feed(chunks)
        assert _keys_at_the_end(out) == ["j", "q"], (data, out[-6:])


def test_ordinary_sequences_pass_the_bounds_untouched() -> None:
    """Arrows, F-keys, kitty keys, SGR mouse, paste markers: what a terminal sends is kept."""
    decoder = input_decoding.lenient_decoder("utf-8")()
    ordinary = (
        "\x1b[A\x1bOB\x1b[15~\x1b[1;5C\x1b[97;5u\x1b[57441;2u\x1b[<35;120;40M"
        "\x1b[200~text\x1b[201~\x1b[48;40;120;800;1920t\x1b[?2026;2$y\x1b[I"
    )
    assert decoder.decode(ordinary.encode()) == ordinary
    assert getattr(decoder, "release", str)() == ""


async def test_a_crash_of_the_input_thread_ends_with_exit_status_1() -> None:
    """The input thread crashing (what an escape Textual chokes on did): exit status 1, not 0.

    Textual's driver answers a crash of its input thread with ``App.panic``, which
    left the return code unset: the monitor's exit status was 0, as after ``q``."""
    app = GputopApp(DemoSource("healthy", gpus=1, processes=2, seed=0), autostart=False)
    async with app.run_test(size=(100, 30)):
        app.panic("the input thread raised")  # what the driver calls (later, on the loop)
    assert app.return_code == 1


@pytest.fixture
def tmux() -> Iterator[Tmux]:
    yield from tmux_session()


@pytest.mark.tmux
def test_an_oversized_escape_parameter_typed_into_the_demo_leaves_it_running(
    tmux: Tmux,
) -> None:
    """ESC[99999999999~, a mouse report at 1e11 and 5000 ';' sent to the demo: it runs, q quits 0.

    Before the fix the first ended the monitor: OverflowError, a traceback, exit 0."""
    tmux.start([str(SCRIPT), "--demo"], width=120, height=40)
    tmux.wait_for("PID")
    for junk in (
        f"\x1b[{HUGE}~",
        f"\x1b[<0;{HUGE};{HUGE}M",
        f"\x1b[<35;{HUGE};{HUGE}M",
        "\x1b[<0;1114111;1114111M",  # within the parameter bound, past any screen
        "\x1b[" + ";" * 5000 + "~",
        f"\x1b[48;{HUGE};{HUGE};1;1t",
    ):
        tmux.run("send-keys", "-t", "t", "-l", junk)
    tmux.run("send-keys", "-t", "t", "-H", *(f"{b:02x}" for b in b"\x1b[1114112u"))
    tmux.keys("?")  # still reading keys: help opens
    screen = tmux.wait_for("esc Back")
    assert "Traceback" not in screen and "Error" not in screen
    tmux.keys("Escape")
    tmux.wait_gone("esc Back")
    tmux.keys("q")
    assert tmux.wait_until_exited() == 0
