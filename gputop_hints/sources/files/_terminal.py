"""A small terminal screen, enough to replay what ``watch`` wrote into a file.

``watch -n 2 nvidia-smi > gpu.log`` does not log text lines: it logs curses
output -- the alternate screen, a scroll region, cursor addressing -- and after
the first frame only the cells that changed. Reading such a capture means
replaying it on a screen of the size it was drawn for and looking at the screen
after each redraw.

:class:`Screen` interprets the escape sequences curses uses (cursor
positioning, erasing, insert/delete, autowrap, the scroll region; colours and
modes are ignored) with a VT100's deferred wrap: a character written into the
last column leaves the cursor there until the next character, so curses'
bottom-right cell does not scroll the screen. A redraw ends when the cursor is
parked in the bottom-right corner (where watch leaves it) or a character is
written there with autowrap off (how curses fills that cell);
:meth:`Screen.feed` yields the screen's rows at each such end that changed
something.
"""

from __future__ import annotations

import re
from collections.abc import Generator, Iterator

ESC = "\x1b"
_MOVE = re.compile(r"\x1b\[([0-9]{1,3})(?:;([0-9]{1,3})H|G)([^\x00-\x1f]*)")
"""Cursor positioning (row and column, or column alone), the sequences curses sends
most, and the printable characters after it (what a redraw writes there): read
without :meth:`Screen._csi`, in one match."""
_RUN = re.compile(r"[^\x00-\x1f]+")
"""Printable characters, written in one go while they fit on the row."""


