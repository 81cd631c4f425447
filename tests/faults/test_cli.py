"""The fault matrix of the command line and the recorder: signals, bad arguments,
files in the way, readers that go away. Each test's docstring says, in its first
line, what was tried and what the user must see.

Everything runs the real entry point (``python -m gputop_hints``) in a
subprocess, with real signals, real pipes and real files, the way a user or a
job script meets it. Nothing here needs a GPU.
"""

from __future__ import annotations

import array
import fcntl
import gzip
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from gputop_hints.recording import RecordingWriter
from gputop_hints.recording.reader import count_ticks, open_recording
from gputop_hints.sources.demo import DemoSource
from tests.support.paths import REPO

SAFETY_TIMEOUT_S = 30.0
"""A bound on every wait: a hang fails the test instead of stalling the suite."""


def cli_env() -> dict[str, str]:
    """The environment a user's shell gives: no config override, no colour tricks."""
    env = dict(os.environ)
    env.pop("GPUTOP_HINTS_CONFIG", None)
    return env


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``gputop-hints ARGS`` to completion, without a terminal; output captured."""
    return subprocess.run(
        [sys.executable, "-m", "gputop_hints", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        check=False,
    )


def start_recorder(path: Path, *extra: str) -> subprocess.Popen[str]:
    """``gputop-hints record -o PATH --demo`` running, four ticks a second."""
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "gputop_hints",
            "record",
            "-o",
            str(path),
            "--demo",
            "--interval",
            "0.25",
            *extra,
        ],
        cwd=REPO,
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def wait_for_ticks(path: Path, ticks: int, proc: subprocess.Popen[str]) -> None:
    """Until ``path`` holds ``ticks`` ticks (the recorder is then in its loop)."""
    deadline = time.monotonic() + SAFETY_TIMEOUT_S
    while time.monotonic() < deadline:
        if path.exists() and count_ticks(path) >= ticks:
            return
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(0.05)
    raise AssertionError(f"the recorder wrote fewer than {ticks} ticks")


# -- the recorder ---------------------------------------------------------------------------


def test_sighup_closes_a_gzip_recording_with_its_trailer(tmp_path: Path) -> None:
    """SIGHUP (SSH dropped) to record -o X.gz: file complete with gzip trailer, summary, exit 0.

    Left to Python's default, a hang-up killed the recorder mid-stream: no
    trailer (gzip readers report a truncated file) and no summary line.
    """
    path = tmp_path / "run.jsonl.gz"
    proc = start_recorder(path)
    wait_for_ticks(path, 3, proc)
    proc.send_signal(signal.SIGHUP)
    _, err = proc.communicate(timeout=SAFETY_TIMEOUT_S)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
    assert "ticks" in err and str(path) in err
    # gzip raises EOFError on a stream without its trailer; this one reads to the end.
    with gzip.open(path, "rb") as f:
        assert f.read().endswith(b"\n")
    stream = open_recording(path)
    assert len(list(stream)) >= 3
    assert not stream.truncated and stream.counters.bad_lines == 0


def test_record_refuses_to_overwrite_a_file_that_is_not_a_recording(tmp_path: Path) -> None:
    """record -o README.md (an existing text file): refused with a message, exit 2, file intact."""
    readme = tmp_path / "README.md"
    readme.write_text("# My project\n\nDo not lose me.\n")
    result = run_cli("record", "-o", str(readme), "--demo", "--duration", "1")
    assert result.returncode == 2, result.stderr
    assert "not a gputop-hints recording" in result.stderr and "--force" in result.stderr
    assert "Traceback" not in result.stderr
    assert readme.read_text() == "# My project\n\nDo not lose me.\n"


def test_record_force_replaces_a_file_that_is_not_a_recording(tmp_path: Path) -> None:
    """record -o NOTES --force: the file is replaced by a recording, exit 0."""
    notes = tmp_path / "notes.jsonl"
    notes.write_text("scratch\n")
    result = run_cli("record", "-o", str(notes), "--force", "--demo", "--duration", "2")
    assert result.returncode == 0, result.stderr
    assert len(list(open_recording(notes))) == 2


def test_record_keeps_an_earlier_recording_unless_forced(tmp_path: Path) -> None:
    """record -o RUN twice: the second is refused, exit 2, the first run intact (issue 44:
    it was replaced without a word); with --force it is replaced, exit 0."""
    run = tmp_path / "run.jsonl.gz"
    assert run_cli("record", "-o", str(run), "--demo", "--duration", "3").returncode == 0
    again = run_cli("record", "-o", str(run), "--demo", "--duration", "2")
    assert again.returncode == 2, again.stderr
    assert "earlier recording" in again.stderr and "--force" in again.stderr
    assert "Traceback" not in again.stderr
    assert len(list(open_recording(run))) == 3
    forced = run_cli("record", "-o", str(run), "--force", "--demo", "--duration", "2")
    assert forced.returncode == 0, forced.stderr
    assert len(list(open_recording(run))) == 2


def test_record_refuses_when_rotation_would_replace_a_file_that_is_not_a_recording(
    tmp_path: Path,
) -> None:
    """record --max-bytes with FILE.2 a text file: refused before recording, exit 2, file intact."""
    run = tmp_path / "run.jsonl"
    part = tmp_path / "run.jsonl.2"
    part.write_text("someone's notes\n")
    result = run_cli("record", "-o", str(run), "--max-bytes", "4000", "--demo", "--duration", "20")
    assert result.returncode == 2, result.stderr
    assert str(part) in result.stderr and "Traceback" not in result.stderr
    assert part.read_text() == "someone's notes\n"
    assert not run.exists()


def test_record_to_a_fifo_is_refused_instead_of_blocking(tmp_path: Path) -> None:
    """record -o FIFO (nobody reading): refused with a message, exit 2, no hang, no traceback."""
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result = run_cli("record", "-o", str(fifo), "--demo", "--duration", "1", timeout=30)
    assert result.returncode == 2, result.stderr
    assert "not a regular file" in result.stderr and "Traceback" not in result.stderr


def test_record_says_when_it_creates_a_directory(tmp_path: Path) -> None:
    """record -o new/dir/run.jsonl: the directory is created and stderr says so, exit 0."""
    run = tmp_path / "runs" / "today" / "run.jsonl"
    result = run_cli("record", "-o", str(run), "--demo", "--duration", "1")
    assert result.returncode == 0, result.stderr
    assert f"created directory {run.parent}" in result.stderr
    assert len(list(open_recording(run))) == 1


def test_record_when_a_file_blocks_the_directory_fails_with_a_message(tmp_path: Path) -> None:
    """record -o FILE/sub/run.jsonl (a file where a directory must go): message, exit 1."""
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    result = run_cli("record", "-o", str(blocker / "sub" / "run.jsonl"), "--demo")
    assert result.returncode == 1, result.stderr
    assert "cannot create the directory" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("--max-bytes", "0", "must be at least 1"),
        ("--max-bytes", "-100", "must be at least 1"),
        ("--max-bytes", "1MB", "not a whole number"),
        ("--keep", "-1", "must be at least 0"),
    ],
)
def test_record_size_and_keep_are_checked_by_the_parser(
    tmp_path: Path, option: str, value: str, message: str
) -> None:
    """record --max-bytes 0/-100/1MB or --keep -1: usage message naming the option, exit 2."""
    run = tmp_path / "run.jsonl"
    result = run_cli("record", "-o", str(run), option, value, "--demo", "--duration", "2")
    assert result.returncode == 2, result.stderr
    assert f"argument {option}: {message}" in result.stderr
    assert "Traceback" not in result.stderr
    assert not run.exists()


# -- SLURM job ids --------------------------------------------------------------------------


def scontrol_spy(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose ``scontrol`` logs each call's arguments, then runs the real one.

    Returns the environment and the log: one line per call, arguments separated
    by the unit separator (\\x1f). Without SLURM installed the spy answers like
    an scontrol that cannot reach its controller (exit 1).
    """
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "scontrol.log"
    log.touch()
    real = shutil.which("scontrol")
    run_real = f'exec {shlex.quote(real)} "$@"' if real else "exit 1"
    spy = bin_dir / "scontrol"
    spy.write_text(
        f"#!/bin/sh\nprintf '%s\\037' \"$@\" >> {shlex.quote(str(log))}\n"
        f"printf '\\n' >> {shlex.quote(str(log))}\n{run_real}\n"
    )
    spy.chmod(0o755)
    env = cli_env()
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    for key in ("SLURM_JOB_ID", "SLURM_JOBID"):
        env.pop(key, None)
    return env, log


