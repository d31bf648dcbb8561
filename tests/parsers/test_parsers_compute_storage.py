"""Parsers of HPL, HPCC, STREAM and fio output, on real outputs of the real tools.

Fixtures (tests/fixtures/<tool>/README.md says where each came from) keep the fast tests
fast; the tests marked ``slow`` run hpcc and fio here and parse what they print.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from assay.errors import ParseError
from assay.parsers import fio, hpcc, hpl, parse_text, stream

FIXTURES = Path(__file__).parents[1] / "fixtures"


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def by_metric(samples, metric, **params):
    return [
        s
        for s in samples
        if s.metric == metric and all(s.params.get(k) == v for k, v in params.items())
    ]


def summary_value(text: str, key: str) -> float:
    for line in text.splitlines():
        if line.startswith(key + "="):
            return float(line.split("=", 1)[1])
    raise KeyError(key)


# ------------------------------------------------------------------------------------- HPL


def test_hpl_21_one_test_passed():
    r = hpl.parse(fixture("hpl/sc14_hpl21.txt"), "sc14_hpl21.txt")
    assert r.complete and not r.missing and not r.warnings
    (s,) = r.samples
    assert s.probe == "hpl" and s.metric == "compute.hpl" and s.unit == "flop/s"
    assert s.value == 979.690e9  # "9.79690e+02" Gflops, HPL's Gflops = 1e9 flop/s
    assert s.params == {
        "N": 100000,
        "NB": 192,
        "P": 6,
        "Q": 8,
        "variant": "WR01C2R4",
        "time_s": 680.50,
        "residual": 0.0021839,
        "residual_passed": True,
    }
    assert r.meta["version"] == "2.1"
    assert r.meta["threshold"] == 16.0
    assert r.meta["summary"] == {"finished": 1, "passed": 1, "failed": 0, "skipped": 0}


def test_hpl_failed_residual_is_never_a_rate():
    r = hpl.parse(fixture("hpl/sc14_hpl21_failed.txt"), "sc14_hpl21_failed.txt")
    assert r.samples == []
    (failed,) = r.meta["failed"]
    assert (failed["N"], failed["NB"], failed["P"], failed["Q"]) == (100000, 192, 6, 8)
    assert failed["residual"] == 21.839 and failed["gflops"] == 979.69
    assert any("FAILED" in w for w in r.warnings)
    assert r.meta["summary"]["failed"] == 1


def test_hpl_23_interrupted_run_keeps_checked_tests():
    r = hpl.parse(fixture("hpl/kish29_hpl23_interrupted.txt"), "res")
    assert r.meta["version"] == "2.3"
    assert [s.params["variant"] for s in r.samples] == ["WR00L2L2", "WR00L2L4", "WR00L2C2"]
    assert [s.value for s in r.samples] == [4617.8, 4472.8, 3937.6]  # 4.6178e-06 Gflops ...
    assert all(s.params["residual"] == 1.72533487e-02 for s in r.samples)
    # killed by Ctrl-C: HPL's closing counts never came
    assert not r.complete
    assert any("Finished" in m for m in r.missing)


def test_hpl_result_without_its_check_is_incomplete():
    text = fixture("hpl/sc14_hpl21.txt")
    cut = text[: text.index("HPL_pdgesv() start time")]
    r = hpl.parse(cut, "cut.txt")
    assert r.samples == []
    assert not r.complete
    assert any("residual check for WR01C2R4 N=100000 NB=192 P=6 Q=8" in m for m in r.missing)


def test_hpl_reads_the_hpl_part_of_hpcc_output():
    text = fixture("hpcc/hpccoutf.txt")
    r = hpl.parse(text, "hpccoutf.txt")
    assert [(s.params["N"], s.params["NB"]) for s in r.samples] == [
        (500, 64),
        (500, 80),
        (1000, 64),
        (1000, 80),
    ]
    # PTRANS's look-alike counts ("... residual checks.") are not HPL's
    assert r.meta["summary"] == {"finished": 4, "passed": 4, "failed": 0, "skipped": 0}
    assert not hpl.looks_like(text) and hpcc.looks_like(text)


def test_hpl_pasted_indented_after_a_prompt_reads_as_written():
    # a block pasted into a doc (reStructuredText literal: indented, after the shell prompt)
    text = "  $ mpirun -np 48 ./xhpl\n" + "".join(
        f"  {line}\n" for line in fixture("hpl/sc14_hpl21.txt").splitlines()
    )
    (s,) = hpl.parse(text, "pasted.rst").samples
    assert s.value == pytest.approx(9.79690e11) and s.params["N"] == 100000
    # detected as HPL even when the banner was left out of the paste
    no_banner = "\n".join(ln for ln in text.splitlines() if "HPLinpack" not in ln)
    assert parse_text(no_banner, "auto", "pasted.rst").tool == "hpl"


def test_hpl_nan_residual_is_failed_never_a_rate():
    # HPCC 1.5.0's HPL printed "-nan ...... FAILED" (github.com/liuquan2049/hpcc-buaa)
    text = fixture("real/hpcc/buaa_hpcc150_appended_excerpt.txt")
    r = hpcc.parse(text, "buaa.txt")
    assert not by_metric(r.samples, "compute.hpl", run=5)
    (bad,) = [f for f in r.meta["failed"] if f["run"] == 5 and f["section"] == "HPL"]
    assert bad["N"] == 30000 and bad["residual"] is None


def test_hpl_outputs_pasted_one_after_another_are_runs_kept_apart():
    text = fixture("real/hpl/nvidia_cuda_hpl20_typical_results_excerpt.txt")
    r = hpl.parse(text, "readme.txt")
    assert sorted({s.params["run"] for s in r.samples}) == [1, 2, 3, 4, 5, 6]
    # run 3 was pasted without its banner and its closing counts: kept, and said
    assert len(by_metric(r.samples, "compute.hpl", run=3)) == 7
    assert any("run 3" in w and "no closing counts" in w for w in r.warnings)
    assert r.complete


def test_hpcc_values_it_never_computed_are_not_stored():
    # RandomAccess_LCG values never set (denormals), -1 for tests that did not run
    text = fixture("real/hpcc/tuandinh91_hpcc142_appended_excerpt.txt")
    r = hpcc.parse(text, "tuan.txt")
    assert not by_metric(r.samples, "memory.randomaccess")
    assert any("uninitialised: StarRandomAccess_LCG_GUPs=6.95257e-310" in w for w in r.warnings)
    assert any("not run: StarSTREAM_Copy" in w for w in r.warnings)
    assert "SingleRandomAccess_LCG_GUPs" in r.meta["runs"][0]["not_measured"]


def test_hpcc_aborted_start_is_refused_saying_where_it_stopped():
    text = fixture("real/hpcc/alexsockz_hpcc150_aborted_start_excerpt.txt")
    with pytest.raises(ParseError, match=r"stopped before any result.*MPIRandomAccess section"):
        hpcc.parse(text, "aborted.txt")


def test_hpcc_summary_hpl_never_from_minus_one_nor_n_zero():
    text = fixture("hpcc/hpccoutf.txt")
    text = drop_section(text, "HPL")
    for key, bad in (("HPL_Tflops", "-1"), ("HPL_Tflops", "4.94066e-324"), ("HPL_N", "0")):
        start = text.index(f"\n{key}=") + 1
        end = text.index("\n", start)
        r = hpcc.parse(text[:start] + f"{key}={bad}" + text[end:], "x.txt")
        assert not by_metric(r.samples, "compute.hpl"), (key, bad)
        assert any("HPL_Tflops" in w and "not stored" in w for w in r.warnings), (key, bad)


def test_hpl_bad_input():
    with pytest.raises(ParseError, match="empty"):
        hpl.parse("", "empty.txt")
    with pytest.raises(ParseError, match=r"revyos\.txt: no HPL result line"):
        hpl.parse(fixture("stream/revyos_lpi4a_omp8.txt"), "revyos.txt")
    assert hpl.looks_like(fixture("hpl/sc14_hpl21.txt"))
    assert not hpl.looks_like(fixture("stream/revyos_lpi4a_omp8.txt"))


# ------------------------------------------------------------------------------------ HPCC


def test_hpcc_fixture_all_metrics():
    text = fixture("hpcc/hpccoutf.txt")
    r = hpcc.parse(text, "hpccoutf.txt")
    assert r.complete and not r.missing and not r.warnings
    assert r.meta["version"] == "1.5.0" and r.meta["procs"] == 2 and r.meta["success"]

    hpls = by_metric(r.samples, "compute.hpl")
    assert len(hpls) == 4 and all(s.params["residual_passed"] for s in hpls)
    assert all(s.params["procs"] == 2 and s.value > 0 for s in hpls)
    best = max(hpls, key=lambda s: s.value)
    assert best.value == pytest.approx(summary_value(text, "HPL_Tflops") * 1e12, rel=1e-3)
    assert r.meta["hpl_best"]["passed"]

    # HPCC's STREAM GB/s are 1e9 B/s (STREAM/stream.c: 1e-9 * bytes / time)
    (triad,) = by_metric(r.samples, "memory.triad", variant="star")
    assert triad.value == pytest.approx(summary_value(text, "StarSTREAM_Triad") * 1e9, rel=1e-12)
    assert triad.unit == "B/s" and triad.params["per"] == "process"
    assert triad.params["elements"] == summary_value(text, "STREAM_VectorSize")
    assert triad.stats is not None and triad.stats.n == 2
    assert by_metric(r.samples, "memory.triad", variant="single")[0].value > 0

    (dgemm,) = by_metric(r.samples, "compute.dgemm", variant="star")
    assert dgemm.stats.min <= dgemm.stats.mean <= dgemm.stats.max
    assert dgemm.value == pytest.approx(dgemm.stats.mean, rel=1e-5)

    ra = by_metric(r.samples, "memory.randomaccess")
    assert len(ra) == 6 and all(s.unit == "op/s" for s in ra)
    (mpi_ra,) = by_metric(r.samples, "memory.randomaccess", variant="mpi", generator="poly")
    assert mpi_ra.value == pytest.approx(
        summary_value(text, "MPIRandomAccess_GUPs") * 1e9, rel=1e-12
    )

    assert {s.params["variant"] for s in by_metric(r.samples, "compute.fft")} == {
        "star",
        "single",
        "mpi",
    }
    (ptrans,) = by_metric(r.samples, "memory.ptrans")
    assert ptrans.params["N"] == 250 and ptrans.unit == "B/s"

    lat = {s.params["stat"]: s for s in by_metric(r.samples, "p2p.latency")}
    assert lat["min"].value <= lat["avg"].value <= lat["max"].value
    assert lat["max"].value == pytest.approx(
        summary_value(text, "MaxPingPongLatency_usec") * 1e-6, rel=1e-12
    )
    assert lat["max"].params["size"] == 8 and lat["max"].better == "lower"
    bw = by_metric(r.samples, "p2p.bandwidth", stat="min")[0]
    assert bw.value == pytest.approx(
        summary_value(text, "MinPingPongBandwidth_GBytes") * 1e9, rel=1e-12
    )
    ring = by_metric(r.samples, "p2p.ring.latency", order="random")[0]
    assert ring.unit == "s" and ring.better == "lower"
    assert by_metric(r.samples, "p2p.ring.bandwidth", order="natural")[0].unit == "B/s"


def test_hpcc_failed_hpl_residual_is_never_a_rate():
    r = hpcc.parse(fixture("hpcc/hpccoutf_hpl_failed.txt"), "hpccoutf_hpl_failed.txt")
    hpls = by_metric(r.samples, "compute.hpl")
    assert [(s.params["N"], s.params["NB"]) for s in hpls] == [(500, 64), (500, 80), (1000, 80)]
    failed_hpl = [f for f in r.meta["failed"] if f["section"] == "HPL"]
    assert failed_hpl and failed_hpl[0]["N"] == 1000 and failed_hpl[0]["residual"] == 47.947
    # HPL_Tflops is HPCC's best test, which is the failed one
    assert not r.meta["hpl_best"]["passed"]
    assert any("HPL_Tflops" in w and "FAILED" in w for w in r.warnings)
    assert r.meta["success"] is False
    # Success=0: Star/Single rates, whose checks only rank 0 (or nobody) printed, are dropped
    assert not [s for s in r.samples if s.params.get("variant") in ("star", "single")]
    # global checks that passed in the output stay
    assert by_metric(r.samples, "memory.randomaccess", variant="mpi")
    assert by_metric(r.samples, "memory.ptrans")
    assert by_metric(r.samples, "p2p.latency")


def test_hpcc_truncated_summary():
    text = fixture("hpcc/hpccoutf.txt")
    cut = text[: text.index("StarSTREAM_Copy=")]
    r = hpcc.parse(cut, "cut.txt")
    assert not r.complete
    assert any("end of the Summary section" in m for m in r.missing)
    assert "Summary key StarSTREAM_Triad" in r.missing
    assert len(by_metric(r.samples, "compute.hpl")) == 4
    assert by_metric(r.samples, "compute.dgemm")  # read before the cut
    assert not by_metric(r.samples, "memory.triad")


def test_hpcc_without_summary():
    text = fixture("hpcc/hpccoutf.txt")
    cut = text[: text.index("Begin of Summary section.")]
    r = hpcc.parse(cut, "cut.txt")
    assert not r.complete
    assert any(m.startswith("Summary section") for m in r.missing)
    assert [s.metric for s in r.samples] == ["compute.hpl"] * 4


def drop_section(text: str, name: str) -> str:
    start = text.index(f"Begin of {name} section.")
    end = text.index(f"End of {name} section.") + len(f"End of {name} section.\n")
    return text[:start] + text[end:]


def test_hpcc_summary_hpl_when_the_body_has_no_hpl_test():
    text = drop_section(fixture("hpcc/hpccoutf.txt"), "HPL")
    r = hpcc.parse(text, "nohpl.txt")
    (s,) = by_metric(r.samples, "compute.hpl")
    assert s.value == pytest.approx(summary_value(text, "HPL_Tflops") * 1e12, rel=1e-12)
    assert (s.params["N"], s.params["NB"], s.params["P"], s.params["Q"]) == (1000, 64, 1, 2)
    assert s.params["variant"] == "WR11C2R4"  # rebuilt from HPL_order, HPL_depth, ...
    # the scaled residual, recomputed from the summary's norms, is the body's 0.0047947
    assert s.params["residual"] == pytest.approx(0.0047947, rel=1e-4)
    # Success=0 and no HPL test to look at: HPL_Tflops may be a failed test's
    failed = drop_section(fixture("hpcc/hpccoutf_hpl_failed.txt"), "HPL")
    r = hpcc.parse(failed, "nohpl_failed.txt")
    assert not by_metric(r.samples, "compute.hpl")
    assert any(f.get("key") == "HPL_Tflops" for f in r.meta["failed"])


def test_hpcc_appended_runs_are_each_kept_apart():
    # (this asserted before that only the last run was read: the first run's HPL tests were lost)
    text = fixture("hpcc/hpccoutf.txt")
    failed = fixture("hpcc/hpccoutf_hpl_failed.txt")
    r = hpcc.parse(failed + text, "twice.txt")  # hpcc appends: two runs, the failed one first
    assert any("2 HPCC runs" in w and "params.run 1..2" in w for w in r.warnings)
    second = by_metric(r.samples, "compute.hpl", run=2)
    assert len(second) == 4 and second[0].params["N"] == 500
    first = by_metric(r.samples, "compute.hpl", run=1)
    assert len(first) == 3  # its failed test (N=1000 NB=64) is no rate
    assert [f for f in r.meta["failed"] if f["run"] == 1 and f["section"] == "HPL"]
    assert {s.params["run"] for s in r.samples} == {1, 2}
    assert len(r.samples) == len(hpcc.parse(failed).samples) + len(hpcc.parse(text).samples)


def test_hpcc_bad_input():
    with pytest.raises(ParseError, match="empty"):
        hpcc.parse("  \n", "empty.txt")
    with pytest.raises(ParseError, match=r"fio\.json:1: not an HPCC output file"):
        hpcc.parse(fixture("fio/write_1m.json"), "fio.json")


@pytest.mark.slow
def test_hpcc_real_run(tmp_path):
    """Run Debian's hpcc (HPCC 1.5.0) on one process with a small HPL problem."""
    if shutil.which("hpcc") is None:
        pytest.skip("hpcc is not installed")
    # the fixture's input (Debian's example, N=500 1000, NB=64 80), on a 1x1 grid
    inp = fixture("hpcc/hpccinf.txt").replace("2            Qs", "1            Qs")
    (tmp_path / "hpccinf.txt").write_text(inp)
    mpirun = shutil.which("mpirun.openmpi")
    argv = [mpirun, "--allow-run-as-root", "-np", "1", "hpcc"] if mpirun else ["hpcc"]
    subprocess.run(argv, cwd=tmp_path, check=True, timeout=120, capture_output=True)
    out = tmp_path / "hpccoutf.txt"
    r = hpcc.parse(out.read_text(), str(out))
    assert r.complete, r.missing
    assert r.meta["success"] and r.meta["procs"] == 1
    hpls = by_metric(r.samples, "compute.hpl")
    assert len(hpls) == 4
    assert all(s.params["residual_passed"] and s.value > 0 for s in hpls)
    assert all(s.params["P"] == 1 and s.params["Q"] == 1 for s in hpls)
    assert by_metric(r.samples, "memory.triad", variant="star")[0].value > 0
    assert by_metric(r.samples, "compute.dgemm", variant="single")[0].value > 0
    # one process: no latency/bandwidth test, HPCC prints -1 for it
    assert "MaxPingPongLatency_usec" in r.meta["not_measured"]
    assert not by_metric(r.samples, "p2p.latency")


