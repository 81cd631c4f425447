"""Dataclasses' generated methods, compiled once per machine instead of at every start.

:mod:`dataclasses` writes each class's ``__init__``, ``__repr__``, ``__eq__`` (and, for a
frozen class, ``__hash__``, ``__setattr__``, ``__delattr__``) as Python source and
compiles it with :func:`exec` when the class statement runs. Python keeps a module's
bytecode in ``__pycache__``, but not these: gputop-hints' ~80 record and threshold
classes cost ~450 compilations, about 40 % of what importing the package costs, at
every start (``bench/import_cost.py``; issue 49's ``--once``).

:func:`install` keeps them: each compiled code object, keyed by its exact source text,
in one :mod:`marshal` file in the user's cache directory (``$XDG_CACHE_HOME/gputop-hints``,
else ``~/.cache/gputop-hints``), named for the interpreter's bytecode
(``sys.implementation.cache_tag``) and marshal's format. The file is one dict, text ->
the code's own marshal bytes: it is read in one piece and only the codes this run's
classes ask for are unmarshalled -- reading every code object of a file kept by many
runs (and versions), through a file object, took longer than the compilations it
saved (~40 ms for 750 texts; issue 49's ``--once``). A text that is not in the file
is compiled as before, and the file is written again at exit with it. Compiling a text
and running the code is what ``exec(text)`` does -- with no ``from __future__`` flags
inherited, as ``dataclasses`` has none -- so a class comes out the same whether its
methods came from the file or not; a file that cannot be read or written costs the
time it would have saved, nothing else. As Python's own bytecode cache, nothing is
written where ``sys.dont_write_bytecode`` is set (``PYTHONDONTWRITEBYTECODE``, ``-B``);
``GPUTOP_HINTS_NO_CLASS_CACHE=1`` neither reads nor writes it.

Only ``dataclasses``' own calls go through the cache: it looks ``exec`` up in its module's
globals before the builtins, and :func:`install` puts the caching one there.
"""

from __future__ import annotations

import atexit
import builtins
import marshal
import os
import sys
import tempfile
from pathlib import Path
from types import CodeType
from typing import Any

DISABLE_ENV = "GPUTOP_HINTS_NO_CLASS_CACHE"
MAX_ENTRIES = 4096
"""Beyond this many texts the file keeps only those the last run used (classes change
from one version to the next; the file must not grow without end)."""

_exec = builtins.exec


class _Cache:
    """The code objects by source text, what this run compiled, and what it used."""

    def __init__(self) -> None:
        self.path: Path | None = None
        """Where the file is: worked out at the first class, so that the environment
        the process has by then (a test's, a user's) decides."""
        self.codes: dict[str, CodeType | bytes] = {}
        """Source text -> its code, or the code's marshal bytes until a class asks."""
        self.compiled = 0
        self.used: set[str] = set()
        self._loaded = False

    def _load(self) -> None:
        self._loaded = True
        self.path = cache_path()
        if self.path is None:
            return
        try:
            with open(self.path, "rb") as f:
                codes = marshal.loads(f.read())
        except (OSError, EOFError, ValueError, TypeError):
            return  # none yet, unreadable or damaged: compiled as before
        if isinstance(codes, dict) and all(
            type(k) is str and type(v) is bytes for k, v in codes.items()
        ):
            self.codes = codes

    def exec(self, source: Any, globals: Any = None, locals: Any = None, /) -> None:
        """``exec(source, globals, locals)``, a source text compiled once per machine."""
        if type(source) is not str:
            _exec(source, globals, locals)
            return
        if not self._loaded:
            self._load()
        code = self.codes.get(source)
        if type(code) is bytes:
            try:
                code = marshal.loads(code)
            except (EOFError, ValueError, TypeError):
                code = None  # a damaged entry: compiled again below
        if type(code) is not CodeType:
            code = compile(source, "<string>", "exec", dont_inherit=True)
            self.compiled += 1
        self.codes[source] = code
        self.used.add(source)
        _exec(code, globals, locals)

    def save(self) -> None:
        """Write the file again if this run compiled anything (atomically: a reader sees
        the old file or the new one)."""
        if not self.compiled or self.path is None or sys.dont_write_bytecode:
            return
        codes = self.codes
        if len(codes) > MAX_ENTRIES:
            codes = {k: v for k, v in codes.items() if k in self.used}
        codes = {k: v if type(v) is bytes else marshal.dumps(v) for k, v in codes.items()}
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(prefix=".classes-", dir=self.path.parent)
            try:
                with os.fdopen(fd, "wb") as f:
                    marshal.dump(codes, f)
                os.replace(name, self.path)
            except BaseException:
                os.unlink(name)
                raise
        except (OSError, ValueError):
            return  # a read-only or full disk: the next start compiles again
        self.compiled = 0


def cache_path() -> Path | None:
    """Where this interpreter's file lives, or None without a home to put it in."""
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        home = os.environ.get("HOME")
        if not home:
            return None
        base = os.path.join(home, ".cache")
    tag = sys.implementation.cache_tag or "python"
    return Path(base) / "gputop-hints" / f"dataclasses.{tag}.m{marshal.version}.lazy"


_installed: _Cache | None = None


def install() -> _Cache | None:
    """Route ``dataclasses``' compilations through the cache (once a process); the
    cache, or None where ``GPUTOP_HINTS_NO_CLASS_CACHE`` is set."""
    global _installed
    if _installed is not None or os.environ.get(DISABLE_ENV):
        return _installed
    import dataclasses

    cache = _Cache()
    dataclasses.exec = cache.exec  # type: ignore[attr-defined]
    atexit.register(cache.save)
    _installed = cache
    return cache
