"""Run one argv as a subprocess in its own process group, with a timeout that kills the group."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from assay.errors import LaunchError

KILL_GRACE_S = 3.0


@dataclass
class LaunchOutcome:
    exit_code: int | None  # None when it never started or was killed by us
    wall_time: float
    timed_out: bool = False
    interrupted: bool = False
    hosts: list[str] = field(default_factory=list)


def _kill_group(proc: subprocess.Popen, grace: float = KILL_GRACE_S) -> None:
    """SIGTERM the whole group (mpirun forwards it to its ranks), SIGKILL what is left."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            # The leader is gone; its children in the group may not be.
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        except subprocess.TimeoutExpired:
            continue


def run_process(
    argv: list[str],
    *,
    env: dict[str, str],
    timeout: float,
    stdout_path: Path,
    stderr_path: Path,
    cwd: Path | None = None,
) -> LaunchOutcome:
    """Run ``argv``; stdout and stderr go to files so a crash or a kill still leaves them."""
    full_env = {**os.environ, **env}
    start = time.monotonic()
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        try:
            proc = subprocess.Popen(
                argv,
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                env=full_env,
                cwd=cwd,
                start_new_session=True,  # its own process group, so a timeout kills every rank
            )
        except OSError as exc:
            raise LaunchError(f"cannot start {argv[0]}: {exc.strerror}") from None
        try:
            code = proc.wait(timeout=timeout)
            return LaunchOutcome(code, time.monotonic() - start, hosts=[socket.gethostname()])
        except subprocess.TimeoutExpired:
            _kill_group(proc)
            return LaunchOutcome(None, time.monotonic() - start, timed_out=True)
        except KeyboardInterrupt:
            _kill_group(proc, grace=1.0)
            return LaunchOutcome(None, time.monotonic() - start, interrupted=True)