# ---------------------------------------------------------------------------------- STREAM


def test_stream_510_openmp():
    r = stream.parse(fixture("stream/revyos_lpi4a_omp8.txt"), "stream.md")
    assert r.complete and not r.warnings
    assert [s.metric for s in r.samples] == [
        "memory.copy",
        "memory.scale",
        "memory.add",
        "memory.triad",
    ]
    copy = r.samples[0]
    assert copy.value == 8239.8e6  # MB/s, MB = 1e6 B
    assert copy.unit == "B/s" and copy.probe == "stream"
    assert copy.params == {
        "elements": 10_000_000,
        "threads": 8,
        "min_time": 0.019418,
        "avg_time": 0.019513,
        "max_time": 0.019651,
    }
    assert copy.stats.n == 9 and copy.stats.max == copy.value
    assert copy.stats.min == pytest.approx(copy.value * 0.019418 / 0.019651)
    assert r.meta["version"] == "5.10" and r.meta["ntimes"] == 10


def test_stream_serial_build_has_one_thread():
    r = stream.parse(fixture("stream/qemu_ppc_linux_verbose.txt"), "mail.txt")
    assert r.complete
    assert {s.params["threads"] for s in r.samples} == {1}
    assert by_metric(r.samples, "memory.triad")[0].value == 683.0e6


