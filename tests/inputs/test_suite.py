from pathlib import Path

import pytest

from assay.errors import SuiteError
from assay.model import MpiInfo, System
from assay.plan import Overrides, parse_value, plan
from assay.probes import PlanContext
from assay.suite import builtin_suites, load_suite, resolve_suite
from assay.system import PlanFacts

MPIS = [
    MpiInfo(name="openmpi", version="4.1.4", launcher="mpirun", flavor="openmpi"),
    MpiInfo(name="mpich", version="4.0.2", launcher="mpiexec", flavor="mpich"),
]
CTX = PlanContext(system=System(cores=2, threads=2, l3_bytes=32 * 2**20), mpis=MPIS)


def test_builtin_quick_plans_stream_and_p2p_for_every_mpi():
    spec, _, _ = resolve_suite("quick")
    jobs = plan(spec, CTX)
    assert [j.probe for j in jobs] == ["stream", "dgemm"] + ["p2p"] * 4 + ["gpu_burn"]
    assert jobs[-1].skip_reason and "no GPU found" in jobs[-1].skip_reason
    assert {j.mpi for j in jobs if j.probe == "p2p"} == {"openmpi", "mpich"}
    assert {j.params["mode"] for j in jobs if j.probe == "p2p"} == {"latency", "bandwidth"}
    stream = jobs[0]
    # STREAM's rule: 4x the 32 MiB LLC is 16.8M elements, above the 10M default.
    assert stream.argv[stream.argv.index("--elements") + 1] == str(4 * 32 * 2**20 // 8)
    assert stream.env["OMP_NUM_THREADS"] == "2"


def test_every_builtin_suite_loads():
    for name, text in builtin_suites().items():
        assert load_suite(text, name).bench


def test_syntax_error_names_file_and_line(tmp_path: Path):
    f = tmp_path / "bad.toml"
    f.write_text('name = "x"\n\n[[bench]]\nprobe = "stream\n')
    with pytest.raises(SuiteError) as err:
        resolve_suite(str(f))
    assert "bad.toml" in str(err.value) and "line 4" in str(err.value)


def test_unknown_key_names_file_line_and_key(tmp_path: Path):
    f = tmp_path / "typo.toml"
    f.write_text('name = "x"\n[[bench]]\nprobe = "stream"\n\n[[bench]]\nprobe = "p2p"\nrnaks = 2\n')
    with pytest.raises(SuiteError) as err:
        resolve_suite(str(f))
    assert f"{f}:7" in str(err.value)
    assert "bench[2].rnaks: unknown key" in str(err.value)


def test_unknown_probe_lists_known_ones():
    spec = load_suite('name = "x"\n[[bench]]\nprobe = "strem"\n')
    with pytest.raises(SuiteError) as err:
        plan(spec, CTX)
    assert "unknown probe 'strem'" in str(err.value)
    assert "stream" in str(err.value.hint) and "p2p" in str(err.value.hint)


def test_unknown_param_lists_what_the_probe_takes():
    spec = load_suite('name = "x"\n[[bench]]\nprobe = "stream"\nparams = { ntime = 3 }\n')
    with pytest.raises(SuiteError) as err:
        plan(spec, CTX)
    assert "ntime: unknown param" in str(err.value)
    assert "ntimes" in str(err.value.hint)


def test_missing_suite_names_the_builtins():
    with pytest.raises(SuiteError) as err:
        resolve_suite("no-such-suite")
    assert "quick" in str(err.value.hint)


def test_overrides_only_mpi_set_repeat():
    spec, _, _ = resolve_suite("quick")
    jobs = plan(
        spec,
        CTX,
        Overrides(only=["p2p"], mpi=["mpich"], sets=["p2p.max_size=64", "mode=latency"], repeat=3),
    )
    assert len(jobs) == 3  # one mode, one MPI, three repetitions
    assert all(j.mpi == "mpich" and "--max-size" in j.argv for j in jobs)
    assert [j.repetition for j in jobs] == [1, 2, 3]
    assert jobs[0].job_id.endswith("-r1")


def test_override_errors_are_explained():
    spec, _, _ = resolve_suite("quick")
    with pytest.raises(SuiteError, match="no probe in suite 'quick' takes 'bogus'"):
        plan(spec, CTX, Overrides(sets=["bogus=1"]))
    with pytest.raises(SuiteError, match="has no such probe"):
        plan(spec, CTX, Overrides(only=["hpl"]))
    with pytest.raises(SuiteError, match="expected key=value"):
        plan(spec, CTX, Overrides(sets=["justakey"]))


def test_unknown_mpi_names_the_ones_found():
    spec, _, _ = resolve_suite("quick")
    with pytest.raises(Exception, match="intel not found; found: openmpi, mpich"):
        plan(spec, CTX, Overrides(mpi=["intel"]))


def test_no_mpi_found_says_which_package_to_install():
    spec, _, _ = resolve_suite("quick")
    with pytest.raises(Exception) as err:
        plan(spec, PlanContext(system=System(cores=2), mpis=[]))
    assert "no MPI implementation found" in str(err.value)
    assert "openmpi-bin" in str(err.value)


def test_set_values_are_typed():
    assert parse_value("4") == 4
    assert parse_value("1.5") == 1.5
    assert parse_value("[1, 2]") == [1, 2]
    assert parse_value("spread") == "spread"


def test_memory_suite_plans_domains_and_the_latency_ladder():
    spec, _, _ = resolve_suite("memory")
    system = System(
        cores=2, threads=2, l3_bytes=32 * 2**20, memory_bytes=8 * 2**30,
        l3_domains=[[0, 1]], numa_nodes=[{"id": 0, "cpus": [0, 1], "memory_bytes": 8 * 2**30}],
    )  # fmt: skip
    facts = PlanFacts(programs={"numactl": "/usr/bin/numactl"})
    jobs = plan(spec, PlanContext(system=system, mpis=MPIS, facts=facts))
    scopes = [j.params.get("scope") for j in jobs if j.probe == "stream"]
    assert scopes == ["node", "l3", "numa"]
    assert [j.probe for j in jobs][-1] == "memlat"


@pytest.mark.parametrize(
    ("assignment", "why"),
    [
        ("timeout=abc", "valid number"),
        ("timeout=inf", "finite number"),
        ("timeout=nan", "finite number"),
        ("timeout=0", "greater than 0"),
        ("ranks=abc", "valid integer"),
        ("ranks=0", "greater than or equal to 1"),
        ("p2p.repeat=-1", "greater than or equal to 1"),
    ],
)
def test_set_goes_through_the_suite_schema(assignment: str, why: str) -> None:
    """--set on a bench key is validated as the suite file is: no traceback, nothing ignored."""
    from assay.plan import apply_overrides

    with pytest.raises(SuiteError, match=why):
        apply_overrides(resolve_suite("quick")[0], Overrides(sets=[assignment]))


def test_set_of_a_valid_bench_key_applies() -> None:
    from assay.plan import apply_overrides

    suite = apply_overrides(
        resolve_suite("quick")[0], Overrides(sets=["timeout=42", "p2p.ranks=2"])
    )
    assert {b.timeout for b in suite.bench} == {42.0}
    assert all(b.ranks == 2 for b in suite.bench if b.probe == "p2p")
