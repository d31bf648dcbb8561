"""fio client/server: the same workload from several hosts at once (issue 5, "Multi-client").

fio's client/server mode (fio man page, section "CLIENT / SERVER"): ``fio --server=ip:ADDR,PORT``
on a host runs whatever a client sends it; ``fio --client=ADDR,PORT JOBFILE --client=ADDR2,PORT2
JOBFILE2`` sends each host its own job file, runs them all at once and writes one json+ document
with a ``client_stats`` entry per host and job (its ``hostname`` is the address the client
connected to, without the port) and fio's own ``All clients`` sum.

Hosts (``assay.fio.hosts``: their syntax and their job files) are started and stopped here:

* a loopback address (127.0.0.0/8, ``::1``, ``localhost``) is *local*: its server is started
  here, ``fio --server=ip:ADDR,PORT --daemonize=PIDFILE``, and stopped by the pid fio wrote
  (SIGTERM to it and the job processes it forked, SIGKILL if they linger);
* any other host is *remote*: the same command through ``ssh -o BatchMode=yes -- HOST`` (or the
  command in ``$ASSAY_SSH``, as ``GIT_SSH_COMMAND`` or rsync's ``RSYNC_RSH``: a key, a port, a
  jump host), stopped through ssh too: SIGTERM, then SIGKILL, to every process whose command
  line holds the server's ``--daemonize=PIDFILE`` (the server and the workers it forked, which
  keep its command line). That needs password-less ssh, fio and pkill on the host; tested
  against a real sshd in a network namespace (tests/storage/test_fio_ssh.py);
* on Slurm (probe param ``clients = "nodes"``) the runner starts the servers itself, one srun
  step on the allocation's nodes (``assay.launch.slurm.servers``), and says so with
  ``ASSAY_FIO_SERVERS=launcher``: ``servers`` then only checks that they answer.

Merging. ``merge_entries`` turns several json+ job entries (several hosts, or several jobs run
together) into one with fio's own arithmetic: IOPS, bandwidth and I/O counts summed, latency
means weighted by I/O count, standard deviations pooled, and the percentiles read off the
merged histogram bins (``assay.parsers.fio.merge_clat_histograms``), never averaged. fio 3.33's
``All clients`` entry has no bins nor percentiles, hence this.
"""

from __future__ import annotations

import contextlib
import math
import os
import shlex
import signal
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.fio.hosts import ClientError, Host
from assay.inputfile import read_tail
from assay.parsers.fio import ALL_CLIENTS, merge_bins, percentiles_from_bins

SSH = ("ssh", "-o", "BatchMode=yes")  # no password prompt: a missing key fails at once
SSH_ENV = "ASSAY_SSH"
# "launcher": the servers were started on the nodes by the launcher (the "clients" spread);
# the driver only checks that they answer, and leaves stopping them to the scheduler.
SERVERS_ENV = "ASSAY_FIO_SERVERS"
START_TIMEOUT_S = 30.0  # for the --daemonize command (an ssh login included) to return
LISTEN_TIMEOUT_S = 10.0  # for the server to accept connections once started
STOP_TIMEOUT_S = 5.0
REMOTE_PIDDIR = "/tmp"
DIRECTIONS = ("read", "write", "trim")
LATENCIES = ("slat_ns", "clat_ns", "lat_ns")


def client_argv(fio: str, output: str, runs: list[tuple[Host, str]]) -> list[str]:
    """One fio client for every host: ``--client=HOST JOBFILE`` per host (fio man page:
    "fio --client=<server1> <job file(s)> --client=<server2> <job file(s)>")."""
    argv = [fio, "--output-format=json+", f"--output={output}"]
    for host, jobfile in runs:
        argv += [f"--client={host.connect}", jobfile]
    return argv


# ------------------------------------------------------------------------------ servers


@dataclass
class Server:
    """A fio server assay started (and so may stop)."""

    host: Host
    pidfile: str  # on the host: a local path for a local server
    log: str  # what the start command printed, here


def ssh_command(env: Mapping[str, str] | None = None) -> list[str]:
    """How to reach a remote host: ``$ASSAY_SSH`` split as a shell would, or ``SSH``."""
    text = (os.environ if env is None else env).get(SSH_ENV, "").strip()
    if not text:
        return list(SSH)
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise ClientError(
            f"{SSH_ENV}={text!r}: {exc}", hint='e.g. ASSAY_SSH="ssh -p 2222"'
        ) from None
    return argv


def server_argv(host: Host, fio: str, pidfile: str) -> list[str]:
    """The start command; for a remote host one quoted line after the host: ssh joins the
    words after the destination with blanks and gives them to the remote shell unquoted, so
    each word is quoted here (``shlex.join``) and the shell reads back exactly this argv."""
    argv = [fio, f"--server={host.connect}", f"--daemonize={pidfile}"]
    return argv if host.local else [*ssh_command(), "--", host.address, shlex.join(argv)]