def scontrol_calls(log: Path) -> list[list[str]]:
    """The argument lists the spy saw, one per call."""
    return [line.split("\x1f")[:-1] for line in log.read_text().splitlines()]


@pytest.mark.parametrize(
    "command",
    [
        ("--demo", "--once", "--duration", "1"),
        ("--once", "--duration", "1"),
        ("record", "-o", "{out}", "--demo", "--duration", "1"),
    ],
    ids=["demo", "live", "record"],
)
@pytest.mark.parametrize("job", ["--clusters=evil", "12;id", "123.0", "１２３", "1" * 11])
def test_a_job_id_that_is_not_one_never_reaches_scontrol(
    tmp_path: Path, command: tuple[str, ...], job: str
) -> None:
    """--job=--clusters=evil (and other non-ids), live, demo, record: exit 2, scontrol never run."""
    env, log = scontrol_spy(tmp_path)
    args = [a.replace("{out}", str(tmp_path / "run.jsonl")) for a in command]
    result = subprocess.run(
        [sys.executable, "-m", "gputop_hints", *args, f"--job={job}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    assert result.returncode == 2, result.stderr
    assert "is not a SLURM job id" in result.stderr and "Traceback" not in result.stderr
    assert scontrol_calls(log) == []


@pytest.mark.parametrize("job", ["4242", "4242_7", "4242+1"])
def test_every_documented_job_id_form_is_passed_to_scontrol_as_one_argument(
    tmp_path: Path, job: str
) -> None:
    """--job 4242 / 4242_7 (array task) / 4242+1 (het job), live: asked of scontrol, no traceback.

    No such job is running here, so the monitor says so (exit 2); what matters
    is that the id was accepted and handed to ``scontrol show job`` whole.
    """
    env, log = scontrol_spy(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "gputop_hints", "--once", "--duration", "1", f"--job={job}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        check=False,
    )
    assert "Traceback" not in result.stderr
    assert "not a SLURM job id" not in result.stderr
    assert ["show", "job", "-d", "-o", job] in scontrol_calls(log)


# -- readers that go away, and Ctrl-C -------------------------------------------------------


@pytest.fixture(scope="module")
def small_recording(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A few seconds of the demo, recorded: something for ``report`` to print about."""
    path = tmp_path_factory.mktemp("recording") / "run.jsonl"
    with RecordingWriter(path) as writer:
        source = DemoSource("starved-loader")
        for _ in range(20):
            writer.write(source.sample())
    return path


PRINTING_COMMANDS: dict[str, tuple[tuple[str, ...], int]] = {
    "once": (("--demo", "--once", "--duration", "1"), 141),
    "json": (("--demo", "--json", "--duration", "1"), 141),
    "report": (("report", "{recording}"), 141),
    "report-json": (("report", "{recording}", "--json"), 141),
    "config": (("config", "--print-defaults"), 141),
    "config-show": (("config", "--show"), 141),
    "list-scenarios": (("--list-scenarios",), 141),
    # argparse itself drops help it cannot write and exits 0: quiet too.
    "help": (("--help",), 0),
    "record-help": (("record", "--help"), 0),
}
"""Commands that print, with the exit status expected when nobody reads what they print."""


@pytest.mark.parametrize("name", sorted(PRINTING_COMMANDS))
def test_a_reader_that_goes_away_ends_the_command_quietly(name: str, small_recording: Path) -> None:
    """Output into a pipe whose reader is gone (| head -c 10): quiet exit (141), no traceback.

    The read end is closed before the command writes, so its first write fails
    with EPIPE, as it does when ``head`` has read enough and left.
    """
    command, expected_status = PRINTING_COMMANDS[name]
    args = [a.replace("{recording}", str(small_recording)) for a in command]
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "gputop_hints", *args],
            cwd=REPO,
            env=cli_env(),
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)
    assert "Traceback" not in result.stderr and "BrokenPipeError" not in result.stderr
    assert result.stderr == ""
    assert result.returncode == expected_status


BIG_NODE_JSON = ("--demo", "--json", "--gpus", "8", "--processes", "256", "--duration", "1")
"""A summary of several hundred kilobytes: more than a pipe holds."""


def test_ctrl_c_while_printing_a_summary_exits_130_without_a_traceback() -> None:
    """Ctrl-C (SIGINT) while --json is being written: exit 130, no traceback.

    The summary of a big simulated node is larger than a pipe holds; nobody
    reads it until the pipe is full, so the command is surely inside its
    write (not still starting up) when the signal arrives.
    """
    proc = subprocess.Popen(
        [sys.executable, "-m", "gputop_hints", *BIG_NODE_JSON],
        cwd=REPO,
        env=cli_env(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    try:
        deadline = time.monotonic() + SAFETY_TIMEOUT_S
        while pipe_pending_bytes(proc.stdout.fileno()) < PIPE_FULL_BYTES:
            assert proc.poll() is None, "finished before filling the pipe"
            assert time.monotonic() < deadline, "the pipe never filled"
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=SAFETY_TIMEOUT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    text = err.decode()
    assert "Traceback" not in text and "KeyboardInterrupt" not in text
    assert proc.returncode == 130


PIPE_FULL_BYTES = 65536
"""Linux's default pipe capacity: this many unread bytes means the writer is blocked."""


def pipe_pending_bytes(fd: int) -> int:
    """Bytes written into the pipe ``fd`` reads from and not yet read (FIONREAD)."""
    buffer = array.array("i", [0])
    fcntl.ioctl(fd, termios.FIONREAD, buffer, True)
    return buffer[0]


# -- every subcommand: bad input ends in a message ------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ("--demo", "--once", "--duration", "nan"),
        ("--demo", "--once", "--duration", "inf"),
        ("--demo", "--json", "--window", "inf"),
        ("record", "-o", "{tmp}/run.jsonl", "--demo", "--duration", "nan"),
        ("record", "-o", "{tmp}/run.jsonl", "--demo", "--duration", "inf"),
        ("report", "--interval", "nan", "{tmp}/log.csv"),
        ("replay", "--window=-inf", "{tmp}/log.csv"),
    ],
    ids=lambda args: " ".join(args).replace("{tmp}/", ""),
)
def test_nan_and_infinity_as_seconds_are_usage_errors(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    """--duration/--window/--interval nan or inf, every subcommand: usage message, exit 2."""
    (tmp_path / "log.csv").write_text("timestamp,utilization.gpu [%]\n2024/01/01 00:00:00, 5\n")
    result = run_cli(*(a.replace("{tmp}", str(tmp_path)) for a in args))
    assert result.returncode == 2, result.stderr
    assert "not a finite number" in result.stderr and "Traceback" not in result.stderr
    assert not (tmp_path / "run.jsonl").exists()


def test_explain_of_an_unknown_rule_suggests_the_nearest() -> None:
    """explain input-starve (a typo): 'did you mean input-starved?', exit 2, no traceback."""
    result = run_cli("explain", "input-starve")
    assert result.returncode == 2
    assert "did you mean input-starved?" in result.stderr
    assert "Traceback" not in result.stderr and result.stdout == ""


def test_explain_of_a_huge_garbled_rule_answers_briefly() -> None:
    """explain with 100 000 characters of junk: a one-line message of bounded size, exit 2."""
    result = run_cli("explain", "\x1b[2J" + "x" * 100_000)
    assert result.returncode == 2
    assert "is not a rule" in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr) < 300


def test_an_empty_recording_reports_no_samples_and_exit_0_even_with_fail_on(
    tmp_path: Path,
) -> None:
    """report --fail-on warning of a 0-byte recording (a recorder killed at once): "no
    samples", exit 0, text and --json, as docs/recording.md says (it was exit 2)."""
    path = tmp_path / "run.jsonl"
    path.write_bytes(b"")
    text = run_cli("report", "--fail-on", "warning", str(path))
    assert text.returncode == 0, text.stderr
    assert "no samples" in text.stdout
    doc = run_cli("report", "--json", "--fail-on", "warning", str(path))
    assert doc.returncode == 0
    assert json.loads(doc.stdout)["sampling"]["samples"] == 0


def test_a_second_recorder_on_the_same_file_is_refused(tmp_path: Path) -> None:
    """Two `record -o run.jsonl` at once: the second is refused naming the file, exit 2,
    and the first's recording stays whole (they used to interleave silently)."""
    path = tmp_path / "run.jsonl"
    first = subprocess.Popen(
        [sys.executable, "-m", "gputop_hints", "record", "--demo", "-o", str(path),
         "--interval", "0.25"],  # no --duration: a demo is then paced in real time
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=cli_env(),
    )
    try:
        deadline = time.monotonic() + SAFETY_TIMEOUT_S
        while count_ticks(path) < 2 and time.monotonic() < deadline:
            time.sleep(0.1)
        second = run_cli("record", "--demo", "-o", str(path), "--duration", "1")
        assert second.returncode == 2
        assert "another gputop-hints record is writing" in second.stderr
        assert str(path) in second.stderr
    finally:
        first.send_signal(signal.SIGTERM)
        first.communicate(timeout=SAFETY_TIMEOUT_S)  # waits, and closes its stderr pipe
    assert first.returncode == 0
    stream = open_recording(path)
    try:
        assert sum(1 for _ in stream) >= 2 and stream.counters.bad_lines == 0
    finally:
        stream.close()


def test_record_with_stdout_and_stderr_closed_still_records(tmp_path: Path) -> None:
    """record started with stdout and stderr closed (a detached job, `>&- 2>&-`): it
    records and exits 0."""
    path = tmp_path / "run.jsonl"
    command = (
        f"exec {shlex.quote(sys.executable)} -m gputop_hints record --demo "
        f"-o {shlex.quote(str(path))} --duration 2 >&- 2>&-"
    )
    result = subprocess.run(
        ["sh", "-c", command], timeout=SAFETY_TIMEOUT_S, check=False, env=cli_env()
    )
    assert result.returncode == 0
    assert count_ticks(path) == 2
