"""The "clients" spread inside a Slurm allocation: a server on every node, through one srun
step, for a job that is their client (multi-client fio: Vdbench's "many hosts, one volume").

The probe names the server program (``Probe.server_argv``: fio's ``fio --server=...``); this
module runs it on each node and tells the job where the servers listen:

* The runner starts ONE srun step over the job's nodes, one task per node, ``--overlap`` so
  the client step can share the nodes' CPUs with it. Each task is
  ``python -m assay.launch.slurm.servers PORT DIR [--network CIDR] -- SERVER ARGV`` (``main``
  below): it finds the node's *test address*, writes it to ``DIR/<host>.addr`` (the run
  directory is on the shared file system) and runs the server argv, ``{family}``,
  ``{address}`` and ``{port}`` filled in -- listening on that address only, never on every
  interface -- until SIGTERM.
* The test address is, by default, the address the node's host name resolves to on the node
  (what MPI uses too); with a network (fio's ``fio_network = "CIDR"`` in ``[slurm]``: the
  probe's keys, ``assay.launch.serving``) it is the node's interface address inside that
  network (e.g. the storage or IPoIB network). A loopback
  answer is refused: a server on 127.x could not be reached from the client node.
* The runner waits until every node wrote its address and accepts connections, hands the
  addresses to the job (``Probe.served``), and when the job ends terminates the server step.
  Slurm ends a step's processes on every node with it (and with the allocation), so no
  server outlives the job, whatever happens to the runner.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from assay.errors import LaunchError
from assay.inputfile import read_tail

START_TIMEOUT_S = 60.0
STOP_TIMEOUT_S = 10.0


# ------------------------------------------------------------------------------ runner side


def server_step_argv(
    job_id: str,
    hosts: list[str],
    python: str,
    where: Path,
    port: int,
    network: str | None,
    server: list[str],
) -> list[str]:
    """The srun step that runs one ``server`` on each of ``hosts``."""
    argv = [
        "srun", f"--job-name={job_id}-servers", f"--nodes={len(hosts)}",
        f"--nodelist={','.join(hosts)}", f"--ntasks={len(hosts)}", "--ntasks-per-node=1",
        "--overlap", "--kill-on-bad-exit=1", "--mpi=none",
        python, "-m", "assay.launch.slurm.servers", str(port), str(where),
    ]  # fmt: skip
    if network:
        argv += ["--network", network]
    return [*argv, "--", *server]


def _listening(address: str, port: int) -> bool:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as sock:
        sock.settimeout(0.5)
        try:
            sock.connect((address, port))
        except OSError:
            return False
    return True


def _step_ids(name: str) -> list[str]:
    """The ids (JOB.STEP) of this allocation's steps called ``name`` (``squeue --steps``)."""
    job = os.environ.get("SLURM_JOB_ID", "")
    if not job:
        return []
    out = subprocess.run(
        ["squeue", "-h", "--steps", "-j", job, "-o", "%i %j"],
        capture_output=True, text=True, check=False, timeout=30,
    )  # fmt: skip
    return [f[0] for f in (line.split() for line in out.stdout.splitlines()) if f[1:] == [name]]


