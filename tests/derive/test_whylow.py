"""Issue 19: why a figure is far below its physical peak (DGEMM/HPL against Rpeak, STREAM
against the DRAM bandwidth, p2p against the link rate), the clock a rate above Rpeak needs, and
an Rmax of ScaLAPACK's LU on a P×Q grid across nodes saying what it is worth."""

from __future__ import annotations

from pathlib import Path

from test_report import tables_of

from assay.model import RunInfo, Sample, System
from assay.report.render import render
from assay.store import LoadedRun
from assay.system.dram import dimms_from_dmidecode, peak_of

GB = 1e9
DERIVATION = "2 cores × 2.60 GHz (CURRENT clock, /proc/cpuinfo cpu MHz) × 16 DP FLOP/cycle"


def run_of(samples: list[Sample], system: System) -> LoadedRun:
    info = RunInfo(run_id="20260101-000000-abcd", created="2026-01-01T00:00:00Z", suite="t")
    return LoadedRun(info, Path("/nonexistent/run"), system, samples, [])


def smt_system(**kw) -> System:
    base = dict(cores=2, threads=4, memory_bytes=24 * 2**30, vendor="AMD",
                isa=["sse4_2", "avx", "avx2", "fma"], microarchitecture="zen3")  # fmt: skip
    return System(**{**base, **kw})


def dgemm(value: float, **params) -> Sample:
    base = {"n": 2048, "precision": "d", "threads": 2, "rpeak": 83.2 * GB,
            "rpeak_per_core": 41.6 * GB, "rpeak_cores": 2, "rpeak_clock": "current",
            "rpeak_derivation": DERIVATION}  # fmt: skip
    return Sample.make("dgemm", "compute.dgemm", value, {**base, **params})


def test_a_low_dgemm_and_rmax_carry_their_causes_in_term_and_markdown():
    hpl = Sample.make("hpl", "compute.hpl", 10 * GB, {
        "engine": "lu", "mpi": "openmpi", "mpi_label": "OpenMPI 4.1.4", "N": 4000, "NB": 128,
        "P": 1, "Q": 1, "ranks": 1, "threads": 4, "rpeak": 83.2 * GB,
        "rpeak_derivation": DERIVATION, "rpeak_clock": "current",
        "concurrent_runs": "20260101-000001-x"})  # fmt: skip
    run = run_of([dgemm(20 * GB, blas_lib="OpenBLAS", blas_core="Zen"), hpl], smt_system())
    notes = tables_of(run)["compute"].notes
    [why_dgemm] = [n for n in notes if n.startswith("why DGEMM is 24.0% of Rpeak")]
    assert "Rpeak uses the CURRENT clock" in why_dgemm
    [why_hpl] = [n for n in notes if n.startswith("why HPL Rmax (OpenMPI 4.1.4) is 12.0%")]
    assert "4 threads on 2 cores: SMT siblings share each core's FMA units" in why_hpl
    assert "N=4000 fills 0.5% of memory" in why_hpl
    assert "another assay run measured this node meanwhile" in why_hpl
    for text in (render(run, "term", width=400), render(run, "md")):
        flat = " ".join(text.split())
        assert "why DGEMM is 24.0% of Rpeak" in flat and "why HPL Rmax (OpenMPI 4.1.4)" in flat


def test_a_rate_above_rpeak_names_the_clock_that_would_make_it_possible():
    run = run_of([dgemm(104.5 * GB)], smt_system(threads=2))
    [flag] = [n for n in tables_of(run)["compute"].notes if "Rpeak too low" in n]
    # 104.5 / 83.2 = 1.256 → 2.60 GHz × 1.256 = 3.27 GHz
    assert "needs a clock of at least 3.27 GHz on every core used" in flag


def test_stream_against_the_dram_bandwidth_known_and_unknown():
    triad = Sample.make("stream", "memory.triad", 20 * GB, {"threads": 2, "bind": "spread"})
    hidden = smt_system(dram={"reason": "a virtual machine (the CPU's 'hypervisor' flag)"})
    notes = tables_of(run_of([triad], hidden))["stream"].notes
    assert "STREAM Triad: % of the theoretical DRAM bandwidth unknown — a virtual machine" in (
        " ".join(notes)
    )
    dimms = dimms_from_dmidecode(DMIDECODE_17)
    assert dimms == [{"size": "16 GB", "mts": 3200}, {"size": "16 GB", "mts": 2933}]
    assert "mixed" in peak_of(dimms, "dmidecode -t 17")["reason"]
    known = smt_system(dram=peak_of(dimms[:1] * 8, "dmidecode -t 17"))  # 8 × 3200 × 8 B
    [why] = [n for n in tables_of(run_of([triad], known))["stream"].notes if "why" in n]
    assert why.startswith("why STREAM Triad is 9.8% of the theoretical DRAM bandwidth")
    assert "8 DIMMs × 3200 MT/s × 8 B = 204.8 GB/s" in why


