"""The loop every incremental parser runs: feed lines, collect what they finish, flush.

The parsers of gpustat text, ``nvidia-smi -q`` dumps and nvidia-smi tables take
one line at a time and hand back a finished record when a line closes one;
:func:`drive` runs that loop over a file (or a sniffed head) and asks the parser
for the record still open at the end.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Protocol, TypeVar

T_co = TypeVar("T_co", covariant=True)


class Incremental(Protocol[T_co]):
    """A line-at-a-time parser."""

    def feed(self, number: int, line: str) -> T_co | None:
        """Take one line; a finished record when this line closes one."""
        ...

    def finish(self) -> T_co | None:
        """The record still open at the end of the input, when it is whole."""
        ...


def drive(
    parser: Incremental[T_co], lines: Iterable[tuple[int, str]], *, finish: bool = True
) -> Iterator[T_co]:
    """The records ``parser`` makes of ``lines`` ((1-based number, text) pairs); the
    last, still-open one too unless ``finish`` is False (a sniffer's cut-off head)."""
    for number, line in lines:
        done = parser.feed(number, line)
        if done is not None:
            yield done
    if finish:
        last = parser.finish()
        if last is not None:
            yield last
