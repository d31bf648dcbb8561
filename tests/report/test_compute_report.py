"""The compute table (issue 13): HPL per MPI with its size, time and budget; HPL inside HPCC
as its own row; every rate above Rpeak flagged with its clock source in the terminal and the
Markdown report, bracketed text shown as written. Samples come from the probes' own parse()
of real output (hpl_lu's line, Debian hpcc's hpccoutf.txt)."""

from __future__ import annotations

from pathlib import Path

from test_hpl import REAL_LINE
from test_report import loaded, tables_of

from assay.model import Job, Sample
from assay.probes import get_probe
from assay.report.render import render, term_tables

FIXTURES = Path(__file__).parents[1] / "fixtures"
DERIVATION = "2 cores × 2.00 GHz (nominal, /proc/cpuinfo model name) × 16 DP FLOP/cycle"


def lu_samples(mpi: str, label: str, rpeak: float = 64e9) -> list[Sample]:
    """What the hpl probe stores for hpl_lu's real line, on one MPI (as plan() sets params)."""
    params = {"engine": "lu", "mpi": mpi, "mpi_label": label, "ranks": 2, "N": 4096, "NB": 128,
              "P": 1, "Q": 2, "time_budget": 20.0, "rpeak": rpeak,
              "rpeak_derivation": DERIVATION}  # fmt: skip
    job = Job(f"00{len(mpi)}-hpl", "hpl", ["{exe}"], params=params)
    return get_probe("hpl").parse(REAL_LINE, job)


def hpcc_samples(rpeak: float = 64e9) -> list[Sample]:
    params = {"engine": "hpcc", "mpi": "openmpi", "ranks": 2, "rpeak": rpeak,
              "rpeak_derivation": DERIVATION, "time_budget": 300.0}  # fmt: skip
    job = Job("003-hpcc", "hpcc", ["hpcc"], params=params)
    return get_probe("hpcc").parse((FIXTURES / "hpcc" / "hpccoutf.txt").read_text(), job)


def test_hpl_rows_name_their_mpi_with_size_time_and_budget():
    run = loaded(lu_samples("openmpi", "OpenMPI 4.1.4") + lu_samples("mpich", "MPICH 4.0.2"))
    table = tables_of(run)["compute"]
    rows = {r[0]: r for r in table.rows}
    assert list(rows) == ["Rpeak (DP)", "HPL Rmax (MPICH 4.0.2)", "HPL Rmax (OpenMPI 4.1.4)"]
    detail = rows["HPL Rmax (OpenMPI 4.1.4)"][4]
    # hpl_lu ran N=3200 in 7.05 s: the pilot lowered the planned 4096 to fit the 20 s budget
    assert detail.startswith("N=3200 NB=128 P×Q=1×2, 7.05 s of a 20 s budget"), detail
    assert "N lowered from 4096 by the pilot" in detail and "PASSED" in detail
    assert rows["HPL Rmax (OpenMPI 4.1.4)"][1] == rows["HPL Rmax (MPICH 4.0.2)"][1] == "3.10"


def test_hpl_inside_hpcc_is_its_own_row_in_the_compute_table():
    run = loaded(lu_samples("openmpi", "OpenMPI 4.1.4") + hpcc_samples())
    tables = tables_of(run)
    labels = [r[0] for r in tables["compute"].rows]
    # one Rpeak (the node's, not StarDGEMM's per-core peak); our LU before HPCC's HPL tests
    assert labels[0] == "Rpeak (DP)" and labels.count("Rpeak (DP)") == 1
    assert tables["compute"].rows[0][1] == "64.00"
    assert labels.index("HPL Rmax (OpenMPI 4.1.4)") < labels.index("HPL Rmax (inside HPCC)")
    # the fixture's 2 N x 2 NB tests, all PASSED: the best is the Rmax, named with its
    # configuration, the other three are listed as tests (this asserted 4 "Rmax" rows before)
    (rmax,) = [r for r in tables["compute"].rows if r[0] == "HPL Rmax (inside HPCC)"]
    assert rmax[4].startswith("best of 4 HPL tests: WR11C2R4 N=1000 NB=64 P×Q=1×2,")
    tests = [r for r in tables["compute"].rows if r[0] == "HPL test (inside HPCC)"]
    assert labels.index("HPL Rmax (inside HPCC)") < labels.index("HPL test (inside HPCC)")
    assert {r[4].split(",")[0] for r in tests} == {
        "WR11C2R4 N=500 NB=64 P×Q=1×2", "WR11C2R4 N=500 NB=80 P×Q=1×2",
        "WR11C2R4 N=1000 NB=80 P×Q=1×2",
    }  # fmt: skip
    assert {"StarDGEMM (inside HPCC)", "SingleDGEMM (inside HPCC)"} <= set(labels)
    other = tables.get("other")
    moved = ("compute.hpl", "compute.dgemm", "compute.rpeak")  # HPCC's FFT stays in "Other"
    assert other is None or not [r for r in other.rows if r[0] in moved]