def test_p2p_between_two_hosts_faster_than_the_link_is_shared_memory():
    nics = [{"name": "eth0", "kind": "net", "speed_mbps": 10000, "state": "up",
             "virtual": False}]  # fmt: skip
    bw = [
        Sample.make(
            "p2p",
            "p2p.bandwidth",
            v,
            {"size": size, "mpi": "openmpi", "mpi_label": "OpenMPI 4.1.4", "hosts": ["n1", "n2"]},
        )
        for size, v in ((1024, 1 * GB), (4194304, 9 * GB))
    ]
    notes = tables_of(run_of(bw, smt_system(nics=nics)))["p2p-bandwidth"].notes
    [why] = [n for n in notes if n.startswith("why p2p bandwidth (OpenMPI 4.1.4, 4194304 B)")]
    assert "720.0% of the link rate" in why and "shared memory" in why


def test_every_multi_node_rmax_of_scalapack_says_what_it_is_worth():
    hpl = Sample.make("hpl", "compute.hpl", 100 * GB, {
        "engine": "lu", "mpi": "openmpi", "mpi_label": "OpenMPI 4.1.4", "N": 20000, "NB": 192,
        "P": 2, "Q": 2, "ranks": 4, "threads": 1, "rpeak": 166.4 * GB, "hosts": ["n1", "n2"],
        "method": "ScaLAPACK pdgetrf+pdgetrs"})  # fmt: skip
    xhpl = Sample.make("hpl", "compute.hpl", 120 * GB, {**hpl.params, "engine": "xhpl"})
    del xhpl.params["method"]
    rows = {r[0]: r for r in tables_of(run_of([hpl, xhpl], smt_system()))["compute"].rows}
    assert (
        "across 2 nodes: ScaLAPACK's LU without lookahead, 0.81 of HPL's Rmax"
        in (rows["HPL Rmax (OpenMPI 4.1.4)"][4])
    )
    assert "ScaLAPACK" not in rows["HPL Rmax, xhpl (OpenMPI 4.1.4)"][4]  # the user's xhpl ran


# The layout of dmidecode 3.x's type 17 records (two populated DIMMs at different speeds, one
# empty slot), cut to the fields read; not a capture from one machine.
DMIDECODE_17 = """# dmidecode 3.4
Getting SMBIOS data from sysfs.
SMBIOS 3.3.0 present.

Handle 0x0013, DMI type 17, 92 bytes
Memory Device
\tTotal Width: 72 bits
\tData Width: 64 bits
\tSize: 16 GB
\tLocator: DIMM 0
\tBank Locator: P0 CHANNEL A
\tType: DDR4
\tSpeed: 3200 MT/s
\tConfigured Memory Speed: 3200 MT/s

Handle 0x0014, DMI type 17, 92 bytes
Memory Device
\tSize: No Module Installed
\tLocator: DIMM 1
\tSpeed: Unknown

Handle 0x0016, DMI type 17, 92 bytes
Memory Device
\tSize: 16 GB
\tLocator: DIMM 0
\tBank Locator: P0 CHANNEL B
\tSpeed: 3200 MT/s
\tConfigured Memory Speed: 2933 MT/s
"""


def test_a_threaded_rmax_on_first_touch_memory_over_numa_nodes_says_so():
    hpl = Sample.make("hpl", "compute.hpl", 10 * GB, {
        "engine": "lu", "mpi": "openmpi", "N": 40000, "NB": 192, "P": 1, "Q": 1, "ranks": 1,
        "threads": 2, "rpeak": 83.2 * GB,
        "memory_placement": "first touch (numactl not found)"})  # fmt: skip
    numa = [{"id": 0, "cpus": [0]}, {"id": 1, "cpus": [1]}]
    run = run_of([hpl], smt_system(threads=2, numa_nodes=numa))
    [why] = [n for n in tables_of(run)["compute"].notes if n.startswith("why HPL Rmax")]
    assert "memory by first touch (numactl not found) over 2 NUMA nodes" in why