def test_stream_failed_validation_is_an_error():
    with pytest.raises(ParseError, match=r"^failed\.txt:16: STREAM failed its validation"):
        stream.parse(fixture("stream/qemu_sam460ex_failed.txt"), "failed.txt")


def test_stream_truncated():
    text = fixture("stream/revyos_lpi4a_omp8.txt")
    r = stream.parse(text[: text.index("Solution Validates")], "cut.txt")
    assert not r.complete and len(r.samples) == 4
    assert any("Solution Validates" in m for m in r.missing)
    r = stream.parse(text[: text.index("Add:")], "cut.txt")
    assert [s.metric for s in r.samples] == ["memory.copy", "memory.scale"]
    assert "Add row of the table" in r.missing and "Triad row of the table" in r.missing


def test_stream_bad_input():
    with pytest.raises(ParseError, match="empty"):
        stream.parse("", "e.txt")
    with pytest.raises(ParseError, match=r"hpl\.txt: no STREAM result table"):
        stream.parse(fixture("hpl/sc14_hpl21.txt"), "hpl.txt")
    assert stream.looks_like(fixture("stream/revyos_lpi4a_omp8.txt"))
    assert not stream.looks_like(fixture("hpcc/hpccoutf.txt"))
    assert not stream.looks_like(fixture("hpl/sc14_hpl21.txt"))


