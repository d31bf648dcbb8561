"""Vdbench parameter files: the seed's generated files, the syntax rules, the fio translation.

The seed's files come from ``tests/fixtures/vdbench/seed_files.py`` (checked against the
seed's own bash script when the seed is at hand); the slow test runs the translated jobs with
the real fio.
"""

from __future__ import annotations

import importlib.util
import json
import mmap
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from assay.errors import ParseError
from assay.fio.job import job_file
from assay.vdbench import load_vdbench, translate

FIXTURES = Path(__file__).parents[1] / "fixtures" / "vdbench"
GIB = 2**30

_spec = importlib.util.spec_from_file_location("seed_files", FIXTURES / "seed_files.py")
assert _spec is not None and _spec.loader is not None
seed_files = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(seed_files)

SEED_NAME = "004_73a68fb193eed5f0.txt"


def _seed_path() -> Path | None:
    for root in (Path(__file__).resolve().parents[2] / "shared", Path("/work/shared")):
        path = root / "seeds" / SEED_NAME
        if path.is_file():
            return path
    return None


@pytest.fixture
def seed(tmp_path: Path) -> dict[str, Path]:
    return seed_files.write_seed_files(tmp_path / "vdb")


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


# ----------------------------------------------------------------------------- seed files


def test_seed_helper_writes_what_the_seed_script_writes(tmp_path: Path):
    seed_path = _seed_path()
    if seed_path is None or shutil.which("bash") is None:
        pytest.skip("seed 004 or bash not available")
    lines = seed_path.read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if "example-scripts" in ln)
    script = "\n".join(ln[4:] for ln in lines[start + 1 :] if ln.startswith("    ") or not ln)
    run_dir = tmp_path / "script"
    run_dir.mkdir()
    subprocess.run(["bash", "-c", script], cwd=run_dir, check=True, timeout=60)
    made = {p.name: p.read_text() for p in run_dir.iterdir()}
    assert made == seed_files.seed_texts(vms=24)
    assert len(made) == 9


@pytest.mark.parametrize("pattern", seed_files.PATTERNS)
def test_seed_workload_files_load(seed: dict[str, Path], pattern: str):
    path = seed[f"vnet1-{pattern}-workload"]
    config = load_vdbench(path)
    assert [Path(f).name for f in config.files] == [
        f"vnet1-{pattern}-workload",
        "vnet1-hosts-nfs",
        "vnet1-luns-nfs",
    ]
    assert [h.name for h in config.hosts] == [f"vm{i}" for i in range(1, 25)]
    vm7 = config.hosts[6]
    assert (vm7.system, vm7.user, vm7.shell, vm7.jvms) == ("vdbench-vnet1-7", "root", "ssh", 1)
    assert vm7.where.line == 8 and vm7.where.file.endswith("vnet1-hosts-nfs")
    assert len(config.storage) == 24 * 6
    sd = config.storage[6 * 4 + 2]  # vm5, volume 3
    assert sd.name == "sd-5-3" and sd.hosts == ("vm5",)
    assert sd.lun == "/mnt/vdb3/file-5-3" and sd.target == sd.lun
    assert sd.size == 693 * GIB  # sd=default,size=693g: g is 1024**3 (Vdb_scan)
    assert sd.openflags == ("o_direct",) and sd.threads == 8
    assert sd.where.line == 6 * 4 + 2 + 2
    assert [wd.name for wd in config.workloads] == [pattern]
    assert config.workloads[0].sd_names == ("sd*",)


EXPECTED = {
    # pattern: [(rd, rw, bs, rwmixread, threads)]
    "RndRead": [("RndRead", "randread", 8192, None, 25)],
    "RndWrite": [("RndWrite", "randwrite", 8192, None, 20)],
    "SeqRead": [("SeqRead-4", "read", 65536, None, 20)],
    "SeqWrite": [
        ("SeqWrite-26", "write", 65536, None, 26),
        ("SeqWrite-32", "write", 65536, None, 32),
        ("SeqWrite-40", "write", 65536, None, 40),
    ],
    "SeqMix": [("SeqMix-6", "rw", 65536, 50, 6), ("SeqMix-7", "rw", 65536, 50, 7)],
    "RndMix": [("RndMix", "randrw", 8192, 50, 25)],
}


