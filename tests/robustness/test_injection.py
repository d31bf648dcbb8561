"""User text that reaches a shell script, a command line or fio never runs or writes as
something else (issue 21, the three serious defects).

* A Slurm option with a newline: refused where it enters (CLI option or config), and the
  batch script, run by the real bash, holds user text only as quoted words.
* A fio client host that looks like an ssh option: refused, and ssh's options end with ``--``.
* fio file names: fio splits them on ``:`` (``\\:`` escapes one), cuts a value at ``;`` or
  ``#`` and expands ``${VAR}``; every path fio will open is the path the safety check looked
  at. Checked with the real fio: a user's existing file survives.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from assay.errors import ConfigError
from assay.launch.slurm.options import MpiLaunch, SlurmOptions, options_from_config
from assay.launch.slurm.script import batch_script, sbatch_argv

# ------------------------------------------------------------------------------ Slurm


def _evil(pwned: Path) -> str:
    return f"debug\ntouch {pwned} #"


def test_a_control_character_in_a_slurm_option_is_refused_by_name(tmp_path: Path) -> None:
    evil = _evil(tmp_path / "pwned")
    given = [
        ({"partition": evil}, "--partition"),
        ({"account": evil}, "--account"),
        ({"qos": "a\rb"}, "--qos"),
        ({"constraint": "x\x00"}, "--constraint"),
        ({"time": "1:00\n"}, "--time"),
        ({"sbatch_args": ["--exclusive", f"--comment={evil}"]}, "--sbatch-arg"),
    ]
    for options, name in given:
        with pytest.raises(ConfigError, match="control character") as err:
            options_from_config({}, **options)
        assert name in str(err.value)
    configured = [
        {"slurm": {"account": evil}},
        {"slurm": {"sbatch_args": [f"--comment={evil}"]}},
        {"slurm": {"fio_network": "10.0.0.0/8\nx"}},
        {"slurm": {"mpi": {"mpich": {"args": [f"-x\n{evil}"]}}}},
        {"slurm": {"mpi": {"mpich": {"env": {"UCX_TLS": f"tcp\n{evil}"}}}}},
        {"slurm": {"mpi": {"mpich": {"env": {"A\nB": "1"}}}}},
    ]
    for config in configured:
        with pytest.raises(ConfigError, match=r"\[slurm") as err:
            options_from_config(config)
        assert "control character" in str(err.value) or "environment variable" in str(err.value)
    assert not (tmp_path / "pwned").exists()


def test_the_batch_script_run_by_bash_never_runs_an_option_as_a_command(tmp_path: Path) -> None:
    """Even given options nobody checked, the script holds them as quoted words only."""
    pwned = tmp_path / "pwned"
    evil = _evil(pwned)
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    opts = SlurmOptions(
        nodes=2, partition=evil, account="a'b", sbatch_args=[f"--comment={evil}", "$(id)"],
        mpi={"x": MpiLaunch("srun", args=(evil,))},
    )  # fmt: skip
    sbatch = sbatch_argv(opts, run_dir, "R1")
    text = batch_script(run_dir=run_dir, python="/bin/true", sbatch=sbatch,
                        env={"PATH": "/usr/bin:/bin"}, heartbeat_timeout=30)  # fmt: skip
    script = tmp_path / "batch.sh"
    script.write_text(text)
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert not pwned.exists(), text
    # what it was submitted with is kept, whole, in one quoted word
    shown = subprocess.run(
        ["bash", "-c", f"source <(sed '/^exec /d' {script}); printf %s \"$ASSAY_SBATCH\""],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    assert shown.split(" ")[0] == "sbatch" and f"--partition={evil}" in shown


def test_a_newline_in_a_slurm_option_is_refused_by_the_cli(tmp_path: Path) -> None:
    from conftest import run_cli

    pwned = tmp_path / "pwned"
    proc = run_cli(
        "run", "quick", "--on", "slurm", "--dry-run", "--partition", _evil(pwned),
        home=tmp_path / "home", env={"ASSAY_CONFIG": str(tmp_path / "none.toml")}, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "--partition" in proc.stderr and "control character" in proc.stderr
    assert "Traceback" not in proc.stderr
    config = tmp_path / "config.toml"
    config.write_text(f'[slurm]\nsbatch_args = ["--comment=x\\ntouch {pwned}"]\n')
    proc = run_cli(
        "run", "quick", "--on", "slurm", "--dry-run",
        home=tmp_path / "home", env={"ASSAY_CONFIG": str(config)}, timeout=60,
    )  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "sbatch_args" in proc.stderr and "control character" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not pwned.exists()


# ------------------------------------------------------------------------------ ssh hosts

SSH_OPTION_HOSTS = ["-oProxyCommand=touch${IFS}pwned", "-F/tmp/x", "-lroot"]


def test_a_host_name_must_be_a_host_name_or_an_address() -> None:
    from assay.fio.hosts import ClientError, parse_host

    good = {"node7": "node7", "n-01.cluster.example": "n-01.cluster.example",
            "10.1.2.3,9000": "10.1.2.3", "ip6:::1,4444": "::1", "fe80::1%eth0": "fe80::1%eth0",
            "localhost": "localhost", "NODE7.": "NODE7."}  # fmt: skip
    for text, address in good.items():
        assert parse_host(text).address == address
    bad = [*SSH_OPTION_HOSTS, "node 1", "a..b", "node-", "-node", "x" * 64, "n\x00de",
           "user@node7", "node7;id", "$(id)", "10.1.2", "::g", "[::1]", "ip:"]  # fmt: skip
    for text in bad:
        with pytest.raises(ClientError, match=r"host name|ADDR"):
            parse_host(text)


def test_ssh_options_end_before_the_host_so_a_host_is_never_an_option(tmp_path: Path) -> None:
    """Run the real ssh with what assay would run for a host nobody checked: the host stays
    a destination (ssh refuses it), its ProxyCommand never runs."""
    from assay.drivers.fio import clients
    from assay.fio.hosts import Host

    if not shutil.which("ssh"):
        pytest.fail("ssh missing: run scripts/install-system-deps (openssh-client)")
    pwned = tmp_path / "pwned"
    host = Host(f"-oProxyCommand=touch {pwned}")
    for argv in (clients.server_argv(host, "fio", "/tmp/x.pid"), clients.stop_argv(host, "/x")):
        assert argv[argv.index(host.address) - 1] == "--"
        subprocess.run(argv, cwd=tmp_path, capture_output=True, timeout=20, check=False)
    assert not pwned.exists()


def test_a_fio_host_option_is_refused_when_the_suite_is_planned(tmp_path: Path) -> None:
    from conftest import run_cli

    suite = tmp_path / "s.toml"
    suite.write_text(
        'name = "s"\n[[bench]]\nprobe = "fio"\n'
        f"params = {{ hosts = {json.dumps(SSH_OPTION_HOSTS[:1])}, target = '{tmp_path}/t' }}\n"
    )
    proc = run_cli("run", str(suite), "--dry-run", home=tmp_path / "home", timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "host name" in proc.stderr and "Traceback" not in proc.stderr


# ------------------------------------------------------------------------------ fio file names

needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")
KEEP = b"\1" * 65536  # a user's file


def _users_file(path: Path) -> Path:
    path.write_bytes(KEEP)
    return path


def _fio_writes(tmp_path: Path, value: str) -> list[str]:
    """The files the real fio creates for ``filename=value`` (cwd ``tmp_path/w``)."""
    work = tmp_path / "w"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    (work / "j.fio").write_text(f"[j]\nrw=write\nbs=4k\nsize=4k\nfilename={value}\n")
    subprocess.run(["fio", "--output=out.json", "j.fio"], cwd=work, capture_output=True,
                   timeout=60, check=False)  # fmt: skip
    made = [p for p in work.rglob("*") if p.is_file() and p.name not in ("j.fio", "out.json")]
    return sorted(str(p.relative_to(work)) for p in made)


@needs_fio
def test_fio_names_splits_a_value_as_the_real_fio_does(tmp_path: Path) -> None:
    from assay.fio.job import fio_names, fio_path

    for value in ["a:b", "c\\:d", "e\\\\:f", "::g:", "h\\x:i", fio_path("j:k:l")]:
        assert _fio_writes(tmp_path, value) == sorted(fio_names(value)), value
    assert fio_names(fio_path("/x/a:b\\:c")) == ["/x/a:b\\:c"]


def test_what_fio_would_read_otherwise_is_refused() -> None:
    from assay.fio.job import FioJob, job_file

    for options, words in [
        ({"filename": "/tmp/a;b"}, "comment"),
        ({"filename": "/tmp/a #b"}, "comment"),
        ({"directory": "/tmp/a "}, "blanks"),
        ({"filename": "/tmp/${HOME}"}, "replaces"),
        ({"filename": "/tmp/$ncpus"}, "replaces"),
        ({"extra": {"description": "x;y"}}, "comment"),
    ]:
        with pytest.raises(ValueError, match=words):
            job_file([FioJob(name="j", rw="write", bs=4096, **options)])


def _driver(tmp_path: Path, monkeypatch, **spec) -> int:
    from assay.drivers.fio.__main__ import main as driver_main

    monkeypatch.chdir(tmp_path)
    base = {"mode": "workloads", "workloads": [], "size": 2**20, "runtime": 1,
            "ramp_time": 0, "numjobs": 2, "iodepth": 1}  # fmt: skip
    return driver_main(["--spec", json.dumps({**base, **spec})])


@needs_fio
@pytest.mark.slow
def test_a_users_file_behind_a_colon_of_a_job_filename_is_refused(tmp_path, monkeypatch, capsys):
    """fio writes every name of ``A:B``: B, a user's file, is checked and refused."""
    precious = _users_file(tmp_path / "b")
    job = {"name": "j", "rw": "write", "bs": 4096, "filename": f"{tmp_path}/a:{precious}"}
    assert _driver(tmp_path, monkeypatch, jobs=[job]) == 2
    assert precious.read_bytes() == KEEP
    err = capsys.readouterr().err
    assert f"{precious} is an existing file assay did not create" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b"]  # nothing written