# ------------------------------------------------------------------------------------- fio


def fio_doc(name: str) -> dict:
    text = fixture(name)
    return json.loads(text[text.index("{") :])


def fio_percentiles(lat: dict) -> dict[float, int]:
    return {float(k): v for k, v in lat["percentile"].items()}


def test_fio_jsonplus_single_job():
    r = fio.parse(fixture("fio/randread_8k.jsonplus.json"), "randread.json")
    assert not r.warnings and r.meta["version"] == "fio-3.33"
    raw = fio_doc("fio/randread_8k.jsonplus.json")["jobs"][0]["read"]
    (iops,) = by_metric(r.samples, "storage.iops")
    assert iops.value == raw["iops"] and iops.unit == "op/s"
    assert iops.params["job"] == "randread" and iops.params["direction"] == "read"
    assert iops.params["bs"] == 8192 and iops.params["rw"] == "randread"
    assert iops.params["iodepth"] == 1 and iops.params["numjobs"] == 1
    assert "host" not in iops.params and "instance" not in iops.params
    assert not by_metric(r.samples, "storage.iops", direction="write")  # wrote nothing
    (bw,) = by_metric(r.samples, "storage.bandwidth")
    assert bw.value == raw["bw_bytes"]
    (clat,) = by_metric(r.samples, "storage.latency", latency="completion")
    pct = fio_percentiles(raw["clat_ns"])
    assert clat.value == pytest.approx(raw["clat_ns"]["mean"] * 1e-9)
    assert clat.stats.n == raw["clat_ns"]["N"]
    assert clat.stats.median == pytest.approx(pct[50.0] * 1e-9)
    assert clat.stats.p99 == pytest.approx(pct[99.0] * 1e-9) and clat.stats.p999 == pytest.approx(
        pct[99.9] * 1e-9
    )
    assert clat.params["lat_p90"] == pytest.approx(pct[90.0] * 1e-9)
    assert clat.params["lat_p9999"] == pytest.approx(pct[99.99] * 1e-9)
    (total,) = by_metric(r.samples, "storage.latency", latency="total")
    assert total.value >= clat.value  # lat = slat + clat
    assert "usr_cpu" in iops.params and "sys_cpu" in iops.params