def test_every_rate_above_rpeak_is_flagged_in_terminal_and_markdown():
    # the same real rates against an Rpeak stated far too low (a 0.05 GHz "current" clock)
    low = "2 cores × 0.05 GHz (current, /proc/cpuinfo cpu MHz) × 16 DP FLOP/cycle"
    hpl = lu_samples("openmpi", "OpenMPI 4.1.4", rpeak=1.6e9)
    for s in hpl:
        s.params["rpeak_derivation"] = low
    dgemm = Sample.make("dgemm", "compute.dgemm", 2.0e9, {
        "n": 2048, "precision": "d", "threads": 2, "rpeak": 1.6e9, "rpeak_per_core": 0.8e9,
        "rpeak_cores": 2, "rpeak_clock": "current", "rpeak_derivation": low})  # fmt: skip
    run = loaded([dgemm, *hpl])
    table = tables_of(run)["compute"]
    for label in ("DGEMM", "HPL Rmax (OpenMPI 4.1.4)"):
        row = next(r for r in table.rows if r[0] == label)
        assert row[2].endswith("% (Rpeak too low)"), row
        (note,) = [n for n in table.notes if n.startswith(f"{label}: ")]
        assert "Rpeak too low: clock source current, /proc/cpuinfo cpu MHz" in note, note
        assert "[peak] clock_ghz" in note
    for text in (render(run, "term", width=400), render(run, "md")):
        flat = " ".join(text.split())
        # the note, word for word, bracketed "[peak]" included (rich markup would eat it)
        for label in ("DGEMM", "HPL Rmax (OpenMPI 4.1.4)"):
            assert f"{label}: Rpeak too low: clock source current, /proc/cpuinfo cpu MHz" in flat
        assert flat.count("set [peak] clock_ghz") == 2, flat
        assert flat.count("(Rpeak too low)") == 2


def test_notes_are_text_never_markup():
    run = loaded(lu_samples("openmpi", "[bold]OpenMPI[/bold] [peak]"))
    table = tables_of(run)["compute"]
    table.notes.append("see [peak] and [/] and [red]x[/red]")
    out = term_tables([table], width=300)
    assert "see [peak] and [/] and [red]x[/red]" in out
    assert "HPL Rmax ([bold]OpenMPI[/bold] [peak])" in out


def test_hpl_sweep_with_repetitions_names_rmax_by_its_highest_repetition():
    # HPL-NVIDIA, each N run twice (github.com/pkusc/ASC22_HPL, tests/fixtures/real/hpl)
    from assay.parsers import hpl

    path = FIXTURES / "real" / "hpl" / "pkusc_hpl_nvidia_100_reps_interrupted_noprogress.out"
    samples = hpl.parse(path.read_text(), path.name).samples
    rows = tables_of(loaded(samples))["compute"].rows
    (rmax,) = [r for r in rows if r[0].startswith("HPL Rmax")]
    # N=150000: 33120 and 34290 Gflops; N=140000: 33600 and 34160 (a higher median, 33880)
    assert "N=150000" in rmax[4] and "highest of 2 repetitions: 34290.00 GFLOP/s" in rmax[4]
    assert rmax[3] == "2 reps"
    assert len([r for r in rows if r[0].startswith("HPL test")]) == 5  # 6 N, one Rmax