@pytest.mark.parametrize("pattern", sorted(EXPECTED))
def test_seed_workloads_translate(seed: dict[str, Path], pattern: str):
    config = load_vdbench(seed[f"vnet1-{pattern}-workload"])
    translation = translate(config)
    assert [r.name for r in translation.runs] == [e[0] for e in EXPECTED[pattern]]
    for run, (_, rw, bs, mix, threads) in zip(translation.runs, EXPECTED[pattern], strict=True):
        assert run.mode == "max" and run.curve is None and run.iorate is None
        assert len(run.jobs) == 144
        assert len({j.name for j in run.jobs}) == 144
        for job in run.jobs:
            assert (job.rw, job.bs, job.rwmixread) == (rw, bs, mix)
            # o_direct: one stream per SD with 'threads' I/Os outstanding (see translate())
            assert (job.iodepth, job.numjobs, job.ioengine) == (threads, 1, "libaio")
            assert job.direct is True and job.time_based is True
            # rd=default,warmup=60,elapsed=600: elapsed includes the warm-up
            assert (job.ramp_time, job.runtime) == (60, 540)
            assert job.size == 693 * GIB and job.rate_iops is None
        job = run.jobs[6 * 9 + 5]
        assert job.name == f"{pattern}.sd-10-6" and job.filename == "/mnt/vdb6/file-10-6"
        assert run.hosts[job.name] == "vm10"
        assert run.source_file.endswith(f"vnet1-{pattern}-workload")
        # include, include, wd=, "* Run Defaults", rd=default, "* Run Definitions", rd=...
        assert run.source_line == 7 + [e[0] for e in EXPECTED[pattern]].index(run.name)


def test_seed_fill_is_a_sequential_write_to_the_end(seed: dict[str, Path]):
    translation = translate(load_vdbench(seed["vnet1-FillWrite-workload"]))
    (run,) = translation.runs
    assert run.name == "Initialize-LUNs-Full" and run.mode == "max"
    assert run.interval == 1 and run.for_values == {"threads": 1}
    job = run.jobs[0]
    assert (job.rw, job.bs, job.iodepth, job.numjobs) == ("write", 65536, 1, 1)
    assert job.time_based is False  # seekpct=eof: stop at the end of the LUN
    assert job.runtime == 259200 and job.ramp_time is None
    assert job.size == 693 * GIB


def test_seed_hosts_are_named_untranslated(seed: dict[str, Path]):
    translation = translate(load_vdbench(seed["vnet1-RndRead-workload"]))
    hosts = [u for u in translation.untranslated if u.item.startswith("hd=")]
    assert len(hosts) == 24
    assert hosts[0].item == "hd=vm1 (system=vdbench-vnet1-1, shell=ssh, user=root)"
    assert hosts[0].line == 2 and hosts[0].file.endswith("vnet1-hosts-nfs")
    assert "ssh" in hosts[0].reason
    jvms = [u for u in translation.untranslated if u.item == "jvms=1"]
    assert len(jvms) == 1 and jvms[0].line == 1
    assert len(translation.untranslated) == 25


def test_seed_threads_as_numjobs(seed: dict[str, Path]):
    run = translate(load_vdbench(seed["vnet1-RndRead-workload"]), threads_as="numjobs").runs[0]
    assert {(j.iodepth, j.numjobs, j.ioengine) for j in run.jobs} == {(1, 25, "psync")}


def test_lun_map_prefix_and_callable(seed: dict[str, Path]):
    path = seed["vnet1-SeqRead-workload"]
    config = load_vdbench(path, lun_map={"/mnt/vdb1": "/scratch/a", "/mnt": "/scratch/b"})
    targets = {sd.name: sd.target for sd in config.storage}
    assert targets["sd-3-1"] == "/scratch/a/file-3-1"  # the longest prefix wins
    assert targets["sd-3-2"] == "/scratch/b/vdb2/file-3-2"
    assert config.storage[0].lun == "/mnt/vdb1/file-1-1"  # the file's own lun is kept
    config = load_vdbench(path, lun_map=lambda lun: "/x/" + lun.rsplit("/", 1)[1])
    assert translate(config).targets()[:2] == ["/x/file-1-1", "/x/file-1-2"]


# ----------------------------------------------------------------------------- syntax


def test_comments_continuation_eof_and_quotes(tmp_path: Path):
    path = write(
        tmp_path / "p.vdb",
        "* star comment\n"
        "# hash comment\n"
        "/ slash comment\n"
        "\n"
        'sd=sd1,lun="/tmp/a b,c",size=1m   everything after a blank is a comment\n'
        "wd=w1,sd=sd1,\n"
        "   xfersize=8k,\n"
        "   rdpct=25\n"
        "rd=r1,wd=w1,iorate=max,elapsed=10\n"
        "eof\n"
        "this=line,is=never,read=at all\n",
    )
    config = load_vdbench(path)
    (sd,) = config.storage
    assert sd.lun == "/tmp/a b,c" and sd.size == 2**20 and sd.where.line == 5
    (wd,) = config.workloads
    assert (wd.xfersize, wd.rdpct, wd.where.line) == ((8192,), 25, 6)
    assert [p.where.line for p in wd.params] == [6, 7, 8]
    assert config.runs[0].elapsed == 10