def test_fio_histogram_percentiles_agree_with_fio():
    """fio's own percentiles, recomputed from its json+ bins: equal for every job and host."""
    checked = 0
    for name in (
        "fio/randread_8k.jsonplus.json",
        "fio/randrw_numjobs2_group.jsonplus.json",
        "fio/randread_numjobs2_nogroup.jsonplus.json",
        "fio/client_server_2hosts.jsonplus.txt",
    ):
        doc = fio_doc(name)
        for job in doc.get("jobs", doc.get("client_stats")):
            for ddir in ("read", "write"):
                lat = job[ddir]["clat_ns"]
                if "bins" in lat and "percentile" in lat:
                    assert fio.merge_clat_histograms([lat["bins"]]) == fio_percentiles(lat)
                    checked += 1
    assert checked == 9


def test_fio_percentiles_across_jobs_are_merged_not_averaged():
    doc = fio_doc("fio/randread_numjobs2_nogroup.jsonplus.json")
    jobs = [j["read"]["clat_ns"] for j in doc["jobs"]]
    merged_bins = fio.merge_bins(j["bins"] for j in jobs)
    assert sum(merged_bins.values()) == sum(j["N"] for j in jobs)
    merged = fio.merge_clat_histograms([j["bins"] for j in jobs])
    for p, value in merged.items():
        parts = [fio_percentiles(j)[p] for j in jobs]
        assert min(parts) <= value <= max(parts)
        assert value in merged_bins  # a bucket value, as fio reports them
    assert list(merged.values()) == sorted(merged.values())
    # and the parser keeps the two threads apart
    r = fio.parse(fixture("fio/randread_numjobs2_nogroup.jsonplus.json"))
    assert [s.params["instance"] for s in by_metric(r.samples, "storage.iops")] == [0, 1]
    assert {s.params["numjobs"] for s in r.samples} == {2}


