"""Small Python programs the stack tests sample with a real py-spy: each prints ``ready``
once it is where the test expects to find it; :func:`start_program` and :func:`running`
start one and wait for that line."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path


def start_program(script: Path, source: str, python: str = sys.executable) -> subprocess.Popen[str]:
    """Write ``source`` (dedented) to ``script``, start it and wait for its ``ready``."""
    script.write_text(textwrap.dedent(source))
    proc = subprocess.Popen(
        [python, str(script)], stdout=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "ready"
    return proc


@contextlib.contextmanager
def running(script: Path, source: str) -> Iterator[subprocess.Popen[str]]:
    """:func:`start_program`, killed and reaped on the way out."""
    proc = start_program(script, source)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


WAITING_FOR_BATCH = """
import queue
batches = queue.Queue()

class Batches:
    def __next__(self):
        return batches.get()

def train():
    print("ready", flush=True)
    next(Batches())

train()
"""
"""A training loop blocked on its next batch: ``queue.get`` under ``Batches.__next__``."""