class Screen:
    """A ``rows`` x ``cols`` character grid driven by terminal output."""

    def __init__(self, rows: int = 24, cols: int = 80) -> None:
        self.rows = rows
        self.cols = cols
        self.grid = [[" "] * cols for _ in range(rows)]
        self.row = 0
        self.col = 0
        self.wrap_pending = False
        self.autowrap = True
        self.top = 0
        self.bottom = rows - 1
        self.saved = (0, 0)
        self.last_char = " "
        self.dirty = False
        self.noise = 0
        """Characters dropped as capture damage (see :meth:`_put`)."""
        self.moved = False
        """The last escape sequence moved the cursor (parking it ends a redraw)."""
        self._pending = ""  # an escape sequence cut at the end of a chunk
        self._text = [""] * rows
        """Each row as :meth:`lines` gives it, except those in ``_stale``."""
        self._stale: set[int] = set()
        """Rows written since :meth:`lines` last read them."""
        self.changed_rows: list[int] = []
        """The rows :meth:`lines` read again the last time (a superset of those
        that differ from the rows it gave before)."""

    # --- reading ----------------------------------------------------------------

    def lines(self) -> list[str]:
        """The screen's rows, trailing blanks removed."""
        text, grid = self._text, self.grid
        stale = sorted(self._stale)
        for r in stale:
            text[r] = "".join(grid[r]).rstrip()
        self._stale.clear()
        self.changed_rows = stale
        return list(text)

    def feed(self, text: str) -> Iterator[list[str]]:
        """Interpret ``text``; yield the screen's rows at the end of each redraw."""
        data = self._pending + text
        self._pending = ""
        i = 0
        n = len(data)
        while i < n:
            ch = data[i]
            if ch == ESC:
                m = _MOVE.match(data, i)
                if m is not None:
                    i = yield from self._moves(data, m)
                    continue
                self.moved = False
                end = self._escape(data, i)
                if end < 0:
                    self._pending = data[i:]
                    return
                i = end
            elif ch >= " ":
                room = self.cols - 1 - self.col
                if room > 1 and not self.wrap_pending and data[i + 1 : i + 2] >= " ":
                    i = self._write(data, i, room)
                else:
                    self._put(ch)
                    i += 1
                if not self.autowrap and (self.row, self.col) == (self.rows - 1, self.cols - 1):
                    yield from self._frame_end()  # curses' way to fill the last cell
                continue
            else:
                self._control(ch)
                i += 1
                continue
            if self.moved and (self.row, self.col) == (self.rows - 1, self.cols - 1):
                yield from self._frame_end()

    def _moves(self, data: str, m: re.Match[str] | None) -> Generator[list[str], None, int]:
        """What :meth:`_csi` does with "H" and two numbers, or "G", then :meth:`_write`
        with the printable characters after it, for each such sequence from ``m`` on
        while its characters fit before the last column (what a redraw sends most); the
        rows at each end of a redraw, and where the sequences end."""
        self.wrap_pending = False
        self.moved = True
        rows, cols, grid, stale = self.rows, self.cols, self.grid, self._stale
        row, col = self.row, self.col
        i = 0 if m is None else m.start()
        while m is not None:
            first, second, run = m.groups()
            if second is None:
                second = first
            else:  # min(rows, max(1, n)) - 1 without the calls
                r = int(first) - 1
                row = r if 0 <= r < rows else (0 if r < 0 else rows - 1)
            c = int(second) - 1
            col = c if 0 <= c < cols else (0 if c < 0 else cols - 1)
            corner = col == cols - 1 and row == rows - 1
            if corner:
                self.row, self.col = row, col
                yield from self._frame_end()
            if run:
                k = len(run)
                if corner or col + k >= cols:  # it reaches the last column: _put's work
                    i = m.start(3)
                    break
                grid[row][col : col + k] = run
                stale.add(row)
                self.last_char = run[-1]
                self.dirty = True
                col += k
                if not self.autowrap and col == cols - 1 and row == rows - 1:
                    self.row, self.col = row, col
                    yield from self._frame_end()  # curses' way to fill the last cell
            i = m.end()
            m = _MOVE.match(data, i)
        self.row, self.col = row, col
        return i

    def _frame_end(self) -> Iterator[list[str]]:
        if self.dirty:
            self.dirty = False
            yield self.lines()

    # --- characters ---------------------------------------------------------------

    def _write(self, data: str, i: int, room: int) -> int:
        """:meth:`_put` for the printable characters at ``data[i]``, as many as fit
        before the last column (``room``); where they end."""
        run = _RUN.match(data, i, i + room)
        assert run is not None
        n = run.end() - i
        c = self.col
        self.grid[self.row][c : c + n] = run.group()
        self._stale.add(self.row)
        self.last_char = data[i + n - 1]
        self.dirty = True
        self.col = c + n
        return i + n

    def _put(self, ch: str) -> None:
        if self.wrap_pending and self.autowrap:
            if self.row == self.bottom == self.rows - 1 and self.top == 0:
                # A full-screen program never scrolls its whole screen by writing past
                # the bottom-right cell: these are the remains of a sequence that lost
                # bytes in the capture. Scrolling would shift every later frame a row.
                self.noise += 1
                return
            self.col = 0
            self._line_feed()
        self.wrap_pending = False
        self.grid[self.row][self.col] = ch
        self._stale.add(self.row)
        self.last_char = ch
        self.dirty = True
        if self.col == self.cols - 1:
            self.wrap_pending = self.autowrap
        else:
            self.col += 1

    def _control(self, ch: str) -> None:
        if ch == "\r":
            self.col = 0
        elif ch in "\n\x0b\x0c":
            self._line_feed()
        elif ch == "\b":
            self.col = max(0, self.col - 1)
        elif ch == "\t":
            self.col = min(self.cols - 1, (self.col // 8 + 1) * 8)
        else:
            return  # bell and the other controls draw nothing
        self.wrap_pending = False

    def _line_feed(self) -> None:
        if self.row == self.bottom:
            self._scroll_up(self.top, self.bottom, 1)
        elif self.row < self.rows - 1:
            self.row += 1

    def _changed(self) -> None:
        """Something beyond one cell changed: every row is read again."""
        self._stale.update(range(self.rows))
        self.dirty = True

    def _scroll_up(self, top: int, bottom: int, count: int) -> None:
        for _ in range(count):
            del self.grid[top]
            self.grid.insert(bottom, [" "] * self.cols)
        self._changed()

    def _scroll_down(self, top: int, bottom: int, count: int) -> None:
        for _ in range(count):
            del self.grid[bottom]
            self.grid.insert(top, [" "] * self.cols)
        self._changed()

    # --- escape sequences ------------------------------------------------------------

    def _escape(self, data: str, i: int) -> int:
        """Interpret the sequence at ``data[i]``; its end, or -1 when it is cut off."""
        if i + 1 >= len(data):
            return -1
        kind = data[i + 1]
        if kind == "[":
            j = i + 2
            while j < len(data) and not ("@" <= data[j] <= "~"):
                j += 1
                if j - i > 64:
                    return j  # not a sequence we know: skip it
            if j >= len(data):
                return -1
            self._csi(data[i + 2 : j], data[j])
            return j + 1
        if kind == "]":  # operating system command, to BEL or ST
            bel = data.find("\x07", i)
            st = data.find(ESC + "\\", i)
            ends = [e for e in (bel, st) if e >= 0]
            if not ends:
                return -1 if len(data) - i < 512 else len(data)
            end = min(ends)
            return end + (1 if end == bel else 2)
        if kind in "()*+#%":
            return i + 3 if i + 2 < len(data) else -1  # charset designation
        if kind == "7":
            self.saved = (self.row, self.col)
        elif kind == "8":
            self.row, self.col = self.saved
        elif kind == "M":
            if self.row == self.top:
                self._scroll_down(self.top, self.bottom, 1)
            else:
                self.row = max(0, self.row - 1)
        elif kind == "D":
            self._line_feed()
        elif kind == "E":
            self.col = 0
            self._line_feed()
        elif kind == "c":
            self.__init__(self.rows, self.cols)  # type: ignore[misc]
            self._stale.update(range(self.rows))  # blank now, whatever they showed
        self.wrap_pending = False
        return i + 2

    def _csi(self, params: str, final: str) -> None:
        private = params.startswith(("?", ">", "="))
        body = params.lstrip("?>=")
        values = [int(p) if p.isdigit() else 0 for p in body.split(";")] if body else []
        first = values[0] if values else 0
        count = max(1, first)
        if private:
            if final in "hl" and 7 in values:
                self.autowrap = final == "h"
            if final in "hl" and (1049 in values or 47 in values or 1047 in values):
                self._erase_display(2)
                self.row = self.col = 0
            return
        self.wrap_pending = False
        self.moved = final in "HfdG`ABCD"
        if final in "Hf":
            row = values[0] if values else 1
            col = values[1] if len(values) > 1 else 1
            self.row = min(self.rows, max(1, row)) - 1
            self.col = min(self.cols, max(1, col)) - 1
        elif final == "d":
            self.row = min(self.rows, max(1, first or 1)) - 1
        elif final in "G`":
            self.col = min(self.cols, max(1, first or 1)) - 1
        elif final == "A":
            self.row = max(0, self.row - count)
        elif final == "B":
            self.row = min(self.rows - 1, self.row + count)
        elif final == "C":
            self.col = min(self.cols - 1, self.col + count)
        elif final == "D":
            self.col = max(0, self.col - count)
        elif final == "J":
            self._erase_display(first)
        elif final == "K":
            self._erase_line(first)
        elif final == "X":
            for c in range(self.col, min(self.cols, self.col + count)):
                self.grid[self.row][c] = " "
            self._changed()
        elif final == "P":
            line = self.grid[self.row]
            del line[self.col : self.col + count]
            line.extend([" "] * (self.cols - len(line)))
            self._changed()
        elif final == "@":
            line = self.grid[self.row]
            line[self.col : self.col] = [" "] * count
            del line[self.cols :]
            self._changed()
        elif final == "L" and self.top <= self.row <= self.bottom:
            self._scroll_down(self.row, self.bottom, count)
        elif final == "M" and self.top <= self.row <= self.bottom:
            self._scroll_up(self.row, self.bottom, count)
        elif final == "S":
            self._scroll_up(self.top, self.bottom, count)
        elif final == "T":
            self._scroll_down(self.top, self.bottom, count)
        elif final == "b":
            for _ in range(min(count, self.rows * self.cols)):
                self._put(self.last_char)
        elif final == "r":
            top = (values[0] if values else 1) or 1
            bottom = (values[1] if len(values) > 1 else self.rows) or self.rows
            if 1 <= top < bottom <= self.rows:
                self.top, self.bottom = top - 1, bottom - 1
            self.row = self.col = 0

    def _erase_display(self, how: int) -> None:
        if how in (2, 3):
            self.grid = [[" "] * self.cols for _ in range(self.rows)]
        elif how == 0:
            self._erase_line(0)
            for r in range(self.row + 1, self.rows):
                self.grid[r] = [" "] * self.cols
        elif how == 1:
            self._erase_line(1)
            for r in range(self.row):
                self.grid[r] = [" "] * self.cols
        self._changed()

    def _erase_line(self, how: int) -> None:
        line = self.grid[self.row]
        if how == 0:
            span = range(self.col, self.cols)
        elif how == 1:
            span = range(0, self.col + 1)
        else:
            span = range(self.cols)
        for c in span:
            line[c] = " "
        self._changed()
