"""Multi-client fio with a remote host reached through ssh: a real sshd in a network namespace.

The namespace ("assay-ssh1", 10.214.0.2, a veth pair to this machine's 10.214.0.1) stands for a
second host: its sshd (a key made here, root login by key only) runs fio's server where the
host list names it, and the client here connects to it over the veth. assay reaches it as a
user would, with ``ASSAY_SSH="ssh -F CONFIG"`` naming the key and known-hosts file. The same
file system is seen from both sides, so the remote fio writes into the test's target.

Needs root (namespaces) and sshd: skipped without root, failed without sshd (CI installs
openssh-server with scripts/install-system-deps).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assay.drivers.fio import clients
from assay.drivers.fio.clients import ALL_CLIENTS, ssh_command
from assay.drivers.fio.runner import EXIT_FIO
from assay.fio.hosts import ClientError, Host
from conftest import free_port, multi_client_suite, run_cli

NETNS, VETH, PEER = "assay-ssh1", "asshv0", "asshv1"
HOST_IP, REMOTE_IP = "10.214.0.1", "10.214.0.2"

pytestmark = pytest.mark.slow


def sh(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, check=check, timeout=30)


def _teardown_net() -> None:
    sh("ip", "netns", "del", NETNS, check=False)
    sh("ip", "link", "del", VETH, check=False)


def remote_fio_processes() -> list[str]:
    """fio servers (and their forked workers) listening on the remote address, anywhere here."""
    proc = sh("pgrep", "-af", f"[-]-server=ip:{REMOTE_IP},", check=False)
    return proc.stdout.splitlines()


@pytest.fixture(scope="module")
def ssh_node(tmp_path_factory: pytest.TempPathFactory):
    if os.geteuid() != 0:
        pytest.skip("the ssh test host is a network namespace: needs root")
    sshd = shutil.which("sshd") or ("/usr/sbin/sshd" if Path("/usr/sbin/sshd").exists() else None)
    if sshd is None or not shutil.which("fio"):
        pytest.fail("sshd or fio missing: run scripts/install-system-deps (openssh-server, fio)")
    d = tmp_path_factory.mktemp("ssh")
    _teardown_net()  # what a killed earlier run left
    for cmd in (
        ("ip", "netns", "add", NETNS),
        ("ip", "link", "add", VETH, "type", "veth", "peer", "name", PEER),
        ("ip", "link", "set", PEER, "netns", NETNS),
        ("ip", "addr", "add", f"{HOST_IP}/24", "dev", VETH),
        ("ip", "link", "set", VETH, "up"),
        ("ip", "-n", NETNS, "addr", "add", f"{REMOTE_IP}/24", "dev", PEER),
        ("ip", "-n", NETNS, "link", "set", PEER, "up"),
        ("ip", "-n", NETNS, "link", "set", "lo", "up"),
    ):
        sh(*cmd)
    for key in ("hostkey", "userkey"):
        sh("ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(d / key))
    shutil.copy(d / "userkey.pub", d / "authorized_keys")
    (d / "sshd_config").write_text(
        f"ListenAddress {REMOTE_IP}\nPort 22\nHostKey {d}/hostkey\nPidFile {d}/sshd.pid\n"
        f"AuthorizedKeysFile {d}/authorized_keys\nPermitRootLogin prohibit-password\n"
        "PasswordAuthentication no\nKbdInteractiveAuthentication no\nStrictModes no\nUsePAM no\n"
    )
    (d / "ssh_config").write_text(
        f"Host {REMOTE_IP}\n  IdentityFile {d}/userkey\n  IdentitiesOnly yes\n"
        f"  UserKnownHostsFile {d}/known_hosts\n  StrictHostKeyChecking accept-new\n"
        "  BatchMode yes\n  ConnectTimeout 5\n"
    )
    Path("/run/sshd").mkdir(parents=True, exist_ok=True)  # sshd's privilege separation dir
    sh("nsenter", f"--net=/run/netns/{NETNS}", sshd, "-f", str(d / "sshd_config"),
       "-E", str(d / "sshd.log"))  # fmt: skip
    env = {"ASSAY_SSH": f"ssh -F {d}/ssh_config"}
    deadline = time.monotonic() + 10
    while not clients.listening(Host(REMOTE_IP, 22)):
        assert time.monotonic() < deadline, (d / "sshd.log").read_text()
        time.sleep(0.1)
    yield {"address": REMOTE_IP, "env": env, "dir": d}
    pid = (d / "sshd.pid").read_text().split()[0] if (d / "sshd.pid").exists() else None
    if pid:
        sh("kill", pid, check=False)
    _teardown_net()


def test_assay_ssh_is_split_as_a_shell_would() -> None:
    assert ssh_command({}) == ["ssh", "-o", "BatchMode=yes"]
    assert ssh_command({"ASSAY_SSH": "ssh -p 2222 -i '/k ey'"}) == [
        "ssh",
        "-p",
        "2222",
        "-i",
        "/k ey",
    ]
    with pytest.raises(ClientError, match="ASSAY_SSH"):
        ssh_command({"ASSAY_SSH": "ssh -i 'unclosed"})


def test_remote_stop_reaches_the_forked_workers_not_itself() -> None:
    argv = clients.stop_argv(Host("node7"), "/tmp/s.pid")
    assert argv[:5] == ["ssh", "-o", "BatchMode=yes", "--", "node7"]
    # run here, the script must not match the shell running it (nothing else matches)
    proc = subprocess.run(["sh", "-c", argv[5]], capture_output=True, text=True, timeout=10)
    assert proc.returncode == 0, proc.stderr


def test_a_remote_host_through_ssh_beside_a_local_one(ssh_node, assay_home: Path, tmp_path: Path):
    hosts = [f"127.0.0.1,{free_port('127.0.0.1')}", ssh_node["address"]]
    suite, target = multi_client_suite(tmp_path, hosts)
    proc = run_cli("run", str(suite), home=assay_home, env=ssh_node["env"], timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(run_cli("report", "-f", "json", home=assay_home, check=True).stdout)
    iops = {
        s["params"]["host"]: s["value"]
        for s in report["samples"]
        if s["metric"] == "storage.iops" and s["params"].get("workload") == "randread-8k"
    }
    assert set(iops) == {"127.0.0.1", REMOTE_IP, ALL_CLIENTS}
    assert iops[REMOTE_IP] > 0
    assert iops[ALL_CLIENTS] == pytest.approx(iops["127.0.0.1"] + iops[REMOTE_IP], rel=1e-9)
    # the remote server was started through ssh, and nothing of it is left on the host
    (run_dir,) = (assay_home / "runs").iterdir()
    logs = list(run_dir.glob(f"jobs/*/fio-server-*{REMOTE_IP}*.log"))
    assert logs, sorted(p.name for p in run_dir.glob("jobs/*/*"))
    assert remote_fio_processes() == []
    assert not clients.listening(Host(REMOTE_IP))
    assert not list(Path("/tmp").glob("assay-fio-server-*.pid"))
    assert not (target / "assay-fio").exists()


def test_a_terminated_driver_stops_the_remote_server_and_its_workers(ssh_node, tmp_path: Path):
    spec = {"mode": "workloads", "workloads": ["randread-8k"], "size": 8 * 2**20, "runtime": 60,
            "ramp_time": 0, "numjobs": 2, "iodepth": 4, "hosts": [ssh_node["address"]]}  # fmt: skip
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay.drivers.fio", "--spec", json.dumps(spec)],
        cwd=tmp_path,
        env={**os.environ, **ssh_node["env"]},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    # running: the remote server, its process for this client, and that one's job workers
    # (fio's file layout forks and ends short-lived ones first: wait for a steady count)
    seen: list[int] = []
    deadline = time.monotonic() + 30
    while not (len(seen) >= 5 and min(seen[-5:]) >= 3) and time.monotonic() < deadline:
        seen.append(len(remote_fio_processes()))
        time.sleep(0.2)
    assert min(seen[-5:]) >= 3, (seen, remote_fio_processes())
    os.killpg(proc.pid, signal.SIGTERM)  # what the runner does on a timeout
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == EXIT_FIO, err.decode()
    assert remote_fio_processes() == [], err.decode()
    assert not clients.listening(Host(REMOTE_IP))