def test_fio_group_reporting_randrw():
    r = fio.parse(fixture("fio/randrw_numjobs2_group.jsonplus.json"))
    iops = by_metric(r.samples, "storage.iops")
    assert [s.params["direction"] for s in iops] == ["read", "write"]
    assert all(s.params["rwmixread"] == 50 and s.params["numjobs"] == 2 for s in iops)
    assert all("instance" not in s.params for s in iops)


def test_fio_client_server_hosts_and_all_clients():
    text = fixture("fio/client_server_2hosts.jsonplus.txt")
    r = fio.parse(text, "cs.txt")
    assert any("before fio's JSON" in w and "<vm>" in w for w in r.warnings)
    hosts = {s.params["host"] for s in r.samples}
    assert hosts == {"127.0.0.1", "127.0.0.2", "All clients"}
    read = {s.params["host"]: s for s in by_metric(r.samples, "storage.iops", direction="read")}
    assert read["All clients"].value == pytest.approx(
        read["127.0.0.1"].value + read["127.0.0.2"].value, rel=1e-3
    )
    assert read["127.0.0.1"].params["rwmixread"] == 70  # from "global options"
    # fio writes no percentiles for "All clients": they come from the merged host bins
    doc = fio_doc("fio/client_server_2hosts.jsonplus.txt")
    hosts_lat = [e["read"]["clat_ns"] for e in doc["client_stats"][:2]]
    merged = fio.merge_clat_histograms([h["bins"] for h in hosts_lat])
    (agg,) = by_metric(
        r.samples, "storage.latency", host="All clients", direction="read", latency="completion"
    )
    assert agg.params["percentiles"] == "merged from per-host bins"
    assert agg.stats.n == sum(h["N"] for h in hosts_lat)
    assert agg.stats.median == pytest.approx(merged[50.0] * 1e-9)
    assert agg.stats.p99 == pytest.approx(merged[99.0] * 1e-9)


def test_fio_plain_json_and_sizes():
    r = fio.parse(fixture("fio/write_1m.json"))
    (bw,) = by_metric(r.samples, "storage.bandwidth")
    assert bw.params["direction"] == "write" and bw.params["bs"] == 1 << 20
    (clat,) = by_metric(r.samples, "storage.latency", latency="completion")
    assert clat.stats.median is not None  # plain json has percentiles too, no bins
    # fio's "compatibility mode" units (kb_base=1024): k is 1024, KiB is 1000
    assert fio.parse_size("4k") == 4096 and fio.parse_size("4kB") == 4096
    assert fio.parse_size("4KiB") == 4000 and fio.parse_size("4KiB", kb_base=1000) == 4096
    assert fio.parse_size("4k", kb_base=1000) == 4000 and fio.parse_size("512") == 512
    assert fio.parse_size("1m") == 1 << 20 and fio.parse_size("4k-16k") is None


def test_fio_failed_job_is_not_a_rate():
    doc = fio_doc("fio/randread_8k.jsonplus.json")
    doc["jobs"][0]["error"] = 5  # EIO, as fio reports a job that died on an I/O error
    # every job failed: no measurement at all, refused with the jobs and their errors
    with pytest.raises(ParseError, match=r"every job failed \(job 'randread': error 5 \(Input"):
        fio.parse(json.dumps(doc), "err.json")
    two = json.loads(json.dumps(doc))
    two["jobs"].append(fio_doc("fio/randread_8k.jsonplus.json")["jobs"][0])
    r = fio.parse(json.dumps(two), "err.json")
    assert {s.params["job"] for s in r.samples} == {"randread"} and len(r.samples) == 4
    assert r.meta["failed"] == [{"job": "randread", "host": None, "error": 5}]
    # a client that failed also spoils fio's "All clients" sum
    doc = fio_doc("fio/client_server_2hosts.jsonplus.txt")
    doc["client_stats"][0]["error"] = 5
    r = fio.parse(json.dumps(doc), "cs_err.json")
    assert {s.params["host"] for s in r.samples} == {"127.0.0.2"}
    assert [f["host"] for f in r.meta["failed"]] == ["127.0.0.1", "All clients"]