def stop_argv(host: Host, pidfile: str) -> list[str]:
    """The remote stop, one command line for the remote shell: TERM to the server and its
    workers (all hold ``--daemonize=PIDFILE`` in their command line), KILL to what is left
    after 2 s. The pattern starts ``[-]`` so that it does not match the shell running it."""
    pattern = shlex.quote(f"[-]-daemonize={pidfile}")
    script = (
        f"pkill -TERM -f -- {pattern}; "
        f"for i in 1 2 3 4 5 6 7 8 9 10; do pgrep -f -- {pattern} >/dev/null || break; "
        f"sleep 0.2; done; pkill -KILL -f -- {pattern}; rm -f {shlex.quote(pidfile)}; true"
    )
    return [*ssh_command(), "--", host.address, script]


def listening(host: Host, timeout: float = 0.5) -> bool:
    """Whether something accepts connections at the host's address and port. A fio server
    takes a connection that closes at once as a client that left, and goes on listening."""
    family = socket.AF_INET6 if host.ipv6 else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout)
        try:
            sock.connect((host.address, host.port))
        except OSError:
            return False
    return True


def start_server(host: Host, fio: str, where: Path) -> Server:
    """Start fio's server for ``host`` and wait until it accepts connections."""
    if listening(host):
        raise ClientError(
            f"{host}: something already listens there; not starting a fio server",
            hint="choose another port (ADDR,PORT) or stop what listens there",
        )
    name = f"fio-server-{host.tag}-{host.port}"
    pidfile = str(where / f"{name}.pid") if host.local else f"{REMOTE_PIDDIR}/assay-{name}.pid"
    log = where / f"{name}.log"
    argv = server_argv(host, fio, pidfile)
    server = Server(host, pidfile, str(log))
    try:  # whatever interrupts the start (SIGTERM included) stops what did start
        with open(log, "wb") as out:
            try:
                proc = subprocess.run(
                    argv,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    stdin=subprocess.DEVNULL,
                    timeout=START_TIMEOUT_S,
                    check=False,
                )
            except (OSError, subprocess.TimeoutExpired) as exc:
                raise ClientError(f"{host}: cannot start a fio server ({exc})") from None
        if proc.returncode != 0:
            tail = read_tail(log).strip().splitlines()[-5:]
            raise ClientError(
                f"{host}: '{' '.join(argv)}' exited with {proc.returncode}: " + " / ".join(tail)
            )
        deadline = time.monotonic() + LISTEN_TIMEOUT_S
        while not listening(host):
            if time.monotonic() > deadline:
                raise ClientError(
                    f"{host}: the fio server did not listen within {LISTEN_TIMEOUT_S:g} s"
                )
            time.sleep(0.05)
    except BaseException:
        stop_server(server)
        raise
    return server


def _proc_stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, from /proc; None when it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = text[text.rindex(")") + 2 :].split()  # the name may hold spaces and parentheses
    return fields[0], int(fields[1])


