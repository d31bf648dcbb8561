"""The guard: the one process between assay and a job, so that no process of the job outlives
assay, even when assay is killed with SIGKILL.

    python guard.py --parent PID [--grace S] -- ARGV...

Why a process of its own: an MPI launcher's ranks escape every simple net. OpenMPI's ``mpirun``
puts each rank in a process group of its own (a group kill misses them), and MPICH's hydra
runs ``setsid()`` in ``hydra_pmi_proxy`` *and* in every rank (a session kill misses them too).
``PR_SET_PDEATHSIG`` reaches only a direct child. So the guard

* is a *child subreaper* (``PR_SET_CHILD_SUBREAPER``): every orphaned descendant of the job,
  whatever group or session it moved to, is re-parented to the guard, never to init, so the
  guard can always find the whole tree (``/proc``, by parent pid) and reap it;
* gets ``SIGTERM`` when assay dies (``PR_SET_PDEATHSIG``, set on itself, checked against the
  race where assay died first), and the job's own process gets ``SIGTERM`` when the guard dies;
* on ``SIGTERM``/``SIGINT``/``SIGHUP`` (assay's timeout or Ctrl-C, or assay's death) sends
  ``SIGTERM`` to the whole tree (``mpirun``/``mpiexec`` forward it and clean up), waits
  ``--grace`` seconds, then ``SIGKILL``s what is left until it has no child at all;
* when the job ends by itself, kills whatever the job left behind, and exits with the job's
  status (a job killed by a signal makes the guard die of the same signal, so the caller sees
  exactly what a direct child would have shown).

Standard library only and run by path (``python -I -S guard.py``), so it starts in ~20 ms
without importing assay. Linux only (prctl).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import resource
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
_libc = ctypes.CDLL(None, use_errno=True)
_stop: list[int] = []


class _Stop(Exception):
    """Raised by the first stop signal, so a blocking wait returns (PEP 475 would retry it)."""


def _prctl(option: int, value: int) -> None:
    if _libc.prctl(option, value, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}): {os.strerror(err)}")


def _on_stop(signum: int, _frame) -> None:
    if not _stop:  # later signals change nothing: the tree is already being ended
        _stop.append(signum)
        raise _Stop


def descendants(root: int) -> list[int]:
    """Every process below ``root``, read from /proc (parent pid is field 4 of stat)."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # the command name (field 2) may hold spaces and parentheses: split after the last ')'
        ppid = int(stat[stat.rindex(b")") + 2 :].split()[1])
        children.setdefault(ppid, []).append(int(name))
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def _signal_all(sig: int) -> int:
    pids = descendants(os.getpid())
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
    return len(pids)


def _reap(block: bool) -> list[tuple[int, int]]:
    """Reap every child that ended; [] when none did (or none is left)."""
    ended = []
    while True:
        try:
            pid, status = os.waitpid(-1, 0 if block else os.WNOHANG)
        except ChildProcessError:
            return ended
        except InterruptedError:
            continue
        if pid == 0:
            return ended
        ended.append((pid, status))
        block = False


def _has_children() -> bool:
    return bool(descendants(os.getpid()))


def _end_tree(grace: float) -> None:
    """SIGTERM everything, give it ``grace`` seconds, then SIGKILL until nothing is left."""
    if _signal_all(signal.SIGTERM) == 0:
        _reap(block=False)
        return
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        _reap(block=False)
        if not _has_children():
            return
        time.sleep(0.05)
    # A process may fork while we kill: repeat until the subreaper has no descendant at all.
    for _ in range(200):
        if _signal_all(signal.SIGKILL) == 0:
            break
        time.sleep(0.02)
        _reap(block=False)
    _reap(block=False)


def _exit_like(status: int) -> None:
    """Exit as the job did: same code, or death by the same signal."""
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the job dumped its own core
        signal.signal(sig, signal.SIG_DFL)
        os.kill(os.getpid(), sig)
        time.sleep(1)
        sys.exit(128 + sig)
    sys.exit(os.waitstatus_to_exitcode(status))


def _start(argv: list[str]) -> int:
    """fork + exec; the job gets SIGTERM if the guard dies (belt and braces)."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            for sig in STOP_SIGNALS:
                signal.signal(sig, signal.SIG_DFL)
            _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
            os.execvp(argv[0], argv)
        except OSError as exc:
            os.write(w, f"{exc.errno}".encode())
        finally:
            os._exit(127)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        failed = f.read()  # empty once exec succeeded (the pipe closes on exec)
    if failed:
        os.waitpid(pid, 0)
        err = int(failed)
        print(f"assay-guard: cannot start {argv[0]}: {os.strerror(err)}", file=sys.stderr)
        sys.exit(127)
    return pid


def main(args: list[str]) -> None:
    if "--" not in args:
        print("usage: guard.py --parent PID [--grace S] -- ARGV...", file=sys.stderr)
        sys.exit(2)
    sep = args.index("--")
    opts, argv = args[:sep], args[sep + 1 :]
    parent = int(opts[opts.index("--parent") + 1])
    grace = float(opts[opts.index("--grace") + 1]) if "--grace" in opts else 3.0
    for sig in STOP_SIGNALS:
        signal.signal(sig, _on_stop)
    _prctl(PR_SET_CHILD_SUBREAPER, 1)
    _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # assay died before the line above: do not start the job
        sys.exit(128 + signal.SIGTERM)
    status = None
    try:
        job = _start(argv)
        while status is None:
            try:
                pid, st = os.waitpid(-1, 0)
            except ChildProcessError:
                break
            if pid == job:
                status = st
        # The job ended by itself: whatever it left running (a daemon, an orphan) goes too.
        if _has_children():
            print("assay-guard: the job left processes running; ending them", file=sys.stderr)
            _end_tree(min(grace, 1.0))
    except _Stop:
        _end_tree(grace)
        _exit_like(_stop[0])  # a wait status of N means "killed by signal N": die of it too
    _exit_like(status if status is not None else 0)


if __name__ == "__main__":
    main(sys.argv[1:])