@needs_fio
@pytest.mark.slow
def test_a_target_with_a_colon_is_one_directory_to_fio(tmp_path, monkeypatch):
    """``target=t:.`` used to make fio write half the files into ``t`` (a user's directory)
    and half into the current one, and leave them there."""
    users = tmp_path / "t"
    users.mkdir()
    assert _driver(tmp_path, monkeypatch, workloads=["seqwrite-64k"], target="t:.") == 0
    assert not list(users.iterdir())
    assert not list(tmp_path.rglob("assay-fio*"))  # "t:." made, used, removed


@needs_fio
@pytest.mark.slow
def test_a_vdbench_lun_with_a_colon_is_one_file(tmp_path, monkeypatch):
    """``lun=DIR/a:b`` is one file to Vdbench; fio would have written ``a`` and ``b`` (here a
    user's file in the current directory)."""
    from assay.model import System
    from assay.probes import PlanContext, get_probe
    from assay.probes.fio import FioParams
    from assay.vdbench.suite import vdbench_suite

    precious = _users_file(tmp_path / "b")
    parm = tmp_path / "lun.vdb"
    parm.write_text(
        f"sd=sd1,lun={tmp_path}/a:b,size=1m,threads=1\n"
        "wd=w1,sd=sd1,xfersize=4k,rdpct=0,seekpct=100\n"
        "rd=r1,wd=w1,iorate=max,elapsed=1,interval=1\n"
    )
    spec, _ = vdbench_suite(parm)
    (bench,) = spec.bench
    ctx = PlanContext(system=System())
    (draft,) = get_probe("fio").drafts(FioParams(**bench.params), ctx, mpis=[], ranks=None)
    from assay.drivers.fio.__main__ import main as driver_main

    monkeypatch.chdir(tmp_path)
    assert driver_main(draft.argv[3:]) == 0
    assert precious.read_bytes() == KEEP
    assert not (tmp_path / "a").exists() and not (tmp_path / "a:b").exists()  # made, removed


