"""``gputop-hints run [monitor options] -- CMD ARGS...``: start a job under the monitor.

The job runs as the monitor's child, in a session (and process group) of its own, its
standard output and error going to a log file (``--log``; default
``gputop-hints-run-<time>.log`` here) so that its output never garbles the monitor's
screen; standard input is /dev/null. The monitor is the normal one, with the monitor's
options: full-screen on a terminal, a one-off summary without one (then it waits for
the job).

Permissions (docs/stacks.md): under Yama ``ptrace_scope`` 1 only a process's ancestors
may ptrace it, and py-spy, the monitor's child, is the job's sibling. So the job's child
process calls ``prctl(PR_SET_PTRACER, <monitor pid>)`` before it runs CMD: the monitor
and its descendants may then read the job's main process. Forked DataLoader workers do
not inherit that (the kernel resets it at fork; ``Documentation/admin-guide/LSM/Yama.rst``).

How it ends: when the job exits, the monitor stops and ``run`` exits with the job's
status (a job killed by signal N: 128 + N, as a shell says). When the monitor is stopped
first (``q``, Ctrl-C, SIGTERM), the job's process group gets SIGINT, then SIGTERM after
:data:`INT_WAIT_S`, then SIGKILL after :data:`TERM_WAIT_S`; each step is said.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import IO

from gputop_hints.cli.args import EXIT_USAGE

PR_SET_PTRACER = 0x59616D61
"""``prctl`` option (Yama): name the one process (and its descendants) that may ptrace us."""
INT_WAIT_S = 10.0
"""How long a job has to stop after SIGINT (a training loop saving a checkpoint) before SIGTERM."""
TERM_WAIT_S = 5.0
"""After SIGTERM, how long before SIGKILL."""
EXIT_NOT_FOUND = 127
EXIT_NOT_EXECUTABLE = 126
"""What a shell says for a command it cannot find / cannot run."""
EXIT_INTERRUPTED = 130
EXIT_SIGNAL_BASE = 128

USAGE = "gputop-hints run [--log FILE] [--no-stacks] [monitor options] -- CMD [ARGS ...]"
DESCRIPTION = """\
Start CMD as a child of the monitor and watch it: its output goes to a log file, the
monitor stays on the screen, and its stacks may be read even where the kernel lets a
process be read only by its ancestors (Yama ptrace_scope 1; docs/stacks.md). When CMD
exits, the monitor exits with CMD's status; stopping the monitor (q, Ctrl-C) sends CMD's
process group SIGINT, then SIGTERM if it has not stopped in 10 s.

Every monitor option is accepted (gputop-hints --help): --once/--json print a summary
after --duration and then wait for CMD; without a terminal, as the monitor does, the
summary is printed instead of the screen."""


@dataclass(frozen=True)
class RunOptions:
    """What ``run`` itself takes; everything else before ``--`` is the monitor's."""

    command: tuple[str, ...]
    log: str
    stacks: bool
    """False with ``--no-stacks``: passed on to the monitor, which then never samples."""
    monitor_args: tuple[str, ...]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gputop-hints run",
        usage=USAGE,
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--log",
        metavar="FILE",
        help="where CMD's standard output and error go, appended "
        "(default gputop-hints-run-<date>-<time>.log in this directory)",
    )
    parser.add_argument(
        "--no-stacks",
        action="store_true",
        help="do not read CMD's Python stacks (py-spy)",
    )
    return parser


def parse(argv: Sequence[str]) -> RunOptions | int:
    """The options, or an exit code (help shown: 0; a usage error, said: 2)."""
    words = list(argv)
    parser = _parser()
    if "--" not in words:
        if any(w in ("-h", "--help") for w in words):
            parser.print_help()
            return 0
        print(f"gputop-hints run: no command: put it after '--'\nusage: {USAGE}", file=sys.stderr)
        return EXIT_USAGE
    cut = words.index("--")
    before, command = words[:cut], words[cut + 1 :]
    if not command:
        print(
            f"gputop-hints run: nothing after '--': name the command to run\nusage: {USAGE}",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        own, rest = parser.parse_known_args(before)
    except SystemExit as exc:  # -h, or a bad value for --log
        return int(exc.code or 0)
    log = own.log or time.strftime("gputop-hints-run-%Y%m%d-%H%M%S.log")
    return RunOptions(tuple(command), log, not own.no_stacks, tuple(rest))


def _allow_tracing_by(pid: int) -> Callable[[], None]:
    """A ``preexec_fn``: in the child, before exec, let ``pid`` (and its descendants)
    ptrace it. libc is loaded here, before the fork; the call fails harmlessly (EINVAL)
    where there is no Yama."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        prctl = libc.prctl
    except (OSError, AttributeError):
        return lambda: None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]

    def allow() -> None:
        prctl(PR_SET_PTRACER, pid, 0, 0, 0)

    return allow


def status_text(code: int) -> str:
    """A job's ``returncode`` in words."""
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return f"was killed by {name}"
    return f"exited with status {code}"


def exit_code(code: int) -> int:
    """A ``returncode`` as a shell's exit status (killed by signal N: 128 + N)."""
    return EXIT_SIGNAL_BASE - code if code < 0 else code


class Job:
    """The job: started in a session of its own, its output to ``log``."""

    def __init__(self, command: Sequence[str], log: IO[bytes]) -> None:
        self.proc = subprocess.Popen(
            list(command),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: Ctrl-C reaches it from us
            preexec_fn=_allow_tracing_by(os.getpid()),  # the job's own ptrace rule
        )
        self.pid = self.proc.pid
        self.ended = threading.Event()

    def watch(self, on_exit: Callable[[], None]) -> None:
        """Call ``on_exit`` from a thread once the job exits."""

        def wait() -> None:
            self.proc.wait()
            self.ended.set()
            on_exit()

        threading.Thread(target=wait, name="gputop-hints-run-job", daemon=True).start()

    def stop(self) -> str:
        """SIGINT to the job's group, then SIGTERM, then SIGKILL, each after a bounded
        wait; what happened, in words."""
        steps = [
            (signal.SIGINT, INT_WAIT_S),
            (signal.SIGTERM, TERM_WAIT_S),
            (signal.SIGKILL, TERM_WAIT_S),
        ]
        sent: list[str] = []
        for signum, wait_s in steps:
            if self.proc.poll() is not None:
                break
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.pid, signum)
            sent.append(signum.name)
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=wait_s)
        if self.proc.returncode is None:
            return f"sent {', then '.join(sent)}; the job (pid {self.pid}) is still running"
        how = status_text(self.proc.returncode)
        if not sent:
            return f"the job (pid {self.pid}) {how}"
        return f"sent the job's process group {', then '.join(sent)}: it {how}"