def test_fio_bad_input():
    with pytest.raises(ParseError, match="empty"):
        fio.parse("", "e.json")
    with pytest.raises(ParseError, match=r"hpcc\.txt:1: no JSON object"):
        fio.parse(fixture("hpcc/hpccinf.txt"), "hpcc.txt")
    text = fixture("fio/randread_8k.jsonplus.json")
    cut = text[: len(text) // 2]
    with pytest.raises(ParseError, match=r"cut\.json:\d+: fio JSON is not valid"):
        fio.parse(cut, "cut.json")
    with pytest.raises(ParseError, match="neither 'jobs' nor 'client_stats'"):
        fio.parse('{"fio version": "fio-3.33"}', "x.json")
    assert fio.looks_like(text) and not fio.looks_like(fixture("hpcc/hpccoutf.txt"))
    junk = "fio: this platform does not support process shared mutexes\n" + text
    assert fio.parse(junk).warnings


# ------------------------------------------------------------------------------ fio, live


def run_fio(tmp_path: Path, *args: str) -> str:
    if shutil.which("fio") is None:
        pytest.skip("fio is not installed")
    argv = ["fio", f"--filename={tmp_path / 'f'}", "--size=16M", "--ioengine=psync"]
    argv += ["--direct=0", "--runtime=1", "--time_based", "--output-format=json+", *args]
    done = subprocess.run(argv, check=True, timeout=60, capture_output=True, text=True)
    return done.stdout


@pytest.mark.slow
def test_fio_real_randread(tmp_path):
    out = run_fio(tmp_path, "--name=t", "--rw=randread", "--bs=8k")
    r = fio.parse(out, "fio-randread")
    (iops,) = by_metric(r.samples, "storage.iops")
    assert iops.value > 0 and iops.params["bs"] == 8192
    raw = json.loads(out[out.index("{") :])["jobs"][0]["read"]["clat_ns"]
    assert fio.merge_clat_histograms([raw["bins"]]) == fio_percentiles(raw)
    (clat,) = by_metric(r.samples, "storage.latency", latency="completion")
    assert clat.stats.median == pytest.approx(fio_percentiles(raw)[50.0] * 1e-9)


@pytest.mark.slow
def test_fio_real_randrw_group_reporting(tmp_path):
    out = run_fio(
        tmp_path,
        "--name=m",
        "--rw=randrw",
        "--rwmixread=50",
        "--bs=4k",
        "--numjobs=2",
        "--group_reporting",
    )
    r = fio.parse(out)
    assert {s.params["direction"] for s in r.samples} == {"read", "write"}
    assert all(s.params["numjobs"] == 2 and s.params["rwmixread"] == 50 for s in r.samples)
    assert len(by_metric(r.samples, "storage.iops")) == 2  # one entry for both threads


@pytest.mark.slow
def test_fio_real_two_jobs_merged(tmp_path):
    out = run_fio(tmp_path, "--name=n", "--rw=randread", "--bs=4k", "--numjobs=2")
    jobs = json.loads(out[out.index("{") :])["jobs"]
    assert len(jobs) == 2
    lats = [j["read"]["clat_ns"] for j in jobs]
    merged = fio.merge_clat_histograms([lat["bins"] for lat in lats])
    for p, value in merged.items():
        parts = [fio_percentiles(lat)[p] for lat in lats]
        assert min(parts) <= value <= max(parts)
    r = fio.parse(out)
    assert len(by_metric(r.samples, "storage.iops")) == 2


# --------------------------------------------------------------------------- --format auto


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("hpl/sc14_hpl21.txt", hpl),
        ("hpl/kish29_hpl23_interrupted.txt", hpl),
        ("hpcc/hpccoutf.txt", hpcc),
        ("stream/revyos_lpi4a_omp8.txt", stream),
        ("stream/qemu_ppc_linux_verbose.txt", stream),
        ("fio/client_server_2hosts.jsonplus.txt", fio),
        ("fio/write_1m.json", fio),
    ],
)
def test_looks_like_is_exclusive(name, module):
    text = fixture(name)
    assert [m for m in (hpl, hpcc, stream, fio) if m.looks_like(text)] == [module]


def test_fio_json_documents_appended_to_one_file_are_runs_kept_apart():
    one = fixture("fio/write_1m.json")
    two = fixture("fio/randread_8k.jsonplus.json")
    r = fio.parse("$ fio --output-format=json ...\n" + one + "\n" + two + "$ \n", "two.log")
    assert {s.params["run"] for s in r.samples} == {1, 2}
    assert {s.params["job"] for s in r.samples if s.params["run"] == 1} == {"seqwrite"}
    assert {s.params["job"] for s in r.samples if s.params["run"] == 2} == {"randread"}
    assert any("before fio's JSON" in w and "$ fio" in w for w in r.warnings)
    single = fio.parse(one, "one.json")
    assert all("run" not in s.params for s in single.samples)


