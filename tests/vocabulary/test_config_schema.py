"""config.toml is checked against one schema when it is read (issue 21): a wrong type, a value
out of range, an unknown section or key, a file that is not UTF-8 text, is a ConfigError
naming it (exit 2 from the CLI, no traceback), never a traceback nor a value misused."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from assay.analysis.statistics.outliers import outlier_rule
from assay.errors import ConfigError
from assay.launch.slurm.options import options_from_config
from assay.run.configfile import load_config
from assay.system.peak import merged_overrides
from conftest import run_cli

GOOD = """\
[slurm]
partition = "batch"
account = "proj42"
time = 00:30:00
nodes = 2
max_wait = 3600
sbatch_args = ["--exclusive"]
heartbeat_timeout = 120
fio_network = "10.0.0.0/16"
fio_port = 8765

[slurm.mpi.mpich]
launcher = "srun"
srun_mpi = "pmi2"
args = []
env = { UCX_TLS = "tcp,self" }

[[mpi]]
name = "intel"
mpicc = "/opt/intel/bin/mpicc"
launcher = "/opt/intel/bin/mpirun"
launcher_flags = ["-genv", "I_MPI_FABRICS", "shm"]

[peak]
cores = 120
clock_ghz = 2.45
clock_kind = "all-core"

[outliers]
threshold = 3.5
link_factor = 1.25
"""


def _load(tmp_path: Path, text: str | bytes) -> dict:
    path = tmp_path / "config.toml"
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return load_config(path)


def test_a_good_config_keeps_its_meaning_where_it_is_used(tmp_path: Path) -> None:
    config = _load(tmp_path, GOOD)
    opts = options_from_config(config)
    assert (opts.partition, opts.account, opts.time, opts.nodes) == ("batch", "proj42",
                                                                     "00:30:00", 2)  # fmt: skip
    assert opts.sbatch_args == ["--exclusive"] and opts.max_wait == 3600.0
    assert opts.mpi["mpich"].env == (("UCX_TLS", "tcp,self"),)
    assert config["mpi"][0]["launcher_flags"] == ["-genv", "I_MPI_FABRICS", "shm"]
    assert merged_overrides(config, None)["clock_ghz"] == 2.45
    assert outlier_rule(config).link_factor == 1.25
    assert options_from_config(_load(tmp_path, "[slurm]\ntime = 90\n")).time == "90"


BAD = [
    # (config text, words the message holds)
    ('mpi = "abc"', "mpi = 'abc': expected a list"),
    ('[[mpi]]\nname = "x"\nmpicc = "cc"', "[[mpi]] entry 1: the key 'launcher' is missing"),
    ('[[mpi]]\nname = "x"\nmpicc = "cc"\nlauncher = "l"\nlauncher_flags = "-v"',
     "launcher_flags = '-v': expected a list"),
    ('[slurm]\nnodes = "abc"', "[slurm] nodes = 'abc': expected a whole number"),
    ("[slurm]\nnodes = inf", "[slurm] nodes = inf: expected a whole number"),
    ("[slurm]\nnodes = nan", "[slurm] nodes = nan"),
    ("[slurm]\nnodes = 2.5", "[slurm] nodes = 2.5"),
    ("[slurm]\nnodes = 0", "[slurm] nodes = 0: expected a value of at least 1"),
    ("[slurm]\nsbatch_args = [1]", "[slurm] sbatch_args[0] = 1: expected a string"),
    ('[slurm]\nsbatch_args = "--exclusive"', "sbatch_args = '--exclusive': expected a list"),
    ('[slurm]\npartition = ["a", "b"]', "partition = ['a', 'b']: expected a string"),
    ("[slurm]\ntime = true", "[slurm] time = True"),
    ('[slurm]\ntime = "half an hour"', "expected a Slurm time limit"),
    ("[slurm]\nheartbeat_timeout = -1", "heartbeat_timeout = -1"),
    ("[slurm]\nheartbeat_timeout = nan", "heartbeat_timeout = nan: expected a finite number"),
    ("[slurm]\nmax_wait = 0", "max_wait = 0: expected a positive number"),
    ("[slurm]\nfio_port = 70000", "fio_port = 70000: expected a value of at most 65535"),
    ('[slurm]\nfio_network = "ten"', "expected a network"),
    ("[slurm.mpi.mpich]\nlauncher = 'ssh'", "[slurm.mpi.mpich] launcher = 'ssh'"),
    ("[slurm.mpi.mpich]\nargs = [1]", "[slurm.mpi.mpich] args[0] = 1: expected a string"),
    ("[slurm.mpi.mpich]\nenv = { A = 1 }", "[slurm.mpi.mpich.env] A = 1: expected a string"),
    ("[slurm.mpi.mpich]\nenvs = {}", "unknown key 'envs' in [slurm.mpi.mpich]"),
    ("[slurm]\npartitoin = 'a'", "unknown key 'partitoin' in [slurm]"),
    ("[outlier]\nthreshold = 3", "unknown section [outlier]"),
    ("[outliers]\nlink_factor = 0.5", "[outliers] link_factor = 0.5: expected a factor of 1"),
    ('[peak]\ncores = "8"', "[peak] cores = '8': expected a whole number"),
    ("[peak]\nclock = 'turbo'", "[peak] clock = 'turbo'"),
    ("slurm = 3", "slurm = 3: expected a table"),
    ("[check.fail_below]\ndefault = 2", "[check.fail_below] default = 2: expected a ratio"),
    ('[check.warn_below]\n"memory.triad" = "high"', "warn_below] memory.triad = 'high'"),
    ("[check]\nbaselin = 'a'", "unknown key 'baselin' in [check]"),
    ("[check]\nretest = 'yes'", "[check] retest = 'yes': expected true or false"),
    # issue 28: finite is not enough; a range a person could mean
    ("[peak]\nclock_ghz = 1e300", "[peak] clock_ghz = 1e+300: expected a value of at most 100"),
    ("[peak]\nclock_ghz = 1e-300", "clock_ghz = 1e-300: expected a value of at least 0.01"),
    ("[peak]\ncores = 100000000", "cores = 100000000: expected a value of at most 65536"),
    ("[peak]\nflops_per_cycle_dp = 1e200", "flops_per_cycle_dp = 1e+200: expected a value of"),
    ("[slurm]\npoll_s = 1e20", "[slurm] poll_s = 1e+20: expected a value of at most 3600"),
    ("[slurm]\npoll_s = 1e-9", "[slurm] poll_s = 1e-09: expected a value of at least 0.1"),
    ("[slurm]\nmax_wait = 1e20", "[slurm] max_wait = 1e+20: expected a value of at most"),
    ("[slurm]\nheartbeat_timeout = 1e20", "heartbeat_timeout = 1e+20: expected a value of"),
    ("[slurm]\npairs_at_once = 2", "pairs_at_once is no longer a key of [slurm]: it is the"),
    ("[outliers]\nthreshold = 1e300", "[outliers] threshold = 1e+300: expected a value of"),
    ("[outliers]\nnode_factor = 1e300", "[outliers] node_factor = 1e+300: expected a value"),
]  # fmt: skip


@pytest.mark.parametrize(("text", "words"), BAD)
def test_every_bad_value_is_refused_by_name(tmp_path: Path, text: str, words: str) -> None:
    with pytest.raises(ConfigError, match=re.escape(words)) as err:
        _load(tmp_path, text + "\n")
    assert str(tmp_path / "config.toml") in str(err.value)


def test_a_misspelt_section_or_key_suggests_the_right_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, "[outlier]\nthreshold = 3\n")
    assert "did you mean 'outliers'" in str(err.value)
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, "[slurm]\nsbatch_arg = ['--exclusive']\n")
    assert "did you mean 'sbatch_args'" in str(err.value)


def test_every_problem_of_a_file_is_named_at_once(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, '[slurm]\nnodes = "x"\ntime = true\n[peak]\ncores = 0\n')
    lines = str(err.value).splitlines()
    assert len(lines) == 3 and "nodes" in lines[0] and "time" in lines[1] and "cores" in lines[2]


def test_a_file_that_is_not_a_text_config_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not UTF-8"):
        _load(tmp_path, b"[slurm]\npartition = '\xff'\n")
    folder = tmp_path / "dir.toml"
    folder.mkdir()
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(folder)
    zero = tmp_path / "zero.toml"
    zero.symlink_to("/dev/zero")
    with pytest.raises(ConfigError, match="larger than 1048576 bytes"):
        load_config(zero)


@pytest.mark.parametrize(
    ("args", "text", "words"),
    [
        (["report"], "[outlier]\nthreshold = 3\n", "unknown section [outlier]"),
        (["run", "quick", "--on", "slurm", "--dry-run"], '[slurm]\nnodes = "abc"\n',
         "[slurm] nodes = 'abc'"),
        (["run", "quick", "--on", "slurm", "--dry-run"], "[slurm]\nsbatch_args = [1]\n",
         "sbatch_args[0] = 1"),
        (["doctor"], 'mpi = "abc"\n', "mpi = 'abc'"),
        (["report"], b"\xff\xfe[slurm]\n", "not UTF-8"),
    ],
)  # fmt: skip
def test_the_cli_says_what_is_wrong_with_exit_2(tmp_path, args, text, words) -> None:
    config = tmp_path / "config.toml"
    if isinstance(text, bytes):
        config.write_bytes(text)
    else:
        config.write_text(text)
    proc = run_cli(*args, home=tmp_path / "home", env={"ASSAY_CONFIG": str(config)}, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert words in " ".join(proc.stderr.split()), proc.stderr
    assert "Traceback" not in proc.stderr


def test_the_schema_has_every_key_its_readers_take() -> None:
    """One schema, kept with the code it describes: a field added to SlurmOptions (``per_node``
    came with all-pairs) is either a [slurm] key of the schema or a command-line-only option,
    and every option given on the command line is checked by the schema too (a control
    character in ``--partition`` would reach the batch script)."""
    from dataclasses import fields

    from assay.analysis.check.checklimits import CHECK_KEYS, CheckTable
    from assay.analysis.statistics.outliers import RULE_KEYS, OutliersTable
    from assay.launch.slurm.options import NOT_CONFIG_KEYS, OPTION_NAMES, SlurmOptions, SlurmTable
    from assay.launch.slurm.scheduler import OWN_OPTIONS
    from assay.system.peak import OVERRIDE_KEYS, PeakTable

    slurm = {f.name for f in fields(SlurmOptions)}
    assert slurm - NOT_CONFIG_KEYS == set(SlurmTable.model_fields)
    assert slurm >= NOT_CONFIG_KEYS
    assert OWN_OPTIONS <= set(OPTION_NAMES) <= set(SlurmTable.model_fields)
    assert {"nodes", "intra_node"} <= set(OPTION_NAMES)
    assert set(PeakTable.model_fields) == set(OVERRIDE_KEYS)
    assert set(OutliersTable.model_fields) == set(RULE_KEYS)
    assert set(CheckTable.model_fields) == set(CHECK_KEYS)


def test_a_command_line_only_option_is_not_a_config_key(tmp_path: Path) -> None:
    for key in ("per_node", "all_pairs", "detach"):
        with pytest.raises(ConfigError, match=f"unknown key '{key}' in \\[slurm\\]"):
            _load(tmp_path, f"[slurm]\n{key} = true\n")