class _JobEnded(Exception):
    """Raised in the main thread (by SIGTERM to ourselves) when the job exits while the
    monitor still runs and has no handler of its own installed yet."""


def run_main(argv: Sequence[str]) -> int:
    """``gputop-hints run [options] -- CMD ARGS...``; the job's exit status."""
    options = parse(argv)
    if isinstance(options, int):
        return options
    from gputop_hints.cli.inputs import terminal_unusable
    from gputop_hints.cli.monitor import build_parser, monitor_main

    try:  # the monitor's options checked before the job starts
        build_parser().parse_args(options.monitor_args)
    except SystemExit as exc:
        return int(exc.code or 0)
    try:
        log = open(options.log, "ab")  # noqa: SIM115 -- held for the job's whole life
    except OSError as exc:
        print(f"gputop-hints run: cannot open the log {options.log}: {exc}", file=sys.stderr)
        return EXIT_USAGE
    with log:
        try:
            job = Job(options.command, log)
        except FileNotFoundError:
            print(f"gputop-hints run: {options.command[0]}: command not found", file=sys.stderr)
            return EXIT_NOT_FOUND
        except PermissionError as exc:
            print(f"gputop-hints run: {options.command[0]}: {exc.strerror}", file=sys.stderr)
            return EXIT_NOT_EXECUTABLE
        except OSError as exc:
            print(f"gputop-hints run: cannot start {options.command[0]}: {exc}", file=sys.stderr)
            return EXIT_USAGE
    print(
        f"gputop-hints run: started {' '.join(options.command)} (pid {job.pid}); "
        f"its output goes to {options.log}",
        file=sys.stderr,
        flush=True,
    )
    monitor_args = list(options.monitor_args)
    if not options.stacks and "--no-stacks" not in monitor_args:
        monitor_args.append("--no-stacks")
    full_screen = not ({"--once", "--json"} & set(monitor_args)) and terminal_unusable() is None
    monitoring = threading.Lock()
    watching = [full_screen]
    if full_screen:
        # The monitor stops when the job does: SIGTERM to ourselves is what the monitor
        # (first frame and app alike) answers by leaving its screen and returning.
        previous = signal.signal(signal.SIGTERM, _raise_job_ended)

        def stop_monitor() -> None:
            with monitoring:
                if watching[0]:
                    os.kill(os.getpid(), signal.SIGTERM)

        job.watch(stop_monitor)
    try:
        code = monitor_main(monitor_args)
        if not full_screen and code == 0 and job.proc.poll() is None:
            print(
                f"gputop-hints run: waiting for the job (pid {job.pid}) to exit; Ctrl-C stops it",
                file=sys.stderr,
                flush=True,
            )
            job.proc.wait()
    except SystemExit as exc:  # the monitor's usage errors past parsing (parser.error)
        code = int(exc.code) if isinstance(exc.code, int) else EXIT_USAGE
    except _JobEnded:  # before the monitor's own handler: the job, or a SIGTERM from outside
        code = 0 if job.ended.is_set() else EXIT_SIGNAL_BASE + signal.SIGTERM
    except KeyboardInterrupt:
        code = EXIT_INTERRUPTED
    finally:
        with monitoring:
            watching[0] = False
        if full_screen:
            signal.signal(signal.SIGTERM, previous)
    return _finish(job, code, options.log)


def _raise_job_ended(_signum: int, _frame: object) -> None:
    raise _JobEnded


def _finish(job: Job, monitor_code: int, log: str) -> int:
    """Say how the job ended (stopping it if the monitor stopped first); the exit status."""
    if job.proc.poll() is not None:
        job.ended.set()
        print(
            f"gputop-hints run: the job (pid {job.pid}) {status_text(job.proc.returncode)}; "
            f"its output is in {log}",
            file=sys.stderr,
        )
        return exit_code(job.proc.returncode)
    why = "interrupted" if monitor_code == EXIT_INTERRUPTED else "stopped"
    print(
        f"gputop-hints run: the monitor was {why} while the job (pid {job.pid}) ran; "
        f"stopping it (SIGINT, then SIGTERM after {INT_WAIT_S:g} s)",
        file=sys.stderr,
        flush=True,
    )
    try:
        what = job.stop()
    except KeyboardInterrupt:  # a second Ctrl-C: no more waiting
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(job.pid, signal.SIGKILL)
        job.proc.wait()
        what = f"a second Ctrl-C: sent SIGKILL: it {status_text(job.proc.returncode)}"
    print(f"gputop-hints run: {what}; its output is in {log}", file=sys.stderr)
    if monitor_code != 0 or job.proc.returncode is None:
        return monitor_code or EXIT_INTERRUPTED
    return exit_code(job.proc.returncode)  # q: the job's own status, once stopped
