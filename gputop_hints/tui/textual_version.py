"""The installed Textual's major version, without ``importlib.metadata``.

The modules that patch Textual's internals (:mod:`.input_decoding`,
:mod:`.partial_output`) do so only on the major version they were checked
against. ``importlib.metadata`` (and the email, zipfile and csv modules it
loads) would cost the monitor ~1.5 MB of resident memory and ~10 ms of start-up
for this one number, so the ``dist-info`` folder's name is read instead; only
where that is not there, or ambiguous, is ``importlib.metadata`` asked.
"""

from __future__ import annotations

import contextlib
import functools
from pathlib import Path


@functools.cache
def textual_major() -> int | None:
    """Textual's major version (8 for 8.2.8); None where it cannot be told."""
    import textual

    site = Path(textual.__file__).resolve().parent.parent
    infos = list(site.glob("textual-*.dist-info"))
    if len(infos) == 1:  # more than one (a stale install): ask importlib.metadata
        with contextlib.suppress(ValueError):
            return int(infos[0].name.removeprefix("textual-").split(".", 1)[0])
    from importlib.metadata import PackageNotFoundError, version

    try:
        return int(version("textual").split(".", 1)[0])
    except (PackageNotFoundError, ValueError):
        return None