def test_abbreviations_follow_vdbench_order(tmp_path: Path):
    path = write(
        tmp_path / "abbr.vdb",
        "sd=sd1,lun=/tmp/x,openflag=o_direct,thr=4,si=1g\n"
        "wd=w1,sd=sd1,xf=4k,rdp=70,se=seq\n"
        "rd=r1,wd=w1,io=max,el=2m,in=1,wa=30\n",
    )
    config = load_vdbench(path)
    sd, wd, rd = config.storage[0], config.workloads[0], config.runs[0]
    assert [p.name for p in sd.params] == ["lun", "openflags", "threads", "size"]
    assert (sd.openflags, sd.threads, sd.size) == (("o_direct",), 4, GIB)
    assert (wd.xfersize, wd.rdpct, wd.seekpct) == ((4096,), 70, 0.0)
    # m is minutes for elapsed/interval/warmup/pause (Vdb_scan.not_numeric)
    assert (rd.iorate, rd.elapsed, rd.interval, rd.warmup) == ("max", 120, 1, 30)
    (job,) = translate(config).runs[0].jobs
    assert (job.rw, job.rwmixread, job.iodepth, job.runtime, job.ramp_time) == ("rw", 70, 4, 90, 30)


def test_for_loops_expand_first_loop_outermost(tmp_path: Path):
    path = write(
        tmp_path / "for.vdb",
        "sd=sd1,lun=/tmp/x,openflags=o_direct\n"
        "wd=w1,sd=sd1\n"
        "rd=r1,wd=w1,iorate=max,elapsed=4,forthreads=(1-4,d),forxfersize=(4k,8k)\n",
    )
    runs = translate(load_vdbench(path)).runs
    assert [r.name for r in runs] == [
        "r1 (threads=1 xfersize=4k)",
        "r1 (threads=1 xfersize=8k)",
        "r1 (threads=2 xfersize=4k)",
        "r1 (threads=2 xfersize=8k)",
        "r1 (threads=4 xfersize=4k)",
        "r1 (threads=4 xfersize=8k)",
    ]
    assert [(r.jobs[0].iodepth, r.jobs[0].bs) for r in runs][-1] == (4, 8192)
    # wd defaults: 4k, 100% read, 100% random (WD_entry.java)
    assert runs[0].jobs[0].rw == "randread"


def test_iorate_list_is_the_innermost_loop_and_splits_per_job(tmp_path: Path):
    path = write(
        tmp_path / "rate.vdb",
        "sd=default,threads=2\n"
        "sd=a,lun=/tmp/a\n"
        "sd=b,lun=/tmp/b\n"
        "wd=w1,sd=(a,b),seekpct=random\n"
        "rd=r1,wd=w1,iorate=(100,1000),forrdpct=(0,100),elapsed=6,warmup=2,distribution=det\n",
    )
    runs = translate(load_vdbench(path)).runs
    assert [r.for_values for r in runs] == [
        {"rdpct": 0, "iorate": 100},
        {"rdpct": 0, "iorate": 1000},
        {"rdpct": 100, "iorate": 100},
        {"rdpct": 100, "iorate": 1000},
    ]
    assert [r.jobs[0].rw for r in runs] == ["randwrite", "randwrite", "randread", "randread"]
    # not direct: 2 psync clones per SD, 2 SDs -> 4 fio streams share the total rate
    assert {(j.numjobs, j.ioengine, j.direct) for j in runs[1].jobs} == {(2, "psync", False)}
    assert [j.rate_iops for j in runs[1].jobs] == [250, 250]
    assert runs[1].mode == "rate" and runs[1].iorate == 1000
    assert runs[1].jobs[0].rate_process == "linear"  # distribution=deterministic


def test_curve_and_defaults_apply_only_to_later_entries(tmp_path: Path):
    path = write(
        tmp_path / "curve.vdb",
        "sd=default,threads=4\n"
        "sd=a,lun=/tmp/a\n"
        "sd=default,threads=2,size=1.5g\n"
        "sd=b,lun=/tmp/b,size=1t\n"
        "wd=w1,sd=a\n"
        "wd=w2,sd=b,seekpct=30,rdpct=60\n"
        "rd=default,iorate=curve,elapsed=10\n"
        "rd=c1,wd=w1,curve=(10,50),stopcurve=5\n"
        "rd=c2,wd=w2\n",
    )
    config = load_vdbench(path)
    a, b = config.storage
    assert (a.threads, a.size, b.threads, b.size) == (4, None, 2, 2**40)
    c1, c2 = translate(config).runs
    assert (c1.mode, c1.curve, c1.stopcurve_ms) == ("curve", [10, 50], 5)
    assert c2.curve == [10, 50, 70, 80, 90, 100]  # For_loop.for_add_curve default
    assert c1.jobs[0].rate_iops is None and c1.jobs[0].rate_process == "poisson"
    job = c2.jobs[0]
    assert (job.rw, job.rwmixread, job.extra["percentage_random"]) == ("randrw", 60, "30")


def test_xfersize_distribution_and_maxdata(tmp_path: Path):
    path = write(
        tmp_path / "dist.vdb",
        "sd=a,lun=/tmp/a,size=100m\n"
        "wd=w1,sd=a,xfersize=(4k,25,64k,75),seekpct=0\n"
        "rd=r1,wd=w1,iorate=max,maxdata=2\n",
    )
    (job,) = translate(load_vdbench(path)).runs[0].jobs
    assert job.extra["bssplit"] == "4096/25:65536/75"
    assert job.extra["io_size"] == str(200 * 2**20)  # maxdata < 100: times the LUN size
    assert job.time_based is False and job.rw == "read"