# ------------------------------------------------------------------------------ issue 28


@pytest.mark.parametrize(
    "extra",
    [
        {"write_bw_log": "LOG"},
        {"write_lat_log": "LOG"},
        {"write_iolog": "LOG"},
        {"write_hist_log": "LOG"},
        {"exec_prerun": "touch LOG"},
        {"exec_postrun": "touch LOG"},
    ],
)
def test_a_fio_option_naming_a_path_or_a_command_is_refused_in_extra(
    tmp_path, monkeypatch, capsys, extra
):
    """issue 28: fio writes ``write_bw_log=P`` to ``P_bw.1.log`` and runs ``exec_prerun``,
    where the safety rules never looked; refused before fio starts."""
    victim = tmp_path / "elsewhere"
    victim.mkdir()
    extra = {k: v.replace("LOG", str(victim / "made")) for k, v in extra.items()}
    job = {"name": "j", "rw": "write", "bs": 4096, "extra": extra}
    assert _driver(tmp_path, monkeypatch, jobs=[job]) == 2
    assert list(victim.iterdir()) == []
    assert "program it runs" in capsys.readouterr().err


def test_a_job_file_never_holds_a_program_or_an_unchecked_path() -> None:
    from assay.fio.job import FioJob, job_file

    for options in [
        {"extra": {"write_bw_log": "/etc/x"}},
        {"extra": {"exec_prerun": "id"}},
        {"extra": {"replay_redirect": "/dev/sda"}},
        {"ioengine": "exec"},
        {"ioengine": "external:/tmp/evil.so"},
    ]:
        with pytest.raises(ValueError, match="refused"):
            job_file([FioJob(name="j", rw="write", bs=4096, **options)])


