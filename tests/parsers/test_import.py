"""``assay import``: real third-party outputs stored as runs and reported like our own."""

from __future__ import annotations

import json
from pathlib import Path

from conftest import run_cli

FIX = Path(__file__).parents[1] / "fixtures"


def test_import_auto_detects_keeps_raw_output_and_reports(assay_home: Path):
    files = [FIX / "hpcc" / "hpccoutf.txt", FIX / "stream" / "revyos_lpi4a_omp8.txt"]
    proc = run_cli("import", *map(str, files), home=assay_home)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(run_cli("report", "-f", "json", home=assay_home, check=True).stdout)
    assert doc["run"]["source"] == "import:auto"
    by_probe = {s["probe"] for s in doc["samples"]}
    assert by_probe == {"hpcc", "stream"}
    triad = [s for s in doc["samples"] if s["probe"] == "stream" and s["metric"] == "memory.triad"]
    assert len(triad) == 1 and triad[0]["value"] == 6125.3e6  # STREAM's MB/s is 10^6 B/s
    run_dir = next((assay_home / "runs").iterdir())
    kept = sorted(p.read_text() for p in run_dir.glob("jobs/*/stdout"))
    assert sorted(f.read_text() for f in files) == kept  # the raw outputs travel with the run
    md = run_cli("report", "-f", "md", home=assay_home, check=True).stdout
    assert "| Triad | 6.13 | 6125.3 |" in md  # the STREAM table shows the imported STREAM
    assert "variant=star" in md  # HPCC's own STREAM is kept apart, in "Other measurements"


def test_a_failed_residual_is_never_a_rate_and_bad_files_do_not_hide_good_ones(
    assay_home: Path, tmp_path: Path
):
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    proc = run_cli(
        "import", "--format", "hpl", str(FIX / "hpl" / "sc14_hpl21_failed.txt"),
        str(FIX / "hpl" / "sc14_hpl21.txt"), str(empty), home=assay_home,
    )  # fmt: skip
    assert proc.returncode == 1  # some files failed
    assert "residual check FAILED" in proc.stderr
    doc = json.loads(run_cli("report", "-f", "json", home=assay_home).stdout)
    statuses = [j["status"] for j in doc["jobs"]]
    assert statuses == ["failed", "ok", "failed"]
    assert all(s["params"]["residual_passed"] for s in doc["samples"])
    assert doc["samples"], "the good file's rates were lost"


def test_unknown_format_and_unrecognised_text(assay_home: Path, tmp_path: Path):
    proc = run_cli("import", "--format", "nope", str(tmp_path), home=assay_home)
    assert proc.returncode == 2 and "unknown format 'nope'" in proc.stderr
    junk = tmp_path / "junk.txt"
    junk.write_text("hello\nworld\n")
    proc = run_cli("import", str(junk), home=assay_home)
    assert proc.returncode == 2 and "cannot tell which tool wrote this" in proc.stderr


def test_imported_perftest_and_osu_land_in_the_same_tables_as_our_probes(assay_home: Path):
    files = [
        FIX / "perftest" / "mlx4_qdr_ib_send_lat_a.txt",
        FIX / "perftest" / "nvidia_gpu_operator_ib_write_bw_a_report_gbits.txt",
        FIX / "osu" / "alaska_ompi4_ucx_osu_latency.out",
    ]
    proc = run_cli("import", "--label", "site", *map(str, files), home=assay_home)
    assert proc.returncode == 0, proc.stderr
    md = run_cli("report", "-f", "md", home=assay_home, check=True).stdout
    assert "## MPI latency (osu_latency method)" in md
    assert "## RDMA latency, site (ib_send_lat layout)" in md
    assert "| 2 | 1000 | 0.92 | 4.89 | 0.97 | 1.01 | 0.25 | 1.92 | 4.89 |" in md
    assert "## RDMA bandwidth, site" in md
    assert "| 8388608 | 5000 | 11013.75 | 11013.75 | 92.39 | 0.001377 |" in md
    assert "## Other measurements" not in md  # nothing of these falls through


def _strict_json(text: str):
    """json.loads that refuses NaN/Infinity, which are not JSON."""

    def refuse(name: str):
        raise AssertionError(f"{name} in the JSON output")

    return json.loads(text, parse_constant=refuse)


def test_several_files_each_good_one_stored_each_bad_one_named(assay_home: Path, tmp_path: Path):
    good = FIX / "osu" / "alaska_ompi4_ucx_osu_latency.out"
    nan = tmp_path / "osu_nan.out"  # one latency corrupted: no NaN may be stored
    nan.write_text(good.read_text().replace("1.02\n", "nan\n", 1))
    fio_doc = json.loads((FIX / "fio" / "randread_8k.jsonplus.json").read_text())
    del fio_doc["jobs"][0]["read"]["iops_min"]  # once a KeyError traceback
    cut_fio = tmp_path / "fio_cut.json"
    cut_fio.write_text(json.dumps(fio_doc))
    junk = tmp_path / "junk.bin"
    junk.write_bytes(b"\xff\xfe\x00binary\x80 proc'd" * 50)
    proc = run_cli("import", str(nan), str(good), str(cut_fio), str(junk), home=assay_home)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out  # some files failed
    assert "Traceback" not in out
    for bad in (nan, cut_fio, junk):
        assert str(bad) in out
    assert "iops_min" in out and "'nan'" in out
    doc = _strict_json(run_cli("report", "-f", "json", home=assay_home, check=True).stdout)
    assert doc["run"]["status"] == "complete"
    assert [j["status"] for j in doc["jobs"]] == ["failed", "ok", "failed", "failed"]
    assert {s["params"]["source_file"] for s in doc["samples"]} == {good.name}
    run_cli("history", "p2p.latency", home=assay_home, check=True)


def test_an_import_with_no_good_file_stores_no_run(assay_home: Path, tmp_path: Path):
    bad = tmp_path / "osu_negative.out"
    text = (FIX / "osu" / "alaska_ompi4_ucx_osu_latency.out").read_text()
    bad.write_text(text.replace("1.02\n", "-675.03\n", 1))
    proc = run_cli("import", "--format", "osu", str(bad), home=assay_home)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "nothing stored" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr
    runs = assay_home / "runs"
    assert not runs.exists() or not any(runs.iterdir())
