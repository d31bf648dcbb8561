"""Run one argv under the guard (``guard.py``), with a timeout that ends the job's whole tree.

The guard is a subreaper in a session of its own: a timeout, Ctrl-C, SIGTERM or the death of
assay (even by SIGKILL) ends every process the job started, whatever group or session it
moved to. ``run_process`` must be called from the main thread: the guard's parent-death
signal fires when the *thread* that started it ends.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from assay.errors import LaunchError
from assay.inputfile import open_regular

KILL_GRACE_S = 3.0
GUARD = Path(__file__).with_name("guard.py")


@dataclass
class LaunchOutcome:
    exit_code: int | None  # None when it never started or was killed by us
    wall_time: float
    timed_out: bool = False
    interrupted: bool = False
    stop_signal: int = 0  # the signal that interrupted it (SIGINT for Ctrl-C, SIGTERM, ...)
    hosts: list[str] = field(default_factory=list)


def _stop_guard(proc: subprocess.Popen, grace: float = KILL_GRACE_S) -> None:
    """Ask the guard to end the job's tree (SIGTERM, ``grace`` s, SIGKILL); should the guard
    itself not end, SIGKILL its process group as a last resort."""
    try:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=grace + 5.0)
    except subprocess.TimeoutExpired:
        pass
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def run_process(
    argv: list[str],
    *,
    env: dict[str, str],
    timeout: float,
    stdout_path: Path,
    stderr_path: Path,
    cwd: Path | None = None,
    on_tick: Callable[[float], None] | None = None,
    tick_s: float = 1.0,
) -> LaunchOutcome:
    """Run ``argv``; stdout and stderr go to files so a crash or a kill still leaves them.

    ``on_tick(elapsed_s)`` is called about every ``tick_s`` seconds while the job runs (a
    progress line), here in the calling thread: no thread of ours, so signals and the guard's
    parent-death signal behave as without it. Should it raise, the job's tree is ended first.
    """
    full_env = {**os.environ, **env}
    guarded = [
        sys.executable, "-I", "-S", str(GUARD), "--parent", str(os.getpid()),
        "--grace", str(KILL_GRACE_S), "--", *argv,
    ]  # fmt: skip
    start = time.monotonic()
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        try:
            proc = subprocess.Popen(
                guarded,
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                env=full_env,
                cwd=cwd,
                start_new_session=True,  # out of reach of the terminal's Ctrl-C: assay decides
            )
        except OSError as exc:
            raise LaunchError(f"cannot start {argv[0]}: {exc.strerror}") from None
        try:
            code = _wait(proc, start, timeout, on_tick, tick_s)
        except subprocess.TimeoutExpired:
            _stop_guard(proc)
            return LaunchOutcome(None, time.monotonic() - start, timed_out=True)
        except Exception:  # a tick that failed (a closed pipe, say): no job outlives us
            _stop_guard(proc, grace=1.0)
            raise
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM/SIGHUP turned into one by execute
            _stop_guard(proc, grace=1.0)
            sig = getattr(exc, "signum", signal.SIGINT)
            return LaunchOutcome(None, time.monotonic() - start, interrupted=True, stop_signal=sig)
    if code == 127 and _guard_could_not_start(stderr_path):
        raise LaunchError(_guard_could_not_start(stderr_path))
    return LaunchOutcome(code, time.monotonic() - start, hosts=[socket.gethostname()])


def _wait(
    proc: subprocess.Popen,
    start: float,
    timeout: float,
    on_tick: Callable[[float], None] | None,
    tick_s: float,
) -> int:
    """The guard's exit status; ``on_tick`` between waits; TimeoutExpired past ``timeout``."""
    if on_tick is None:
        return proc.wait(timeout=timeout)
    deadline = start + timeout
    while True:
        left = deadline - time.monotonic()
        try:
            return proc.wait(timeout=max(0.0, min(left, tick_s)))
        except subprocess.TimeoutExpired:
            now = time.monotonic()
            if now >= deadline:
                raise
            on_tick(now - start)


def _guard_could_not_start(stderr_path: Path) -> str:
    """The guard's own 'cannot start' line, when exec of the job failed."""
    try:  # the first line only: a job's stderr may be large
        with open_regular(stderr_path, follow=False) as f:
            first = f.readline(4096).decode(errors="replace").rstrip("\n")
    except (OSError, ValueError):
        return ""
    prefix = "assay-guard: "
    return first[len(prefix) :] if first.startswith(prefix + "cannot start") else ""