def test_an_ipv6_scope_is_an_interface_name() -> None:
    """issue 28: ``ipaddress`` takes any scope (``fe80::1%<anything>``); only an interface
    name or number reaches fio and ssh."""
    from assay.fio.hosts import ClientError, parse_host

    for text in ["fe80::1%eth0", "fe80::1%enp1s0f0.100", "fe80::1%2", "fe80::1%ib0"]:
        assert parse_host(text).address == text
    for text in ["fe80::1%$(touch${IFS}x)", "fe80::1%;id", "fe80::1%`id`", "fe80::1%a'b",
                 "fe80::1%", "fe80::1%" + "e" * 16, "fe80::1%a|b", "fe80::1%..",
                 "fe80::1%-x"]:  # fmt: skip
        with pytest.raises(ClientError):
            parse_host(text)


def test_the_remote_command_reaches_the_remote_shell_as_one_quoted_line(tmp_path) -> None:
    """issue 28: ssh joins the words after the host with blanks for the remote shell; the
    start command is one word, quoted, so the shell reads back exactly its argv."""
    import shlex

    from assay.drivers.fio import clients
    from assay.fio.hosts import Host

    host = Host("node7")
    fio = "/opt/my fio;touch pwned/fio"
    argv = clients.server_argv(host, fio, "/tmp/x.pid")
    remote = argv[argv.index("node7") + 1 :]
    assert len(remote) == 1
    assert shlex.split(" ".join(remote)) == [
        fio,
        f"--server={host.connect}",
        "--daemonize=/tmp/x.pid",
    ]
    stop = clients.stop_argv(host, "/tmp/x.pid")
    assert len(stop[stop.index("node7") + 1 :]) == 1