def test_things_without_fio_equivalent_are_named(tmp_path: Path):
    path = write(
        tmp_path / "named.vdb",
        "messagescan=no\n"
        "sd=a,lun=/tmp/a,hitarea=1m\n"
        "wd=w1,sd=a,skew=40,rhpct=10\n"
        "wd=w2,sd=a\n"
        "fsd=fsd1,anchor=/tmp/fs,depth=1,width=1,files=2,size=1m\n"
        "fwd=fwd1,fsd=fsd1,operation=read\n"
        "rd=r1,wd=w*,iorate=max,pause=5,forcompratio=(1,2)\n"
        "rd=r2,fwd=fwd1,fwdrate=max\n",
    )
    translation = translate(load_vdbench(path))
    named = {(u.item.split(" (")[0], u.line) for u in translation.untranslated}
    for item, line in [
        ("messagescan=no", 1),
        ("sd=a,hitarea=1m", 2),
        ("wd=w1,skew=40", 3),
        ("wd=w1,rhpct=10", 3),
        ("fsd=fsd1", 5),
        ("fwd=fwd1", 6),
        ("rd=r1,pause=5", 7),
        ("rd=r1,forcompratio", 7),
        ("rd=r2,fwd=", 8),
    ]:
        assert any(n.startswith(item) and ln == line for n, ln in named), item
    shared = [u for u in translation.untranslated if "shared by" in u.item]
    assert len(shared) == 1 and "w1,w2" in shared[0].item
    assert [r.name for r in translation.runs] == ["r1 (compratio=1)", "r1 (compratio=2)"]


# ----------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    ("text", "line", "keyword"),
    [
        ("sd=a,lun=/tmp/a\nwd=w1,sd=a,xfersise=4k\nrd=r,wd=w1,iorate=max\n", 2, "xfersise"),
        ("sd=a,lun=/tmp/a,\n  bogus=1\nwd=w1,sd=a\nrd=r,wd=w1,iorate=max\n", 2, "bogus"),
        ("sd=a,lun=/tmp/a\nwd=w1,sd=a\nrd=r,wd=w1,iorate=max,elapsed=5,forfoo=1\n", 3, "forfoo"),
        ("nosuchgeneral=1\nsd=a,lun=/tmp/a\n", 1, "nosuchgeneral"),
        ("hd=h1,system=x,sshell=ssh\n", 1, "sshell"),
    ],
)
def test_unknown_keyword_names_file_line_and_keyword(
    tmp_path: Path, text: str, line: int, keyword: str
):
    path = write(tmp_path / "bad.vdb", text)
    with pytest.raises(ParseError) as err:
        load_vdbench(path)
    assert err.value.source == str(path) and err.value.line == line
    assert f"{path}:{line}:" in str(err.value)
    assert f"'{keyword}'" in str(err.value)


def test_unknown_keyword_inside_an_include_names_the_included_file(tmp_path: Path):
    write(tmp_path / "sub" / "luns", "sd=a,lun=/tmp/a\nsd=b,lun=/tmp/b,trheads=3\n")
    main = write(tmp_path / "main.vdb", "include=sub/luns\nwd=w,sd=a\nrd=r,wd=w,iorate=max\n")
    with pytest.raises(ParseError) as err:
        load_vdbench(main)
    assert err.value.source.endswith(os.path.join("sub", "luns")) and err.value.line == 2
    assert "'trheads'" in str(err.value)


