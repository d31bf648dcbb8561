"""Multi-client fio (client/server mode): hosts, servers, per-host job files, merged totals.

Pure tests first; the real runs use two loopback addresses of this machine (127.0.0.1 and
127.0.0.2, each on a free port) with the real fio, and are marked slow. A remote host through
ssh (a real sshd in a network namespace): tests/storage/test_fio_ssh.py.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from assay.drivers.fio import clients
from assay.drivers.fio.__main__ import main as driver_main
from assay.drivers.fio.cells import cells_of
from assay.drivers.fio.clients import ALL_CLIENTS
from assay.drivers.fio.files import job_names
from assay.drivers.fio.runner import EXIT_FIO
from assay.drivers.fio.spec import SCRATCH, DriverSpec, items_of
from assay.errors import SuiteError
from assay.fio import hosts as fio_hosts
from assay.fio.hosts import Host
from assay.fio.job import FioJob, job_file
from assay.model import System
from assay.parsers.fio import merge_clat_histograms
from assay.probes import PlanContext, get_probe
from assay.probes.fio import FioParams
from assay.report.storage import storage_tables
from conftest import free_port, multi_client_suite, run_cli

needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")


def two_hosts() -> list[str]:
    return [f"127.0.0.1,{free_port('127.0.0.1')}", f"127.0.0.2,{free_port('127.0.0.2')}"]


# ---------------------------------------------------------------------------- hosts


def test_hosts_are_fio_connect_strings_with_distinct_addresses(tmp_path: Path):
    assert fio_hosts.parse_host("127.0.0.2,9001") == Host("127.0.0.2", 9001)
    assert fio_hosts.parse_host(" node7 ") == Host("node7", fio_hosts.DEFAULT_PORT)
    assert fio_hosts.parse_host("ip6:::1,4444") == Host("::1", 4444)
    assert Host("::1", 4444).connect == "ip6:::1,4444"
    assert Host("127.0.0.2", 9001).connect == "ip:127.0.0.2,9001"
    with pytest.raises(fio_hosts.ClientError, match=r"1\.\.65535"):
        fio_hosts.parse_host("node1,99999")
    with pytest.raises(fio_hosts.ClientError, match="ADDR or ADDR,PORT"):
        fio_hosts.parse_host("node 1")
    # fio reports a host's entries by address only: one address twice cannot be told apart
    with pytest.raises(fio_hosts.ClientError, match="given twice"):
        fio_hosts.parse_hosts(["127.0.0.1,9000", "127.0.0.1,9001"])
    hostfile = tmp_path / "hosts"
    hostfile.write_text("# clients\nnode1\n\nnode2,8766  # the second\n")
    assert fio_hosts.read_hostfile(hostfile) == ["node1", "node2,8766"]
    assert [h.local for h in fio_hosts.parse_hosts(["127.0.0.5", "localhost", "node1"])] == [
        True,
        True,
        False,
    ]


def test_local_servers_start_directly_and_remote_ones_through_ssh():
    local = clients.server_argv(Host("127.0.0.2", 9001), "/usr/bin/fio", "/j/s.pid")
    assert local == ["/usr/bin/fio", "--server=ip:127.0.0.2,9001", "--daemonize=/j/s.pid"]
    remote = clients.server_argv(Host("node7", 8765), "fio", "/tmp/s.pid")
    assert remote == ["ssh", "-o", "BatchMode=yes", "--", "node7",
                      "fio --server=ip:node7,8765 --daemonize=/tmp/s.pid"]  # fmt: skip
    stop = clients.stop_argv(Host("node7"), "/tmp/s.pid")
    assert stop[:5] == ["ssh", "-o", "BatchMode=yes", "--", "node7"]
    assert (
        "pkill -TERM -f -- '[-]-daemonize=/tmp/s.pid'" in stop[5]
    )  # run: tests/storage/test_fio_ssh.py


def test_each_host_gets_its_own_files_and_one_client_runs_them_all():
    job = FioJob("randread-8k", "randread", 8192, numjobs=2, extra={
        "filename_format": "assay-fio-$jobnum", "lat_percentiles": "1"})  # fmt: skip
    h2 = Host("127.0.0.2", 9002)
    text = job_file([fio_hosts.for_host(job, h2)])
    assert "filename_format=assay-fio-127.0.0.2-$jobnum" in text.splitlines()
    assert "unique_filename=0" in text.splitlines()  # no address prefix of fio's own
    assert job_names(job, [Host("127.0.0.1"), h2]) == [
        "assay-fio-127.0.0.1-0",
        "assay-fio-127.0.0.1-1",
        "assay-fio-127.0.0.2-0",
        "assay-fio-127.0.0.2-1",
    ]
    assert job_names(job) == ["assay-fio-0", "assay-fio-1"]
    argv = clients.client_argv("fio", "o.json", [(Host("127.0.0.1", 1), "a.fio"), (h2, "b.fio")])
    assert argv == [
        "fio", "--output-format=json+", "--output=o.json",
        "--client=ip:127.0.0.1,1", "a.fio", "--client=ip:127.0.0.2,9002", "b.fio",
    ]  # fmt: skip


# ---------------------------------------------------------------------------- merging


def _direction(iops: float, n: int, mean: float, sd: float, bins: dict[str, int]) -> dict:
    lat = {"N": n, "min": min(map(int, bins)), "max": max(map(int, bins)), "mean": mean,
           "stddev": sd, "bins": bins}  # fmt: skip
    return {"iops": iops, "bw_bytes": iops * 8192, "bw": iops * 8, "io_bytes": n * 8192,
            "total_ios": n, "runtime": 1000, "lat_ns": lat, "clat_ns": lat}  # fmt: skip


def test_merged_entries_sum_rates_and_read_percentiles_off_the_merged_bins():
    # host a: 100 fast I/Os; host b: 100 I/Os of which 10 slow
    a = {"jobname": "r", "hostname": "a", "read": _direction(100.0, 100, 100.0, 0.0,
                                                             {"100": 100})}  # fmt: skip
    b = {"jobname": "r", "hostname": "b",
         "read": _direction(50.0, 100, 1000.0, 300.0, {"900": 90, "1900": 10})}  # fmt: skip
    merged = clients.merge_entries([a, b], "r")
    read = merged["read"]
    assert read["iops"] == 150.0 and read["bw_bytes"] == 150.0 * 8192 and read["total_ios"] == 200
    lat = read["lat_ns"]
    assert lat["N"] == 200 and lat["mean"] == pytest.approx(550.0)
    assert (lat["min"], lat["max"]) == (100, 1900)
    # pooled: E[x^2] = (100*100^2 + 100*(300^2 + 1000^2)) / 200; minus 550^2
    assert lat["stddev"] == pytest.approx(math.sqrt((1e6 + 1e8 + 9e6) / 200 - 550**2))
    pct = {float(k): v for k, v in lat["percentile"].items()}
    # 95% of 200 I/Os = the 190th: the 900 ns bucket; 99% = 198th: the 1900 ns one. The
    # average of the two hosts' p99 (100 and 1900) would say 1000.
    assert pct[95.0] == 900 and pct[99.0] == 1900
    assert pct == merge_clat_histograms([{"100": 100}, {"900": 90, "1900": 10}])
    # a part without bins: no percentiles rather than wrong ones
    b["read"]["lat_ns"].pop("bins")
    assert "percentile" not in clients.merge_entries([a, b], "r")["read"]["lat_ns"]


def test_cells_give_each_host_and_the_total_of_all_hosts():
    spec = DriverSpec(mode="workloads", workloads=["randread-8k"], size=2**20, runtime=1,
                             ramp_time=0, numjobs=2, iodepth=8)  # fmt: skip
    (item,) = items_of(spec, "/d", None)
    cells = cells_of(item, ["127.0.0.1", "127.0.0.2"])
    assert [c.key for c in cells] == [
        ("randread-8k", "127.0.0.1"),
        ("randread-8k", "127.0.0.2"),
        ("randread-8k", ALL_CLIENTS),
    ]
    assert [c.expected for c in cells] == [16, 16, 32]  # Little's N: 2 threads x 8, per host
    assert cells[-1].identity["host"] == ALL_CLIENTS and cells[-1].identity["numjobs"] == 2
    # on this machine alone: one cell, and the parser's own params
    (alone,) = cells_of(item, [])
    assert alone.key == ("randread-8k", None) and alone.identity == {}


def test_probe_checks_hosts_at_plan_time(tmp_path: Path):
    probe = get_probe("fio")
    ctx = PlanContext(system=System())
    with pytest.raises(SuiteError, match="given twice"):
        probe.drafts(FioParams(hosts=["127.0.0.1", "127.0.0.1,9000"]), ctx, mpis=[], ranks=None)
    custom = [{"name": "x", "rw": "read", "bs": 4096, "filename": str(tmp_path / "f")}]
    with pytest.raises(SuiteError, match="cannot be shared"):
        probe.drafts(FioParams(hosts=["127.0.0.2"], jobs=custom), ctx, mpis=[], ranks=None)
    hostfile = tmp_path / "hosts"
    hostfile.write_text("127.0.0.2,9100\n127.0.0.3,9101\n")
    (draft,) = probe.drafts(
        FioParams(hostfile=str(hostfile), workloads=["randread-8k"]), ctx, mpis=[], ranks=None
    )
    spec = DriverSpec.model_validate(json.loads(draft.argv[4]))
    assert spec.hosts == ["127.0.0.2,9100", "127.0.0.3,9101"]
    assert draft.params["client_count"] == 2 and draft.label.endswith("x2 hosts")


# ---------------------------------------------------------------------------- real fio


def _spec(hosts: list[str], **kw) -> str:
    base = {"mode": "workloads", "workloads": ["randread-8k"], "size": 8 * 2**20, "runtime": 1,
            "ramp_time": 0, "numjobs": 1, "iodepth": 4, "hosts": hosts}  # fmt: skip
    return json.dumps({**base, **kw})


@needs_fio
def test_a_port_in_use_is_refused_and_nothing_is_left(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        code = driver_main(["--spec", _spec([f"127.0.0.2,{free_port('127.0.0.2')}",
                                            f"127.0.0.1,{port}"])])  # fmt: skip
    _, err = capsys.readouterr()
    assert code == EXIT_FIO
    assert f"127.0.0.1,{port}: something already listens there" in err
    # the first server was started, then stopped with the others; the files went too
    assert not list(tmp_path.glob("fio-server-*.pid"))
    assert not (tmp_path / SCRATCH).exists()


@pytest.mark.slow
@needs_fio
def test_two_loopback_clients_report_each_host_and_the_merged_total(
    assay_home: Path, tmp_path: Path
):
    hosts = two_hosts()
    suite, target = multi_client_suite(tmp_path, hosts)
    proc = run_cli("run", str(suite), home=assay_home, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    report = json.loads(run_cli("report", "-f", "json", home=assay_home, check=True).stdout)
    samples = [s for s in report["samples"] if s["params"].get("workload") == "randread-8k"]
    iops = {s["params"]["host"]: s for s in samples if s["metric"] == "storage.iops"}
    assert set(iops) == {"127.0.0.1", "127.0.0.2", ALL_CLIENTS}
    assert all(s["params"]["client_count"] == 2 for s in iops.values())
    per_host = iops["127.0.0.1"]["value"] + iops["127.0.0.2"]["value"]
    assert per_host > 0 and iops[ALL_CLIENTS]["value"] == pytest.approx(per_host, rel=1e-9)

    (run_dir,) = (assay_home / "runs").iterdir()
    job_dir = run_dir / "jobs" / iops[ALL_CLIENTS]["job_id"]
    raw = (job_dir / iops[ALL_CLIENTS]["params"]["fio_output"]).read_text()
    doc = json.loads(raw[raw.index("\n{") + 1 :])
    entries = {e["hostname"]: e for e in doc["client_stats"] if e["jobname"] != ALL_CLIENTS}
    fios_sum = next(e for e in doc["client_stats"] if e["jobname"] == ALL_CLIENTS)
    # Our total is the sum of the hosts' rates (as Vdbench totals hosts); fio's own "All
    # clients" divides the summed I/Os by one runtime. The hosts' runtimes differ (by a few
    # milliseconds quiet, by more on a loaded machine: 0.85 % once), so the sum of rates lies
    # between the summed I/Os over the longest runtime and over the shortest -- and is exact
    # against the hosts' own rates.
    ios = sum(e["read"]["total_ios"] for e in entries.values())
    runtimes = [e["read"]["runtime"] / 1e3 for e in entries.values()]  # ms
    assert ios / max(runtimes) * (1 - 1e-9) <= iops[ALL_CLIENTS]["value"]
    assert iops[ALL_CLIENTS]["value"] <= ios / min(runtimes) * (1 + 1e-9)
    assert ios == fios_sum["read"]["total_ios"]
    # the total's percentiles are those of the hosts' merged json+ bins
    total_lat = next(
        s for s in samples
        if s["metric"] == "storage.latency" and s["params"]["host"] == ALL_CLIENTS
        and s["params"]["latency"] == "total"
    )  # fmt: skip
    merged = merge_clat_histograms(e["read"]["lat_ns"]["bins"] for e in entries.values())
    assert total_lat["stats"]["p99"] == pytest.approx(merged[99.0] * 1e-9)
    assert total_lat["stats"]["n"] == sum(e["read"]["lat_ns"]["N"] for e in entries.values())

    # each host ran its own job file on its own files
    h2 = next(job_dir.glob("*-randread-8k-127.0.0.2.fio")).read_text().splitlines()
    assert "filename_format=assay-fio-127.0.0.2-$jobnum" in h2 and "unique_filename=0" in h2
    # servers stopped, files removed
    assert not list(job_dir.glob("fio-server-*.pid")) and list(job_dir.glob("fio-server-*.log"))
    assert not any(clients.listening(fio_hosts.parse_host(h)) for h in hosts)
    assert not (target / "assay-fio").exists()

    from assay.analysis.statistics.stats import fold_repetitions
    from assay.store.rundir import RunStore

    tables = storage_tables(fold_repetitions(RunStore(assay_home).load(None).samples))
    table = tables[0]
    assert table.columns[:2] == ["Workload", "Host"]
    assert [r[1] for r in table.rows] == ["127.0.0.1", "127.0.0.2", ALL_CLIENTS]
    assert any("Multi-client" in n for n in table.notes)


@pytest.mark.slow
@needs_fio
def test_servers_are_stopped_when_the_driver_is_terminated(tmp_path: Path):
    hosts = two_hosts()
    proc = subprocess.Popen(
        [sys.executable, "-m", "assay.drivers.fio", "--spec", _spec(hosts, runtime=60)],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    deadline = time.monotonic() + 30
    while not list(tmp_path.glob("*-randread-8k-127.0.0.2.fio")) and time.monotonic() < deadline:
        time.sleep(0.1)
    pids = [int(p.read_text().split()[0]) for p in tmp_path.glob("fio-server-*.pid")]
    assert len(pids) == 2 and all(clients.alive(p) for p in pids)
    workers = [c for p in pids for c in clients.descendants(p)]
    os.killpg(proc.pid, signal.SIGTERM)  # what the runner does on a timeout
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == EXIT_FIO, err.decode()
    assert b"terminated" in err
    assert not any(clients.alive(p) for p in pids + workers)
    assert not any(clients.listening(fio_hosts.parse_host(h)) for h in hosts)
    assert not (tmp_path / SCRATCH).exists()