def descendants(pid: int) -> list[int]:
    """Every process below ``pid``: fio's server forks a process per connection and that one
    a process per job, each in its own session, so none shares the server's process group."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            stat = _proc_stat(int(entry))
            if stat:
                children.setdefault(stat[1], []).append(int(entry))
    out: list[int] = []
    todo = [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def alive(pid: int) -> bool:
    """Running, not a zombie (an exited process nobody reaped still answers kill(pid, 0))."""
    stat = _proc_stat(pid)
    return stat is not None and stat[0] not in ("Z", "X")


def is_fio_server(pid: int) -> bool:
    """Whether ``pid`` is still a fio server: a pid file may outlive its process, and the pid
    then belongs to someone else."""
    try:
        argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return any(a.startswith(b"--server") for a in argv)


def stop_server(server: Server) -> str | None:
    """Stop a server assay started; returns a problem, or None. Never raises."""
    if not server.host.local:
        try:
            proc = subprocess.run(
                stop_argv(server.host, server.pidfile),
                capture_output=True,
                stdin=subprocess.DEVNULL,
                timeout=START_TIMEOUT_S,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"{server.host}: could not stop the fio server ({exc})"
        return None if proc.returncode == 0 else f"{server.host}: ssh kill exited {proc.returncode}"
    try:
        pid = int(read_tail(server.pidfile, 4096).split()[0])
    except (OSError, ValueError, IndexError):
        return None  # never started (or it removed its pid file): nothing of ours runs
    problem = None
    if is_fio_server(pid):
        pids = [pid, *descendants(pid)]
        for p in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, signal.SIGTERM)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while any(alive(p) for p in pids) and time.monotonic() < deadline:
            time.sleep(0.05)
        left = [p for p in pids if alive(p)]
        for p in left:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(p, signal.SIGKILL)
        if left:
            problem = f"{server.host}: fio server {pid} needed SIGKILL"
            # SIGKILL is delivered, not done: wait until they are gone, so that none is still
            # running when the driver (and the run) has ended (seen once in CI's test).
            deadline = time.monotonic() + STOP_TIMEOUT_S
            while any(alive(p) for p in left) and time.monotonic() < deadline:
                time.sleep(0.02)
    with contextlib.suppress(OSError):
        os.unlink(server.pidfile)
    return problem


@contextlib.contextmanager
def servers(
    hosts: list[Host], fio: str, where: Path, fio_remote: str = "fio"
) -> Iterator[list[Server]]:
    """Start a server on every host; stop them all afterwards, whatever happens (an exception,
    the driver's SIGTERM turned into one). A host that fails to start stops the others.

    With ``ASSAY_FIO_SERVERS=launcher`` in the environment the scheduler started the servers (on
    Slurm one srun step, ``assay.launch.slurm.servers``) and stops them: here they are only
    checked."""
    if os.environ.get(SERVERS_ENV) == "launcher":
        deaf = [str(h) for h in hosts if not listening(h, timeout=2.0)]
        if deaf:
            raise ClientError(f"the scheduler's fio servers do not answer: {', '.join(deaf)}")
        yield []
        return
    started: list[Server] = []
    try:
        for host in hosts:
            started.append(start_server(host, fio if host.local else fio_remote, where))
        yield started
    finally:
        for server in started:
            stop_server(server)


# ------------------------------------------------------------------------------ merging


def entries_of(doc: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The job entries of a fio document: ``jobs``, or ``client_stats`` less fio's sum."""
    entries = doc.get("client_stats")
    if not isinstance(entries, list):
        entries = doc.get("jobs") or []
    return [e for e in entries if isinstance(e, dict) and e.get("jobname") != ALL_CLIENTS]


def _merge_latency(parts: list[Mapping[str, Any]]) -> dict[str, Any] | None:
    """One latency block (``lat_ns``...) of several: fio's own sums (stat.c sum_stat)."""
    parts = [p for p in parts if p and int(p.get("N", 0)) > 0]
    if not parts:
        return None
    n = sum(int(p["N"]) for p in parts)
    mean = sum(float(p["mean"]) * int(p["N"]) for p in parts) / n
    # pooled: E[x^2] of the union less its mean squared (each part: stddev^2 + mean^2)
    second = sum(
        int(p["N"]) * (float(p.get("stddev", 0.0)) ** 2 + float(p["mean"]) ** 2) for p in parts
    )
    out: dict[str, Any] = {
        "min": min(float(p["min"]) for p in parts),
        "max": max(float(p["max"]) for p in parts),
        "mean": mean,
        "stddev": math.sqrt(max(0.0, second / n - mean * mean)),
        "N": n,
    }
    if all(p.get("bins") for p in parts):
        bins = merge_bins(p["bins"] for p in parts)
        out["percentile"] = {f"{k:f}": v for k, v in percentiles_from_bins(bins).items()}
        out["bins"] = {str(k): v for k, v in sorted(bins.items())}
    return out


def _merge_direction(parts: list[Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in ("io_bytes", "io_kbytes", "total_ios", "short_ios", "drop_ios"):
        out[key] = sum(int(p.get(key, 0)) for p in parts)
    for key in ("iops", "bw_bytes", "bw"):
        out[key] = sum(float(p.get(key, 0.0)) for p in parts)
    out["runtime"] = max((int(p.get("runtime", 0)) for p in parts), default=0)
    for key in LATENCIES:
        merged = _merge_latency([p.get(key) or {} for p in parts])
        out[key] = merged if merged is not None else {"N": 0}
    # the per-second iops_*/bw_* statistics of a sum are not the sums of theirs: left out
    return out


def merge_entries(entries: list[Mapping[str, Any]], name: str) -> dict[str, Any]:
    """One json+ job entry for several (hosts, or jobs run together); see the docstring."""
    if not entries:
        raise ValueError("nothing to merge")
    out: dict[str, Any] = {
        "jobname": name,
        "groupid": 0,
        "error": max(int(e.get("error", 0)) for e in entries),
        "merged_entries": len(entries),
    }
    for ddir in DIRECTIONS:
        parts = [e[ddir] for e in entries if isinstance(e.get(ddir), Mapping)]
        if parts:
            out[ddir] = _merge_direction(parts)
    return out