def _stop(proc: subprocess.Popen, name: str) -> None:
    """End the server step cleanly: SIGTERM to its tasks (``scancel --signal=TERM STEP``), on
    which fio's server exits, so the step ends by itself; then wait until Slurm has let go
    of it. srun's own answer to SIGTERM would be SIGKILL to the tasks ("forcing job
    termination"), the fallback, and then SIGKILL to srun."""
    if proc.poll() is None:
        for step in _step_ids(name):
            subprocess.run(["scancel", "--signal=TERM", step], capture_output=True, check=False)
        try:
            proc.wait(timeout=STOP_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            proc.terminate()
            try:
                proc.wait(timeout=STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    deadline = time.monotonic() + STOP_TIMEOUT_S
    while _step_ids(name) and time.monotonic() < deadline:
        time.sleep(0.2)


@contextlib.contextmanager
def servers(
    job_id: str,
    hosts: list[str],
    where: Path,
    server: list[str],
    *,
    port: int,
    network: str | None = None,
    timeout: float = START_TIMEOUT_S,
) -> Iterator[list[str]]:
    """Start ``server`` on every host; yield their connect strings ``ADDR,PORT`` in host
    order; stop the step afterwards, however the block ends. LaunchError if they do not
    come up (the step's output quoted)."""
    where.mkdir(parents=True, exist_ok=True)
    for old in where.glob("*.addr"):
        old.unlink()
    log = where / "servers.log"
    argv = server_step_argv(job_id, hosts, sys.executable, where, port, network, server)
    what = Path(server[0]).name
    name = argv[1].removeprefix("--job-name=")
    (where / "argv.json").write_text(json.dumps(argv) + "\n")
    with open(log, "wb") as out:
        try:
            proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT)
        except OSError as exc:
            raise LaunchError(f"{what} servers: cannot run srun: {exc.strerror}") from None
    try:
        deadline = time.monotonic() + timeout
        addresses: dict[str, str] = {}
        while len(addresses) < len(hosts) or not all(
            _listening(a, port) for a in addresses.values()
        ):
            for host in hosts:
                f = where / f"{host}.addr"
                if host not in addresses and f.exists():
                    text = read_tail(f, 4096).strip()  # an address: a line
                    if text:
                        addresses[host] = text
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = " / ".join(read_tail(log).strip().splitlines()[-5:])
                why = (
                    f"the step exited with {proc.returncode}"
                    if proc.poll() is not None
                    else f"not all listening within {timeout:g} s"
                )
                raise LaunchError(
                    f"{what} servers on {','.join(hosts)}: {why}"
                    + (f" (addresses seen: {addresses})" if addresses else "")
                    + (f": {tail}" if tail else ""),
                    hint=f"{what} must be installed on every node; see docs/cluster.md",
                )
            time.sleep(0.2)
        yield [f"{addresses[h]},{port}" for h in hosts]
    finally:
        _stop(proc, name)


# ------------------------------------------------------------------------------ node side


def interface_addresses() -> list[str]:
    """The node's IPv4/IPv6 interface addresses (``ip -o addr show``)."""
    ip = shutil.which("ip")
    if not ip:
        return []
    out = subprocess.run([ip, "-o", "addr", "show"], capture_output=True, text=True, check=False)
    found = []
    for line in out.stdout.splitlines():
        fields = line.split()
        if len(fields) > 3 and fields[2] in ("inet", "inet6"):
            found.append(fields[3].split("/")[0])
    return found


def node_address(network: str | None) -> str:
    """This node's address for the measurement (see the module docstring)."""
    if network:
        net = ipaddress.ip_network(network, strict=False)
        for addr in interface_addresses():
            if ipaddress.ip_address(addr) in net:
                return addr
        raise LaunchError(f"{socket.gethostname()}: no interface address in {network}")
    name = socket.gethostname()
    address = socket.gethostbyname(name)
    if ipaddress.ip_address(address).is_loopback:
        raise LaunchError(
            f"{name} resolves to {address} (loopback) on the node itself",
            hint='set fio_network = "CIDR" in [slurm] to pick the test network\'s address',
        )
    return address


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if "--" not in args:
        print("servers: usage: PORT DIR [--network CIDR] -- SERVER ARGV", file=sys.stderr)
        return 2
    own, server = args[: args.index("--")], args[args.index("--") + 1 :]
    port, where = int(own[0]), Path(own[1])
    network = own[own.index("--network") + 1] if "--network" in own else None
    try:
        address = node_address(network)
    except (LaunchError, OSError, ValueError) as exc:
        print(f"servers: {exc}", file=sys.stderr)
        return 2
    program = shutil.which(server[0]) if server else None
    if not program:
        what = server[0] if server else "no server"
        print(f"servers: {what} not found on {socket.gethostname()}", file=sys.stderr)
        return 2
    node = os.environ.get("SLURMD_NODENAME") or socket.gethostname()  # Slurm's name for it
    # a new temporary (mkstemp: O_EXCL, never through a link planted at a fixed name; issue
    # 28), renamed: the runner never reads half a file
    fd, tmp = tempfile.mkstemp(dir=where, prefix=f".{node}.", suffix=".tmp")
    with os.fdopen(fd, "w") as f:
        f.write(address + "\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, where / f"{node}.addr")
    family = "ip6" if ":" in address else "ip"
    filled = [a.format(family=family, address=address, port=port) for a in server[1:]]
    proc = subprocess.Popen([program, *filled])
    stopping = False

    def _term(signum, frame):  # the runner's scancel --signal=TERM: the end we expect
        nonlocal stopping
        stopping = True
        proc.terminate()

    signal.signal(signal.SIGTERM, _term)
    code = proc.wait()
    # A server stopped on purpose ends the task with 0, so the step ends as a completed one
    # (a task killed by a signal makes Slurm cancel the step and linger over it).
    return 0 if stopping else (code or 1)


if __name__ == "__main__":
    sys.exit(main())