def test_fio_3_0_to_3_2_bandwidth_is_fios_formula_and_2x_units_are_converted():
    doc = fio_doc("fio/write_1m.json")
    w = doc["jobs"][0]["write"]
    del w["bw_bytes"]  # as fio 3.0-3.2 write it
    r = fio.parse(json.dumps(doc), "old.json")
    (bw,) = by_metric(r.samples, "storage.bandwidth")
    assert bw.value == 1000 * w["io_bytes"] // w["runtime"]
    assert any("no bw_bytes (fio before 3.3)" in x for x in r.warnings)
    # fio 2.x: io_bytes in KiB, clat/lat in µs, no N
    old = {
        "fio version": "fio-2.2.10",
        "jobs": [
            {
                "jobname": "j",
                "groupid": 0,
                "error": 0,
                "job options": {"rw": "read", "bs": "4k"},
                "read": {
                    "io_bytes": 4096,
                    "bw": 2048,
                    "iops": 512.0,
                    "runtime": 2000,
                    "total_ios": 1024,
                    "clat": {
                        "min": 0,
                        "max": 900,
                        "mean": 150.5,
                        "stddev": 20.0,
                        "percentile": {"50.000000": 140, "0.00": 0},
                    },
                    "lat": {"min": 3, "max": 910, "mean": 160.0, "stddev": 21.0},
                },
            }
        ],
    }
    r = fio.parse(json.dumps(old), "two.json")
    (bw,) = by_metric(r.samples, "storage.bandwidth")
    assert bw.value == 1000 * 4096 * 1024 // 2000
    (clat,) = by_metric(r.samples, "storage.latency", latency="completion")
    assert clat.value == 0.0001505 and clat.stats.median == 0.00014
    assert clat.stats.min is None and clat.stats.n == 1024  # 0 µs is under fio 2's resolution
    assert any("microseconds" in x for x in r.warnings)


def test_fio_normal_output_alone_is_read_and_a_header_only_one_refused():
    text = (
        "seq: (g=0): rw=read, bs=(R) 1024KiB-1024KiB, (W) 1024KiB-1024KiB, "
        "(T) 1024KiB-1024KiB, ioengine=psync, iodepth=1\nfio-3.33\nStarting 1 process\n\n"
        "seq: (groupid=0, jobs=1): err= 0: pid=1: Mon Jan  1 00:00:00 2024\n"
        "  read: IOPS=1234, BW=1234MiB/s (1294MB/s)(2468MiB/2000msec)\n"
        "    clat (usec): min=500, max=1500k, avg=800.50, stdev=10.25\n"
    )
    r = parse_text(text, "auto", source="n.txt")
    (iops,) = by_metric(r.samples, "storage.iops")
    assert iops.value == 1234 and iops.params["bs"] == 1 << 20
    (bw,) = by_metric(r.samples, "storage.bandwidth")
    assert bw.value == 1234 * 2**20
    (clat,) = by_metric(r.samples, "storage.latency")
    assert clat.value == pytest.approx(800.5e-6) and clat.stats.max == pytest.approx(1.5)
    header_only = text.split("seq: (groupid")[0] + "Run status group 0 (all jobs):\n"
    with pytest.raises(ParseError, match=r"fio's normal .* without any job result line"):
        parse_text(header_only, "auto", source="h.txt")


def test_fio_normal_and_json_output_reads_the_json():
    real = Path(__file__).parents[1] / "fixtures" / "real" / "fio"
    normal = (real / "vps_2.2.10_normal_randread_5runs.log").read_text().split("Disk stats")[0]
    text = normal + fixture("fio/write_1m.json")  # --output-format=normal,json
    r = parse_text(text, "auto", source="both.txt")
    assert {s.params["job"] for s in r.samples} == {"seqwrite"}
    assert r.samples[0].params["rw"] == "write"
    assert any("before fio's JSON" in w and "randread: (g=0)" in w for w in r.warnings)


def test_fio_normal_output_with_a_cut_json_reads_the_normal_output_and_says_why():
    real = Path(__file__).parents[1] / "fixtures" / "real" / "fio"
    normal = (real / "vps_2.2.10_normal_randread_5runs.log").read_text().split("Disk stats")[0]
    json_text = fixture("fio/write_1m.json")
    r = parse_text(normal + json_text[: len(json_text) // 2], "fio", source="cut.txt")
    assert {s.params["job"] for s in r.samples} == {"randread"}
    assert any("fio JSON not read" in w and "not valid" in w for w in r.warnings)
