"""RDMA: a clear skip without a device; the server/client pair driver with real processes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from assay.model import System
from assay.probes import PlanContext, get_probe
from conftest import run_cli

HAS_DEVICE = any(Path("/sys/class/infiniband").glob("*"))


@pytest.mark.skipif(HAS_DEVICE, reason="this machine has an RDMA device: no skip to see")
def test_no_device_is_a_skip_not_a_failure(assay_home: Path):
    proc = run_cli("run", "network", "--only", "rdma", home=assay_home)
    assert proc.returncode == 0, proc.stderr
    assert "2 skipped" in proc.stderr and "no RDMA device" in proc.stderr
    doc = json.loads(run_cli("report", "-f", "json", home=assay_home).stdout)
    assert [j["status"] for j in doc["jobs"]] == ["skipped", "skipped"]
    md = run_cli("report", "-f", "md", home=assay_home).stdout
    assert "| skipped | no RDMA device" in md


def test_with_a_device_the_job_runs_perftest_as_the_seeds_do():
    probe = get_probe("rdma")
    ctx = PlanContext(system=System(nics=[{"name": "mlx5_0", "kind": "rdma"}]))
    params = probe.Params(test="send_lat", cpu=3)
    (draft,) = probe.drafts(params, ctx, mpis=[], ranks=None)
    server = json.loads(draft.argv[draft.argv.index("--server") + 1])
    client = json.loads(draft.argv[draft.argv.index("--client") + 1])
    assert server[:3] == ["numactl", "--physcpubind=3", "ib_send_lat"]
    assert "-a" in server and server[server.index("-d") + 1] == "mlx5_0"
    assert client == [*server, "localhost"]


def _pair(server: str, client: str, delay: float = 0.3) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "assay.drivers.pair", "--server", json.dumps(["sh", "-c", server]),
         "--client", json.dumps(["sh", "-c", client]), "--delay", str(delay)],
        capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip


def test_pair_driver_gives_the_clients_output_and_status():
    proc = _pair("sleep 1; echo served", "echo measured; exit 0")
    assert proc.returncode == 0 and proc.stdout == "measured\n"
    assert "server: served" in proc.stderr
    assert _pair("sleep 1", "exit 4").returncode == 4


def test_pair_driver_says_when_the_server_dies_first():
    proc = _pair("echo cannot bind >&2; exit 1", "echo never")
    assert proc.returncode == 1 and proc.stdout == ""
    assert "server exited (1) before the client started" in proc.stderr
    assert "server: cannot bind" in proc.stderr