def test_include_is_relative_to_the_including_file(tmp_path: Path, monkeypatch):
    write(tmp_path / "cfg" / "luns", "sd=a,lun=/tmp/a\n")
    main = write(tmp_path / "cfg" / "run.vdb", "include=luns\nwd=w,sd=a\nrd=r,wd=w,iorate=max\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    config = load_vdbench(main)
    assert [sd.name for sd in config.storage] == ["a"]
    assert config.storage[0].where.file.endswith(os.path.join("cfg", "luns"))


def test_missing_include_is_a_clear_error(tmp_path: Path):
    main = write(tmp_path / "run.vdb", "* header\ninclude=nowhere-luns\nrd=r,wd=w,iorate=max\n")
    with pytest.raises(ParseError) as err:
        load_vdbench(main)
    assert err.value.line == 2 and "include=nowhere-luns" in str(err.value)
    assert "not found" in str(err.value) and str(tmp_path / "nowhere-luns") in str(err.value)


def test_include_cycle_is_refused(tmp_path: Path):
    write(tmp_path / "a", "include=b\n")
    write(tmp_path / "b", "include=a\n")
    with pytest.raises(ParseError, match="includes itself"):
        load_vdbench(tmp_path / "a")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sd=a,lun=/tmp/a\nwd=w,sd=a\nrd=r,wd=w\n", "no iorate="),
        ("sd=a,lun=/tmp/a\nwd=w,sd=a\nrd=r,wd=nope,iorate=max\n", "could not find wd=nope"),
        ("sd=a,lun=/tmp/a\nwd=w,sd=zz\nrd=r,wd=w,iorate=max\n", "could not find sd=zz"),
    ],
)
def test_translation_errors_name_the_run(tmp_path: Path, text: str, message: str):
    path = write(tmp_path / "e.vdb", text)
    with pytest.raises(ParseError, match=message) as err:
        translate(load_vdbench(path))
    assert err.value.line == 3


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("sd=a,lun=/tmp/a,size=(1,2\n", "unmatched parenthesis"),
        ('sd=a,lun="/tmp/a\n', "unterminated double quote"),
        ("sd=a,lun=/tmp/a\nwd=w,sd=a,rdpct=abc\n", "expected a number"),
        ("sd=a,lun=/tmp/a\nwd=w,sd=a,xfersize=(4k,20,8k,20)\n", "add up to 100"),
        ("sd=a,lun=/tmp/a\nwd=w,sd=a,seekpct=sometimes\n", "seekpct is a percentage"),
        ("sd=default,lun=/tmp/a\n", "not allowed for sd=default"),
        ("sd=a,size=1m\nwd=w,sd=a\n", "has no lun="),
        ("sd=a,lun=/tmp/a\nwd=w,sd=a\n", "no run definition"),
        ("sd=a,lun=/tmp/a,x=1\n", "too short"),
    ],
)
def test_bad_values_are_errors(tmp_path: Path, text: str, message: str):
    with pytest.raises(ParseError, match=message):
        load_vdbench(write(tmp_path / "v.vdb", text))


def test_missing_file(tmp_path: Path):
    with pytest.raises(ParseError, match="not found"):
        load_vdbench(tmp_path / "absent.vdb")


# ----------------------------------------------------------------------------- real fio


def _o_direct_works(directory: Path) -> bool:
    path = directory / "odirect-probe"
    try:
        fd = os.open(path, os.O_CREAT | os.O_WRONLY | getattr(os, "O_DIRECT", 0), 0o600)
    except OSError:
        return False
    try:
        buf = mmap.mmap(-1, 4096)  # page-aligned, as O_DIRECT wants
        os.write(fd, buf)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)
        path.unlink()


@pytest.mark.slow
@pytest.mark.parametrize("pattern", ["RndRead", "SeqMix", "FillWrite"])
def test_translated_seed_jobs_run_with_fio(tmp_path: Path, pattern: str):
    fio = shutil.which("fio")
    if fio is None:
        pytest.skip("fio is not installed")
    if not _o_direct_works(tmp_path):
        pytest.skip("this file system refuses O_DIRECT (the seed's openflags=o_direct)")
    files = seed_files.write_seed_files(tmp_path / "vdb", vms=1)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    config = load_vdbench(
        files[f"vnet1-{pattern}-workload"],
        lun_map=lambda lun: str(scratch / lun.rsplit("/", 1)[1]),
    )
    translation = translate(config, elapsed=2, warmup=1, size=4 * 2**20)
    for run in translation.runs:
        assert all(j.filename and j.filename.startswith(str(scratch)) for j in run.jobs)
        jobs_path = tmp_path / f"{run.rd}.fio"
        jobs_path.write_text(job_file(run.jobs))
        proc = subprocess.run(
            [fio, "--output-format=json", str(jobs_path)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr
        data = json.loads(proc.stdout[proc.stdout.index("{") :])
        assert [j["jobname"] for j in data["jobs"]] == [j.name for j in run.jobs]
        for entry in data["jobs"]:
            assert entry["error"] == 0
            moved = entry["read"]["io_bytes"] + entry["write"]["io_bytes"]
            assert moved > 0
            if pattern == "FillWrite":  # seekpct=eof: the whole LUN, once
                assert entry["write"]["io_bytes"] == 4 * 2**20
    assert sorted(p.name for p in scratch.iterdir()) == [f"file-1-{v}" for v in range(1, 7)]


# ----------------------------------------------------------------------------- reports

MIB = 2**20


def report(name: str) -> str:
    return (FIXTURES / name).read_text()


def samples_of(result, metric: str, **params):
    return [
        s
        for s in result.samples
        if s.metric == metric and all(s.params.get(k) == v for k, v in params.items())
    ]


def test_summary_504_07_macos_columns_without_cpu():
    from assay.parsers import vdbench

    r = vdbench.parse(report("summary_50407_macos.html"), "summary.html")
    assert r.complete and not r.missing
    assert r.meta["column_set"] == "5.04.07"
    assert [(run["name"], run["intervals"]) for run in r.meta["runs"]] == [
        ("SD_format", 1),
        ("rd1", 5),
    ]
    # SD_format ran one interval: its avg_2-1 averages nothing and gives no sample
    assert len(r.warnings) == 1 and "avg_2-1" in r.warnings[0]
    assert {s.params["run"] for s in r.samples} == {"rd1"}
    (iops,) = samples_of(r, "storage.iops")
    assert iops.value == 105.3 and iops.unit == "op/s"
    assert iops.params == {
        "run": "rd1",
        "iorate_requested": 100.0,
        "elapsed_s": 5,
        "interval": "avg_2-5",
        "bytes_per_io": 1024.0,
        "read_pct": 51.07,
        "queue_depth": 0.0,
    }
    (bw,) = samples_of(r, "storage.bandwidth")
    assert bw.value == 0.10 * MIB == 104857.6 and bw.unit == "B/s"  # MB/sec is 1024**2
    (total,) = samples_of(r, "storage.latency", direction="total")
    assert total.value == 0.000026 and total.unit == "s" and total.better == "lower"
    assert (total.stats.n, total.stats.max, total.stats.stddev) == (4, 0.00012, 0.000022)
    (read,) = samples_of(r, "storage.latency", direction="read")
    assert (read.value, read.stats.max) == (0.000015, 0.00006)
    (write,) = samples_of(r, "storage.latency", direction="write")
    assert (write.value, write.stats.max) == (0.000037, 0.00012)


def test_totals_504_07_with_cpu_columns():
    from assay.parsers import vdbench

    r = vdbench.parse(report("totals_50407_oceanstor.html"), "totals.html")
    assert r.complete and r.meta["column_set"] == "5.04.07"
    (iops,) = samples_of(r, "storage.iops")
    assert iops.value == 97.8
    assert (iops.params["cpu_sys_user_pct"], iops.params["cpu_sys_pct"]) == (2.1, 0.4)
    (total,) = samples_of(r, "storage.latency", direction="total")
    assert (total.value, total.stats.max, total.stats.stddev) == (0.000008, 0.00007, 0.000006)


def test_console_504_06_glued_average_line():
    from assay.parsers import vdbench

    r = vdbench.parse(report("stdout_50406_aarch64.txt"), "stdout")
    assert r.complete and r.meta["version"] == "5.04.06" and r.meta["column_set"] == "5.04.06"
    (iops,) = samples_of(r, "storage.iops")
    assert iops.value == 2232.21
    assert iops.params["interval"] == "avg_31-150"
    assert iops.params["iorate_requested"] == "max" and iops.params["controlled"] is False
    assert (iops.params["elapsed_s"], iops.params["warmup_s"]) == (120, 30)
    (bw,) = samples_of(r, "storage.bandwidth")
    assert bw.value == 2340641832.96  # 2232.21 * 2**20
    (total,) = samples_of(r, "storage.latency", direction="total")
    assert (total.value, total.stats.max, total.stats.stddev) == (0.028504, 0.540899, 0.049877)
    assert total.stats.n == 120
    (read,) = samples_of(r, "storage.latency", direction="read")
    assert read.value == 0.023495 and read.stats.max is None  # 5.04.06: one 'resp max'
    assert r.meta["runs"][0]["intervals"] == 11


def test_console_excerpt_without_starting_line():
    from assay.parsers import vdbench

    r = vdbench.parse(report("stdout_50406_nvme_maxdata.txt"), "nvme")
    assert r.complete
    (iops,) = samples_of(r, "storage.iops")
    assert iops.value == 256348.49 and "run" not in iops.params
    assert r.meta["runs"] == [{"name": None, "line": 3, "intervals": 7}]


def test_guide_examples_old_layout_and_totals():
    from assay.parsers import vdbench

    r = vdbench.parse(report("guide_summary_example.txt"), "guide")
    (iops,) = samples_of(r, "storage.iops")
    assert iops.value == 996.0 and iops.params["for_loops"] == "xfersize=1k"
    assert samples_of(r, "storage.latency", direction="read") == []  # read pct 0
    t = vdbench.parse(report("guide_totals_example.txt"), "totals")
    assert t.complete
    assert [s.value for s in samples_of(t, "storage.iops")] == [996.0, 1000.0, 1000.0]
    assert [s.params["for_loops"] for s in samples_of(t, "storage.iops")] == [
        "xfersize=1k",
        "xfersize=2k",
        "xfersize=3k",
    ]
    assert [s.params["bytes_per_io"] for s in samples_of(t, "storage.bandwidth")] == [
        1024.0,
        2048.0,
        3072.0,
    ]


def test_vdbench_reports_are_detected_and_imported():
    from assay.parsers import detect_format, parse_text

    for name in (
        "summary_50407_macos.html",
        "totals_50407_oceanstor.html",
        "stdout_50406_aarch64.txt",
    ):
        assert detect_format(report(name)) == "vdbench"
    assert parse_text(report("totals_50407_oceanstor.html"), "vdbench").tool == "vdbench"


def test_truncated_report_keeps_complete_runs():
    from assay.parsers import vdbench

    text = report("summary_50407_macos.html")
    cut = text[: text.index("21:16:14.012")]  # rd1 stops after its third interval
    r = vdbench.parse(cut, "cut")
    assert not r.complete
    assert r.missing == ["avg_ line of run rd1 (started at line 32)"]
    assert r.samples == []
    half = text[: text.index("0.037     0.06")]  # in the middle of rd1's avg_ line
    r = vdbench.parse(half, "half")
    assert not r.complete and any("cut short" in m for m in r.missing)


def test_bad_vdbench_reports():
    from assay.parsers import vdbench

    with pytest.raises(ParseError, match="empty"):
        vdbench.parse("  \n", "e")
    fio_json = (Path(__file__).parents[1] / "fixtures" / "fio" / "write_1m.json").read_text()
    with pytest.raises(ParseError, match="no Vdbench interval table") as err:
        vdbench.parse(fio_json, "fio.json")
    assert "fio" in str(err.value)
    text = report("summary_50407_macos.html").replace("  51.96", "")  # rd1, interval 2
    with pytest.raises(ParseError, match="10 values for 11 columns") as err:
        vdbench.parse(text, "t")
    assert err.value.line == 38
    fsd = (
        "Mar 11, 2021 .Interval. .ReqstdOps... ...cpu%...  read ....read.....\n"
        "                          rate   resp total  sys   pct   rate   resp\n"
    )
    with pytest.raises(ParseError, match="file system"):
        vdbench.parse(fsd, "fsd")


def test_ranges_and_suffixes(tmp_path: Path):
    path = write(
        tmp_path / "ranges.vdb",
        "sd=default,size=64kb\n"
        "sd=a1,lun=/tmp/a1\n"
        "sd=a2,lun=/tmp/a2\n"
        "sd=a3,lun=/tmp/a3\n"
        "sd=a-4,lun=/tmp/a4\n"
        "wd=w1,sd=(a1-a3)\n"
        "wd=w2,sd=a-4\n"
        "rd=r1,wd=w1,iorate=max,elapsed=1h,forthreads=(10-30,10),forxfersize=(64k-16k,d)\n",
    )
    config = load_vdbench(path)
    assert {sd.size for sd in config.storage} == {65536}
    w1, w2 = config.workloads
    assert (w1.sd_names, w2.sd_names) == (("a1", "a2", "a3"), ("a-4",))
    (rd,) = config.runs
    assert rd.elapsed == 3600
    assert [(f.name, f.values) for f in rd.for_loops] == [
        ("threads", (10, 20, 30)),
        ("xfersize", (65536, 32768, 16384)),
    ]
    runs = translate(config).runs
    assert len(runs) == 9 and [j.filename for j in runs[0].jobs] == [
        "/tmp/a1",
        "/tmp/a2",
        "/tmp/a3",
    ]


def test_poisson_seek_and_distributions_are_named(tmp_path: Path):
    path = write(
        tmp_path / "poisson.vdb",
        "sd=a,lun=/tmp/a\n"
        "wd=w1,sd=a,seekpct=(poisson,5)\n"
        "rd=r1,wd=w1,iorate=500,distribution=uni\n"
        "rd=r2,wd=w1,iorate=500,distribution=(exp,variable)\n"
        "rd=r3,wd=w1,iorate=500,distribution=det\n",
    )
    config = load_vdbench(path)
    assert config.workloads[0].seekpct == 100.0  # poisson: random, the 5 is its midpoint
    assert [rd.distribution for rd in config.runs] == ["uniform", "exponential", "deterministic"]
    translation = translate(config)
    named = {u.item: u.line for u in translation.untranslated}
    assert named == {
        "wd=w1,seekpct=(poisson,5)": 2,
        "rd=r1,distribution=uni": 3,
        "rd=r2,distribution=(exp,variable)": 4,
    }
    assert [r.jobs[0].rate_process for r in translation.runs] == ["poisson", "poisson", "linear"]


def test_starved_idle_and_decimal_megabyte_averages():
    from assay.parsers import vdbench

    text = report("totals_50407_oceanstor.html")
    # a starved run: MB/sec printed 0.00 while I/O happened
    starved = text.replace("97.8     0.10    1024", "0.4     0.00    1024")
    r = vdbench.parse(starved, "starved")
    (bw,) = samples_of(r, "storage.bandwidth")
    assert bw.value == 0.4 * 1024 and any("printed as 0.00" in w for w in r.warnings)
    # no I/O at all in the averaged intervals: nothing was measured, nothing kept
    idle = text.replace("97.8     0.10    1024", "0.0     0.00    1024")
    r = vdbench.parse(idle, "idle")
    assert r.samples == [] and any("no I/O measured" in w for w in r.warnings)
    # MB/sec in 1000**2 (Vdbench's decimal option)
    decimal = text.replace("1024**2", "1000**2")
    r = vdbench.parse(decimal, "decimal")
    (bw,) = samples_of(r, "storage.bandwidth")
    assert bw.value == 0.10 * 1e6


def test_nan_cpu_and_for_loops_params():
    from assay.parsers import vdbench

    real = Path(__file__).parents[1] / "fixtures" / "real" / "vdbench"
    r = vdbench.parse((real / "console_50407_aarch64_sdformat_rd1.txt").read_text(), "c")
    assert [run["name"] for run in r.meta["runs"]] == ["SD_format", "rd1"]  # NaN cpu% read
    t = vdbench.parse(report("guide_totals_example.txt"), "totals")
    assert [s.params["xfersize"] for s in samples_of(t, "storage.iops")] == [1024, 2048, 3072]


def test_flatfile_is_recognised_and_refused_with_the_files_to_import():
    from assay.parsers import parse_text

    # the fixed first lines Vdbench writes into flatfile.html (Flat.java, print_col_headers)
    text = (
        "*\n* 'flatfile.html' contains Vdbench generated information in a column by column "
        "ASCII format. \n*\n"
    )
    for fmt in ("vdbench", "auto"):
        with pytest.raises(ParseError, match=r"flatfile\.html .* summary\.html or totals\.html"):
            parse_text(text, fmt, source="flatfile.html")


def test_a_for_loops_value_past_int_limits_stays_text():
    from assay.parsers import vdbench

    real = Path(__file__).parents[1] / "fixtures" / "real" / "vdbench"
    text = (real / "curve_50407_stopcurve.txt").read_text()
    huge = "1" * 5000
    r = vdbench.parse(text.replace("For loops: threads=4", "For loops: threads=" + huge), "x")
    assert {s.params["threads"] for s in r.samples} == {huge}


def test_includes_are_bounded_in_all(tmp_path: Path):
    """A file that includes a file 2,000 times, which includes a file 1,000 times: two million
    reads before; the whole text, includes inserted, is held to one parameter file's bound,
    and the reads to a thousand."""
    import time

    write(tmp_path / "c.vdb", "* nothing\n")
    write(tmp_path / "b.vdb", "include=c.vdb\n" * 1000)
    top = write(tmp_path / "a.vdb", "include=b.vdb\n" * 2000 + "sd=sd1,lun=/tmp/x\n")
    started = time.perf_counter()
    with pytest.raises(ParseError, match="more than 1000 reads of parameter files"):
        load_vdbench(top)
    assert time.perf_counter() - started < 10
    big = "* " + "x" * (3 * 2**20) + "\n"  # 3 MiB each: two are past the 4 MiB of one file
    write(tmp_path / "big.vdb", big)
    top = write(tmp_path / "t.vdb", "include=big.vdb\ninclude=big.vdb\n")
    with pytest.raises(ParseError, match=r"with its includes inserted is larger than 4 MiB"):
        load_vdbench(top)


@pytest.mark.parametrize(
    ("line", "words"),
    [
        ("forthreads=(1-1000000,1)", "more than 200000 values in one list"),
        ("forthreads=(1-1e300,1)", "more than 200000 values in one list"),
        ("forthreads=(1-1000,1),forxfersize=(1k-1000k,1k)", "make 1,000,000 runs, more than"),
        ("forthreads=(64-0,d)", "halves down to 0"),  # halving towards 0 never ended
        ("forthreads=(64-1,d)", None),
    ],
)
def test_for_loops_are_counted_before_they_are_expanded(tmp_path: Path, line: str, words):
    import time

    path = write(tmp_path / "for.vdb", "sd=sd1,lun=/tmp/x\nwd=w1,sd=sd1\n"
                 f"rd=r1,wd=w1,iorate=max,elapsed=4,{line}\n")  # fmt: skip
    started = time.perf_counter()
    if words is None:
        assert len(translate(load_vdbench(path)).runs) == 7  # 64 32 16 8 4 2 1 (as before)
    else:
        with pytest.raises(ParseError, match=words):
            translate(load_vdbench(path))
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "1e999", "infinity", "1_0", "\u0664k"])
def test_a_number_vdbench_cannot_write_is_refused(tmp_path: Path, value: str):
    """``xfersize=inf`` was int(inf): an OverflowError traceback."""
    path = write(tmp_path / "x.vdb", f"sd=sd1,lun=/tmp/x\nwd=w1,sd=sd1,xfersize={value}\n"
                 "rd=r1,wd=w1,iorate=max,elapsed=4\n")  # fmt: skip
    with pytest.raises(ParseError, match="expected a number"):
        translate(load_vdbench(path))


def test_a_name_range_is_counted_before_it_is_expanded(tmp_path: Path):
    path = write(tmp_path / "n.vdb", "sd=sd1,lun=/tmp/x\nwd=w1,sd=(sd1-sd99999999)\n"
                 "rd=r1,wd=w1,iorate=max,elapsed=4\n")  # fmt: skip
    with pytest.raises(ParseError, match="more than 200000 names in one list"):
        load_vdbench(path)
    path.write_text(f"sd=sd1,lun=/tmp/x\nwd=w1,sd=(sd1-sd{'9' * 5000})\n")
    with pytest.raises(ParseError, match="must count up"):
        load_vdbench(path)


def test_the_vdbench_bound_is_the_plans():
    from assay.plan.bounds import MAX_JOBS
    from assay.vdbench.syntax import MAX_VALUES

    assert MAX_VALUES == MAX_JOBS
