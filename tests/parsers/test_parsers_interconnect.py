"""Interconnect parsers (OSU, IMB, perftest, nccl-tests) against real outputs.

Every expected number below is read off the fixture file named in the test (see the README in
each fixtures folder for where the file comes from). Malformed inputs are derived from the real
files here, next to the test that uses them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from assay.errors import ParseError
from assay.model import Sample
from assay.parsers import imb, nccl, osu, perftest
from assay.parsers.base import ParseResult

FIXTURES = Path(__file__).parents[1] / "fixtures"
MIB = 2**20
PARSERS = {"osu": osu, "imb": imb, "perftest": perftest, "nccl": nccl}


def text(tool: str, name: str) -> str:
    return (FIXTURES / tool / name).read_text()


def run(tool: str, name: str) -> ParseResult:
    return PARSERS[tool].parse(text(tool, name), source=name)


def one(samples: list[Sample], metric: str, **params: Any) -> Sample:
    """The single sample of ``metric`` whose params include ``params``."""
    found = [
        s
        for s in samples
        if s.metric == metric and all(s.params.get(k) == v for k, v in params.items())
    ]
    assert len(found) == 1, f"{len(found)} samples of {metric} with {params}"
    return found[0]


def fixtures(tool: str) -> list[str]:
    return sorted(p.name for p in (FIXTURES / tool).iterdir() if p.name != "README.md")


def replace_line(source: str, old_start: str, new: str) -> tuple[str, int]:
    """Replace the first line starting (after spaces) with ``old_start``; return its number."""
    lines = source.splitlines(keepends=True)
    for i, line in enumerate(lines):
        if line.strip().startswith(old_start):
            lines[i] = new + "\n"
            return "".join(lines), i + 1
    raise AssertionError(f"no line starts with {old_start!r}")


def cut_after(source: str, marker: str, keep: int) -> str:
    """The text up to ``keep`` characters past the start of ``marker``: a file cut mid-line."""
    at = source.index(marker)
    return source[: at + keep]


# ------------------------------------------------------------------------------------ common


@pytest.mark.parametrize("tool", sorted(PARSERS))
def test_every_fixture_is_recognised_by_its_own_parser_only(tool: str) -> None:
    for name in fixtures(tool):
        content = text(tool, name)
        claims = {t for t, module in PARSERS.items() if module.looks_like(content)}
        assert claims == {tool}, name


@pytest.mark.parametrize("tool", sorted(PARSERS))
def test_every_fixture_parses_complete_with_canonical_units(tool: str) -> None:
    for name in fixtures(tool):
        result = run(tool, name)
        assert result.tool == tool
        assert result.complete, (name, result.missing)
        assert result.samples, name
        for s in result.samples:
            assert s.probe == tool
            assert s.unit in ("s", "B/s", "op/s"), (name, s.metric, s.unit)
            assert s.better == ("lower" if s.unit == "s" else "higher"), (name, s.metric)
            assert s.params["tool"] == tool
            assert s.value >= 0


@pytest.mark.parametrize("tool", sorted(PARSERS))
@pytest.mark.parametrize("content", ["", "   \n\n\t\n"])
def test_empty_output_is_refused(tool: str, content: str) -> None:
    with pytest.raises(ParseError, match="empty"):
        PARSERS[tool].parse(content, source="empty.log")


@pytest.mark.parametrize(
    ("tool", "other", "name", "says"),
    [
        ("osu", "imb", "alaska_ompi4_ucx_IMB_PingPong.out", "IMB"),
        ("osu", "nccl", "ztan-NCCL-test-result", "nccl-tests"),
        ("imb", "perftest", "mlx4_qdr_ib_send_lat_a.txt", "perftest"),
        ("imb", "osu", "alaska_ompi4_ucx_osu_bw.out", "OSU"),
        ("perftest", "osu", "alaska_ompi4_ucx_osu_latency.out", "OSU"),
        ("perftest", "nccl", "job02.sh.7194279.nccl", "nccl-tests"),
        ("nccl", "imb", "juno_IMB-MPI1_internode.txt", "IMB"),
        ("nccl", "perftest", "hc44rs_server_ib_send_bw_a_no_peak.txt", "perftest"),
    ],
)
def test_wrong_tool_says_what_it_looks_like(tool: str, other: str, name: str, says: str) -> None:
    with pytest.raises(ParseError, match=f"looks like {says} output") as err:
        PARSERS[tool].parse(text(other, name), source=name)
    assert name in str(err.value)


def test_unrecognised_text_is_refused() -> None:
    for module in PARSERS.values():
        with pytest.raises(ParseError, match="not "):
            module.parse("hello world\n1 2 3\n", source="x.txt")


# --------------------------------------------------------------------------------------- OSU


def test_osu_bw_4mib_row_is_mb_per_s_times_1e6() -> None:
    result = run("osu", "alaska_ompi4_ucx_osu_bw.out")
    assert len(result.samples) == 23
    s = one(result.samples, "p2p.bandwidth", size=4194304)
    assert s.value == pytest.approx(12164.86e6)
    assert (s.unit, s.better) == ("B/s", "higher")
    assert s.params == {"tool": "osu", "benchmark": "osu_bw", "version": "5.6.2", "size": 4194304}
    assert one(result.samples, "p2p.bandwidth", size=1).value == pytest.approx(7.53e6)
    assert result.meta["version"] == "5.6.2"


def test_osu_latency_microseconds_to_seconds() -> None:
    result = run("osu", "alaska_ompi4_ucx_osu_latency.out")
    assert len(result.samples) == 24
    assert one(result.samples, "p2p.latency", size=0).value == pytest.approx(1.00e-6)
    big = one(result.samples, "p2p.latency", size=4194304)
    assert big.value == pytest.approx(351.21e-6)
    assert (big.unit, big.better, big.stats) == ("s", "lower", None)


def test_osu_bibw_and_mbw_mr() -> None:
    bibw = run("osu", "alaska_ompi4_ucx_osu_bibw.out")
    assert one(bibw.samples, "p2p.bibw", size=4194304).value == pytest.approx(20799.10e6)

    mbw = run("osu", "alaska_ompi4_ucx_osu_mbw_mr_2.out")
    bw = one(mbw.samples, "p2p.bandwidth", size=4194304)
    assert bw.value == pytest.approx(12069.22e6)
    assert (bw.params["benchmark"], bw.params["pairs"], bw.params["window"]) == (
        "osu_mbw_mr",
        1,
        64,
    )
    rate = one(mbw.samples, "p2p.message_rate", size=1)
    assert rate.value == pytest.approx(7592221.77)
    assert (rate.unit, rate.better) == ("op/s", "higher")


def test_osu_collective_is_avg_latency() -> None:
    result = run("osu", "alaska_ompi4_ucx_osu_allreduce.out")
    assert len(result.samples) == 19
    s = one(result.samples, "coll.allreduce", size=1048576)
    assert s.value == pytest.approx(3730.69e-6)
    assert s.params["benchmark"] == "osu_allreduce"
    assert s.stats is None


def test_osu_full_statistics_give_min_max_and_iterations() -> None:
    result = run("osu", "job02.sh.7194279.mpi-cpu")
    s = one(result.samples, "coll.allreduce", size=33554432)
    assert s.value == pytest.approx(21480.64e-6)
    assert s.params["iterations"] == 100
    assert s.stats is not None
    assert s.stats.min == pytest.approx(21325.26e-6)
    assert s.stats.max == pytest.approx(21598.11e-6)
    assert s.stats.mean == pytest.approx(21480.64e-6)
    assert s.stats.n == 0  # the spread is across ranks; OMB does not print how many
    assert one(result.samples, "coll.allreduce", size=4).params["iterations"] == 1000


def test_osu_cuda_title_and_device_buffers() -> None:
    cuda = run("osu", "job02.sh.7194279.mpi")
    s = one(cuda.samples, "coll.allreduce", size=4)
    assert s.value == pytest.approx(34.31e-6)
    assert s.params["device"] == "cuda"

    dd = run("osu", "juliet_omb7.2_osu_latency_cuda_DD.txt")
    s = one(dd.samples, "p2p.latency", size=4194304)
    assert s.value == pytest.approx(281.57e-6)
    assert s.params["version"] == "7.2"
    assert (s.params["device"], s.params["send_buffer"], s.params["recv_buffer"]) == (
        "cuda",
        "device",
        "device",
    )
    # OMB 7.2 prints "# Datatype: MPI_CHAR." *after* the column header
    assert s.params["datatype"] == "MPI_CHAR"


def test_osu_7x_datatype_line_before_the_header() -> None:
    result = run("osu", "oci_omb7.5_alltoall_36ranks.txt")
    assert len(result.samples) == 27
    s = one(result.samples, "coll.alltoall", size=67108864)
    assert s.value == pytest.approx(747888.64e-6)
    assert (s.params["datatype"], s.params["version"]) == ("MPI_CHAR", "7.5")


def test_osu_session_with_several_blocks_and_launcher_lines() -> None:
    result = run("osu", "oci_omb7.5_session.txt")
    assert result.meta["benchmarks"] == ["osu_latency", "osu_bw", "osu_allreduce"]
    assert one(result.samples, "p2p.latency", size=1).value == pytest.approx(1.67e-6)
    assert one(result.samples, "p2p.bandwidth", size=268435456).value == pytest.approx(12254.16e6)
    allreduce = one(result.samples, "coll.allreduce", size=268435456)
    assert allreduce.value == pytest.approx(496306.98e-6)
    assert allreduce.params["datatype"] == "MPI_INT"
    assert result.warnings == []  # prompts and UCX lines between tables are not data


def test_osu_barrier_and_nonblocking_collectives() -> None:
    result = run("osu", "spack_omb5.6.3_ompi1.10.7_reduce_barrier_iallreduce.log")
    assert one(result.samples, "coll.reduce", size=1048576).value == pytest.approx(997.63e-6)
    barrier = one(result.samples, "coll.barrier")
    assert barrier.value == pytest.approx(1.57e-6)
    assert "size" not in barrier.params
    pure = one(result.samples, "coll.iallreduce", size=1048576)
    overall = one(result.samples, "coll.iallreduce.overall", size=1048576)
    assert pure.value == pytest.approx(1332.12e-6)  # "Pure Comm.(us)"
    assert overall.value == pytest.approx(3025.81e-6)  # "Overall(us)"
    assert pure.params["benchmark"] == "osu_iallreduce"

    # osu_ibarrier prints its column header without '#'
    other = run("osu", "spack_omb5.6.3_ompi1.10.7_alltoall_iallgather_ibarrier.log")
    assert one(other.samples, "coll.ibarrier").value == pytest.approx(4.02e-6)
    assert one(other.samples, "coll.ibarrier.overall").value == pytest.approx(8.85e-6)
    assert one(other.samples, "coll.iallgather", size=1048576).value == pytest.approx(3166.01e-6)


def test_osu_skips_benchmarks_out_of_scope_and_stops_at_a_crash() -> None:
    result = run("osu", "spack_omb5.6.3_put_bw_to_latency_mt_crash.log")
    assert result.complete
    # one-sided osu_put_bw is read (rma.put.bandwidth); it was skipped before issue 26
    assert result.meta["benchmarks"] == ["osu_put_bw", "osu_bibw", "osu_latency"]
    skipped = " ".join(result.warnings)
    for title in ("Hello World", "Init Test"):
        assert title in skipped
    assert "MPI_Put" not in skipped
    put = one(result.samples, "rma.put.bandwidth", size=4194304)
    assert put.value == pytest.approx(4395.14e6)
    assert put.params["synchronization"] == "MPI_Win_flush"
    assert one(result.samples, "p2p.latency", size=4194304).value == pytest.approx(517.89e-6)
    assert one(result.samples, "p2p.bibw", size=4194304).params["version"] == "5.6.3"
    assert {s.params["benchmark"] for s in result.samples} == {
        "osu_put_bw",
        "osu_bibw",
        "osu_latency",
    }


def test_osu_runtime_messages_inside_the_table_are_skipped_with_a_warning() -> None:
    name = "nimbix_omb5.3.2_osu_latency_cuda_help_lines.txt"
    result = run("osu", name)
    assert len(result.samples) == 24
    assert one(result.samples, "p2p.latency", size=16).value == pytest.approx(54.32e-6)
    assert any(w.startswith(f"{name}:19:") and "help message" in w for w in result.warnings)
    assert any(w.startswith(f"{name}:20:") for w in result.warnings)


def test_osu_cut_mid_row_keeps_the_complete_rows() -> None:
    source = cut_after(text("osu", "alaska_ompi4_ucx_osu_bw.out"), "2097152 ", 14)
    result = osu.parse(source, source="osu_bw.out")
    assert not result.complete
    assert len(result.samples) == 21
    assert max(s.params["size"] for s in result.samples) == 1048576
    assert "after size 1048576" in result.missing[0]


def test_osu_cut_before_the_first_row() -> None:
    source = "# OSU MPI Bandwidth Test v5.6.2\n# Size      Bandwidth (MB/s)\n"
    result = osu.parse(source, source="osu_bw.out")
    assert not result.complete
    assert result.samples == []
    assert "osu_bw" in result.missing[0] and "no rows" in result.missing[0]


def test_osu_two_rows_on_one_line_raise_at_that_line() -> None:
    source, lineno = replace_line(
        text("osu", "alaska_ompi4_ucx_osu_bw.out"),
        "256 ",
        "256                  1344.75512                  2272.33",
    )
    with pytest.raises(ParseError, match="interleaved") as err:
        osu.parse(source, source="osu_bw.out")
    assert err.value.line == lineno == 11
    assert "osu_bw.out:11" in str(err.value)


def test_osu_foreign_line_between_rows_raises_at_that_line() -> None:
    lines = text("osu", "alaska_ompi4_ucx_osu_latency.out").splitlines(keepends=True)
    lines.insert(10, "rank 1 says hello\n")
    with pytest.raises(ParseError, match="interleaved") as err:
        osu.parse("".join(lines), source="lat.out")
    assert err.value.line == 11


def test_osu_rows_failing_validation_are_left_out() -> None:
    """OMB 6+ with -c adds a Validation column; a "Fail" row holds wrong data."""
    lines = text("osu", "alaska_ompi4_ucx_osu_latency.out").splitlines()
    lines[1] += "        Validation"
    lines[2:] = [f"{row}        {'Fail' if row.startswith('64 ') else 'Pass'}" for row in lines[2:]]
    result = osu.parse("\n".join(lines) + "\n", source="lat.out")
    assert len(result.samples) == 23
    assert not [s for s in result.samples if s.params["size"] == 64]
    assert one(result.samples, "p2p.latency", size=128).value == pytest.approx(1.22e-6)
    assert any(w.startswith("lat.out:10:") and "Fail" in w for w in result.warnings)


# --------------------------------------------------------------------------------------- IMB


def test_imb_2019_pingpong_mbytes_are_1e6() -> None:
    result = run("imb", "alaska_ompi4_ucx_IMB_PingPong.out")
    assert result.meta["version"] == "2019 Update 5"
    assert result.meta["mbytes_unit_bytes"] == 1e6
    lat = one(result.samples, "p2p.latency", size=4194304)
    bw = one(result.samples, "p2p.bandwidth", size=4194304)
    assert lat.value == pytest.approx(352.68e-6)
    assert bw.value == pytest.approx(11892.60e6)
    assert bw.params == {
        "tool": "imb",
        "benchmark": "PingPong",
        "version": "2019 Update 5",
        "ranks": 2,
        "size": 4194304,
        "iterations": 10,
    }
    assert bw.value == pytest.approx(4194304 / lat.value, rel=1e-3)  # IMB: size / t
    assert one(result.samples, "p2p.latency", size=0).value == pytest.approx(1.03e-6)
    assert not [s for s in result.samples if s.metric == "p2p.bandwidth" and s.params["size"] == 0]


def test_imb_4_1_mbytes_are_2_to_the_20() -> None:
    result = run("imb", "juno_IMB-MPI1_internode.txt")
    assert result.meta["version"] == "4.1"
    assert result.meta["mbytes_unit_bytes"] == MIB
    lat = one(result.samples, "p2p.latency", size=4194304)
    bw = one(result.samples, "p2p.bandwidth", size=4194304)
    assert lat.value == pytest.approx(36946.39e-6)
    assert bw.value == pytest.approx(108.26 * MIB)
    assert bw.value == pytest.approx(4194304 / lat.value, rel=1e-3)


def test_imb_full_mpi1_run_every_benchmark() -> None:
    result = run("imb", "juno_IMB-MPI1_internode.txt")
    assert result.complete
    assert result.meta["benchmarks"] == result.meta["listed"]
    assert len(result.meta["benchmarks"]) == 17
    s = result.samples
    assert one(s, "p2p.pingping.latency", size=4194304).value == pytest.approx(51657.70e-6)
    assert one(s, "p2p.pingping.bandwidth", size=4194304).value == pytest.approx(77.43 * MIB)
    sendrecv = one(s, "p2p.sendrecv.latency", size=4194304)
    assert sendrecv.value == pytest.approx(68863.80e-6)  # t_avg
    assert sendrecv.stats is not None
    assert (sendrecv.stats.min, sendrecv.stats.max) == pytest.approx((68766.19e-6, 68961.41e-6))
    assert one(s, "p2p.sendrecv.bandwidth", size=4194304).value == pytest.approx(116.01 * MIB)
    assert one(s, "p2p.exchange.latency", size=4194304).value == pytest.approx(120458.15e-6)
    allreduce = one(s, "coll.allreduce", size=4194304)
    assert allreduce.value == pytest.approx(62210.20e-6)
    assert allreduce.stats is not None
    assert allreduce.stats.n == 2  # #processes
    assert allreduce.stats.min == pytest.approx(62191.58e-6)
    assert allreduce.stats.max == pytest.approx(62228.82e-6)
    assert allreduce.params["iterations"] == 10
    assert one(s, "coll.reduce_scatter", size=4).value == pytest.approx(6.73e-6)
    assert one(s, "coll.alltoallv", size=0).value == pytest.approx(288.23e-6)
    assert one(s, "coll.bcast", size=2048).value == pytest.approx(1188.09e-6)
    barrier = one(s, "coll.barrier")
    assert barrier.value == pytest.approx(287.38e-6)
    assert "size" not in barrier.params and barrier.params["iterations"] == 1000
    metrics = {x.metric for x in s}
    for name in ("reduce", "allgather", "allgatherv", "gather", "gatherv", "scatter", "scatterv"):
        assert f"coll.{name}" in metrics


def test_imb_several_process_counts_per_benchmark() -> None:
    result = run("imb", "oci_imb2018_ompi4.1.2_alltoall_4nodes.txt")
    assert result.meta["version"] == "2018"
    assert result.meta["job_ranks"] == 4  # 2 running + 2 waiting in MPI_Barrier
    two = one(result.samples, "coll.alltoall", size=4194304, ranks=2)
    four = one(result.samples, "coll.alltoall", size=4194304, ranks=4)
    assert two.value == pytest.approx(715.84e-6)
    assert four.value == pytest.approx(1412.98e-6)
    assert four.stats is not None and four.stats.n == 4
    assert len(result.samples) == 48


def test_imb_uniband_bandwidth_and_message_rate() -> None:
    result = run("imb", "alaska_ompi4_ucx_IMB_Uniband_2.out")
    assert one(result.samples, "p2p.uniband.bandwidth", size=4194304).value == pytest.approx(
        12131.83e6
    )
    rate = one(result.samples, "p2p.uniband.message_rate", size=0)
    assert rate.value == pytest.approx(7884473)
    assert rate.unit == "op/s"


@pytest.mark.parametrize(
    ("version", "unit"),
    [("2019 Update 6", 1e6), ("2018", 1e6), ("2021.7", 1e6), ("4.1", MIB), ("3.2.4", MIB)],
)
def test_imb_mbytes_factor_by_version(version: str, unit: float) -> None:
    assert imb.mbytes_factor(version) == unit


def test_imb_without_header_keeps_times_but_not_bandwidth() -> None:
    body = text("imb", "alaska_ompi4_ucx_IMB_PingPong.out")
    body = body[body.index("#---------------------------------------------------\n# Bench") :]
    result = imb.parse(body, source="pingpong.txt")
    assert {s.metric for s in result.samples} == {"p2p.latency"}
    assert any("version unknown" in w for w in result.warnings)


# The marker lines IMB_output.c prints instead of timings (sample_failure)
OUT_OF_MEM = (
    '      4194304 out-of-mem.; needed X=   0.034 GB; use flag "-mem X" or MAX_MEM_USAGE>=X '
    "(IMB_mem_info.h)"
)
TIME_OUT = (
    "      2097152 time-out.; Time limit (secs_per_sample * msg_sizes_list_len) is over; "
    'use "-time X" or SECS_PER_SAMPLE=X (IMB_settings.h) to increase time limit.'
)


def test_imb_out_of_mem_and_time_out_rows_are_skipped_with_a_warning() -> None:
    source = text("imb", "alaska_ompi4_ucx_IMB_PingPong.out")
    source, mem_line = replace_line(source, "4194304 ", OUT_OF_MEM)
    source, time_line = replace_line(source, "2097152 ", TIME_OUT)
    result = imb.parse(source, source="pp.out")
    assert result.complete
    sizes = {s.params["size"] for s in result.samples}
    assert 4194304 not in sizes and 2097152 not in sizes and 1048576 in sizes
    assert any(w.startswith(f"pp.out:{mem_line}:") and "out-of-mem" in w for w in result.warnings)
    assert any(w.startswith(f"pp.out:{time_line}:") and "time-out" in w for w in result.warnings)


def test_imb_cut_inside_a_block_lists_what_is_missing() -> None:
    source = cut_after(
        text("imb", "juno_IMB-MPI1_internode.txt"), "       131072          320      3557", 20
    )
    result = imb.parse(source, source="imb.out")
    assert not result.complete
    assert "Allreduce (#processes = 2): sizes after 65536 up to 4194304" in result.missing
    assert "Reduce: never started" in result.missing
    assert "Barrier: never started" in result.missing
    assert "PingPong: never started" not in result.missing
    assert one(result.samples, "coll.allreduce", size=65536).value == pytest.approx(1075.28e-6)
    assert not [
        s for s in result.samples if s.params.get("size") == 131072 and "allreduce" in s.metric
    ]
    assert one(result.samples, "p2p.latency", size=4194304).value == pytest.approx(36946.39e-6)


def test_imb_cut_between_process_counts() -> None:
    full = text("imb", "oci_imb2018_ompi4.1.2_alltoall_4nodes.txt")
    second = "# Benchmarking Alltoall \n# #processes = 4"
    source = full[: full.rindex("#-----", 0, full.index(second))]
    result = imb.parse(source, source="a2a.out")
    assert not result.complete
    assert "Alltoall (#processes = 4): never started" in result.missing
    assert len(result.samples) == 24


def test_imb_interleaved_rows_raise_at_that_line() -> None:
    source, lineno = replace_line(
        text("imb", "juno_IMB-MPI1_internode.txt"),
        "16384         1000       535.85",
        "        16384         1000       535.85       536.00       535.92        32768"
        "         1000       673.80       673.90       673.85",
    )
    with pytest.raises(ParseError, match="interleaved") as err:
        imb.parse(source, source="imb.out")
    assert err.value.line == lineno


# ---------------------------------------------------------------------------------- perftest


def test_perftest_gbits_bandwidth_is_1e9_bits() -> None:
    result = run("perftest", "nvidia_gpu_operator_ib_write_bw_a_report_gbits.txt")
    assert len(result.samples) == 23
    s = one(result.samples, "rdma.bandwidth", size=8388608)
    assert s.value == pytest.approx(92.39e9 / 8)
    assert s.params["bw_peak"] == pytest.approx(92.39e9 / 8)
    assert s.params["msg_rate"] == pytest.approx(0.001377e6)
    assert (s.params["benchmark"], s.params["device"], s.params["link_type"]) == (
        "ib_write_bw",
        "mlx5_0",
        "Ethernet",
    )
    assert (s.params["connection"], s.params["qps"], s.params["iterations"]) == ("RC", 1, 5000)


@pytest.mark.parametrize(
    "name",
    [
        "nvidia_gpu_operator_ib_write_bw_a_report_gbits.txt",
        "hc44rs_server_ib_send_bw_a_no_peak.txt",
        "csegpu_session_tabs_mib_gbits.txt",
        "numa_ib_write_bw_a_cpu_freq_warnings.txt",
    ],
)
def test_perftest_bandwidth_units_agree_with_the_message_rate(name: str) -> None:
    """size x MsgRate is perftest's own figure in bytes/s: it checks MB, MiB and Gb units."""
    for s in run("perftest", name).samples:
        if s.metric == "rdma.bandwidth" and s.params["size"] >= 4096:
            assert s.value == pytest.approx(s.params["size"] * s.params["msg_rate"], rel=0.01)


def test_perftest_mb_per_sec_is_mebibytes_and_zero_peak_is_dropped() -> None:
    result = run("perftest", "hc44rs_server_ib_send_bw_a_no_peak.txt")
    s = one(result.samples, "rdma.bandwidth", size=8388608)
    assert s.value == pytest.approx(11524.21 * MIB)
    assert "bw_peak" not in s.params  # printed 0.00: not measured on the server
    assert s.params["msg_rate"] == pytest.approx(1441)


def test_perftest_session_with_tabs_mib_and_gbits() -> None:
    result = run("perftest", "csegpu_session_tabs_mib_gbits.txt")
    assert result.meta["benchmarks"] == ["ib_send_bw", "ib_send_lat", "ib_read_bw", "ib_write_bw"]
    send = one(result.samples, "rdma.bandwidth", benchmark="ib_send_bw")
    assert send.value == pytest.approx(46557.03 * MIB)
    assert send.params["bw_peak"] == pytest.approx(46567.34 * MIB)
    read = one(result.samples, "rdma.bandwidth", benchmark="ib_read_bw")
    assert read.value == pytest.approx(328.61e9 / 8)
    lat = one(result.samples, "rdma.latency", benchmark="ib_send_lat")
    assert lat.value == pytest.approx(1.27e-6)
    assert lat.stats is not None
    assert lat.stats.p999 == pytest.approx(5.19e-6)
    assert lat.stats.stddev == 0.0
    assert any("5 time(s)" in w and "Conflicting CPU frequency" in w for w in result.warnings)


def test_perftest_latency_value_is_t_typical_with_full_stats() -> None:
    result = run("perftest", "mlx4_qdr_ib_send_lat_a.txt")
    s = one(result.samples, "rdma.latency", size=2)
    assert s.value == pytest.approx(0.97e-6)  # t_typical, the median
    st = s.stats
    assert st is not None
    assert st.n == 1000
    assert (st.min, st.max, st.median, st.mean) == pytest.approx(
        (0.92e-6, 4.89e-6, 0.97e-6, 1.01e-6)
    )
    assert (st.stddev, st.p99, st.p999) == pytest.approx((0.25e-6, 1.92e-6, 4.89e-6))
    # the published block stops after the 2**23 row without the closing line: -a is done
    assert result.complete
    assert one(result.samples, "rdma.latency", size=8388608).value == pytest.approx(2576.83e-6)


def test_perftest_old_latency_columns() -> None:
    result = run("perftest", "hc44rs_client_ib_send_lat_a_old_columns.txt")
    s = one(result.samples, "rdma.latency", size=8388608)
    assert s.value == pytest.approx(708.96e-6)
    assert s.stats is not None
    assert (s.stats.min, s.stats.max) == pytest.approx((706.63e-6, 715.72e-6))
    assert s.stats.mean is None and s.stats.p99 is None


def test_perftest_cpu_frequency_lines_between_rows() -> None:
    result = run("perftest", "numa_ib_write_bw_a_cpu_freq_warnings.txt")
    assert len(result.samples) == 3
    s = one(result.samples, "rdma.bandwidth", size=8388608)
    assert s.value == pytest.approx(10787.86 * MIB)
    assert any("3 time(s)" in w for w in result.warnings)


def test_perftest_cut_mid_row() -> None:
    source = cut_after(
        text("perftest", "nvidia_gpu_operator_ib_write_bw_a_report_gbits.txt"), " 2097152 ", 20
    )
    result = perftest.parse(source, source="bw.txt")
    assert not result.complete
    assert len(result.samples) == 20
    assert "after size 1048576" in result.missing[0]


def test_perftest_cut_at_a_line_boundary_inside_the_table() -> None:
    full = text("perftest", "nvidia_gpu_operator_ib_write_bw_a_report_gbits.txt")
    source = full[: full.index(" 2097152 ")]
    result = perftest.parse(source, source="bw.txt")
    assert not result.complete
    assert len(result.samples) == 20
    assert "closing line" in result.missing[0]


def test_perftest_interleaved_rows_raise() -> None:
    source, lineno = replace_line(
        text("perftest", "hc44rs_client_ib_send_lat_a_old_columns.txt"),
        "64      1000",
        " 64      1000          2.55           6.26 128     1000          2.59           6.08",
    )
    with pytest.raises(ParseError, match="interleaved") as err:
        perftest.parse(source, source="lat.txt")
    assert err.value.line == lineno


def test_perftest_foreign_line_then_rows_raises_at_the_foreign_line() -> None:
    lines = text("perftest", "hc44rs_client_ib_send_lat_a_old_columns.txt").splitlines(True)
    at = next(i for i, x in enumerate(lines) if x.startswith(" 1024 "))
    lines.insert(at, "avhc20:~ # ib_send_lat -a\n")
    with pytest.raises(ParseError, match="interleaved") as err:
        perftest.parse("".join(lines), source="lat.txt")
    assert err.value.line == at + 1


def test_perftest_latency_in_cycles_is_refused() -> None:
    source = text("perftest", "hc44rs_client_ib_send_lat_a_old_columns.txt").replace(
        "[usec]", "[cycles]"
    )
    with pytest.raises(ParseError, match="cycles"):
        perftest.parse(source, source="lat.txt")


# -------------------------------------------------------------------------------------- NCCL


def test_nccl_current_format_busbw_algbw_time() -> None:
    result = run("nccl", "ztan-NCCL-test-result")
    s = result.samples
    oop = one(s, "gpu.nccl.all_reduce.busbw", size=8589934592, buffers="out-of-place")
    assert oop.value == pytest.approx(338.82e9)
    assert (oop.unit, oop.better) == ("B/s", "higher")
    assert oop.params == {
        "tool": "nccl",
        "benchmark": "all_reduce_perf",
        "size": 8589934592,
        "count": 2147483648,
        "type": "float",
        "redop": "sum",
        "root": -1,
        "ranks": 16,
        "buffers": "out-of-place",
    }
    ip = one(s, "gpu.nccl.all_reduce.busbw", size=8589934592, buffers="in-place")
    assert ip.value == pytest.approx(337.35e9)
    algbw = one(s, "gpu.nccl.all_reduce.algbw", size=8589934592, buffers="out-of-place")
    assert algbw.value == pytest.approx(180.71e9)
    time = one(s, "gpu.nccl.all_reduce.time", size=8589934592, buffers="out-of-place")
    assert time.value == pytest.approx(47535e-6)
    assert (time.unit, time.better) == ("s", "lower")
    # 0.00 GB/s at 8 bytes is print resolution, not a result; the time is kept
    assert not [x for x in s if x.params.get("size") == 8 and x.metric.endswith("bw")]
    assert one(s, "gpu.nccl.all_reduce.time", size=8, buffers="in-place").value == pytest.approx(
        123.5e-6
    )
    assert result.meta["avg_bus_bandwidth"] == [pytest.approx(70.742e9)]
    # the '# Avg bus bandwidth' footer is a sample of its own, with no size
    avg = one(s, "gpu.nccl.all_reduce.avg.busbw")
    assert avg.value == pytest.approx(70.742e9) and "size" not in avg.params
    # the pasted command line names the binary (.../build/all_reduce_perf)
    assert result.meta["tests"] == [{"test": "all_reduce_perf", "from": "command line"}]


def test_nccl_old_format_with_error_column() -> None:
    result = run("nccl", "job02.sh.7194279.nccl")
    assert result.complete
    s = one(result.samples, "gpu.nccl.all_reduce.busbw", size=33554432, buffers="out-of-place")
    assert s.value == pytest.approx(33.34e9)
    assert "root" not in s.params and s.params["redop"] == "sum" and s.params["ranks"] == 16
    t = one(result.samples, "gpu.nccl.all_reduce.time", size=33554432, buffers="in-place")
    assert t.value == pytest.approx(1885.6e-6)


def test_nccl_test_name_from_the_file_name() -> None:
    result = nccl.parse(text("nccl", "job02.sh.7194279.nccl"), source="/runs/all_reduce_perf.log")
    assert result.meta["tests"] == [{"test": "all_reduce_perf", "from": "file name"}]


def test_nccl_debug_line_inside_the_table_is_skipped() -> None:
    result = run("nccl", "azureml_gpu_perf_readme_k80_stdout.log")
    assert len({x.params["size"] for x in result.samples if "size" in x.params}) == 7
    t = one(result.samples, "gpu.nccl.all_reduce.time", size=2147483648, buffers="in-place")
    assert t.value == pytest.approx(1258876e-6)
    assert any("NCCL debug" in w for w in result.warnings)


def test_nccl_unchecked_results_are_kept_with_a_warning() -> None:
    result = run("nccl", "rccl_pr2075_gfx1151_alltoall_na_excerpt.txt")
    assert result.meta["tests"] == [{"test": "alltoall_perf", "from": "header"}]
    s = one(result.samples, "gpu.nccl.alltoall.busbw", size=134217728, buffers="in-place")
    assert s.value == pytest.approx(6.34e9)
    assert any("N/A" in w for w in result.warnings)


def test_nccl_wrong_results_are_left_out() -> None:
    source = text("nccl", "ztan-NCCL-test-result")
    row = "     1048576        262144     float     sum      -1    203.2    5.16    9.68      0"
    assert row in source
    lineno = source[: source.index(row)].count("\n") + 1
    source = source.replace(row, row[:-1] + "3")
    result = nccl.parse(source, source="ar.log")
    size = 1048576
    assert not [
        x
        for x in result.samples
        if x.params.get("size") == size and "out-of" in x.params["buffers"]
    ]
    in_place = one(result.samples, "gpu.nccl.all_reduce.busbw", size=size, buffers="in-place")
    assert in_place.value == pytest.approx(9.49e9)
    assert any(w.startswith(f"ar.log:{lineno}:") and "3 wrong" in w for w in result.warnings)


def test_nccl_collective_that_cannot_be_told_apart_is_refused() -> None:
    source = text("nccl", "rccl_pr2075_gfx1151_alltoall_na_excerpt.txt").replace(
        "# Collective test concluded: alltoall_perf\n", ""
    )
    with pytest.raises(ParseError, match="cannot tell which collective"):
        nccl.parse(source, source="results.txt")


def test_nccl_cut_mid_table() -> None:
    source = cut_after(text("nccl", "ztan-NCCL-test-result"), "  1073741824     268435456", 30)
    result = nccl.parse(source, source="ar.log")
    assert not result.complete
    assert result.missing == [
        "all_reduce_perf (line 30): sizes after 1048576 up to 8589934592 and the "
        "'# Avg bus bandwidth' footer"
    ]
    assert max(x.params["size"] for x in result.samples) == 1048576


def test_nccl_interleaved_rows_raise() -> None:
    source, lineno = replace_line(
        text("nccl", "job02.sh.7194279.nccl"),
        "4096          1024",
        "        4096          1024   float     sum    40.52    0.10    0.19  4e-07    8192"
        "          2048   float     sum    43.42",
    )
    with pytest.raises(ParseError, match="interleaved") as err:
        nccl.parse(source, source="ar.log")
    assert err.value.line == lineno


# IMB variants without a real file in tests/fixtures/real/imb: the layouts IMB_output.c prints
# (IMB-NBC's overlap columns; -multi 1's per-group rows, as an Open MPI users-list post shows).
IMB_HEAD = "#    Intel(R) MPI Benchmarks 2019 Update 6, {part} part\n"
NBC_BLOCK = """#----------------------------------------------------------------
# Benchmarking Iallreduce
# #processes = 4
#----------------------------------------------------------------
       #bytes #repetitions  t_ovrl[usec]  t_pure[usec]  t_CPU[usec]  overlap[%]
            4         1000         12.50          8.25         9.00       52.78
         1024         1000         20.00         15.00        16.00       68.75

# All processes entering MPI_Finalize
"""
MULTI_1_BLOCK = """#----------------------------------------------------------------
# Benchmarking Multi-PingPong
# ( 2 groups of 2 processes each running simultaneous )
# Group    0                     : 0 1
# Group    1                     : 2 3
#----------------------------------------------------------------
        Group       #bytes #repetitions      t[usec]   Mbytes/sec

            0         1024         1000        13.56        72.02
            1         1024         1000        13.32        73.31

            0         2048         1000        16.59       117.71
            1         2048         1000        16.49       118.42

# All processes entering MPI_Finalize
"""


def test_imb_nbc_overlap_columns_give_pure_and_overall_times() -> None:
    result = imb.parse(IMB_HEAD.format(part="NBC") + NBC_BLOCK, source="nbc.out")
    pure = one(result.samples, "coll.iallreduce", size=1024)
    overall = one(result.samples, "coll.iallreduce.overall", size=1024)
    assert pure.value == pytest.approx(15.00e-6) and overall.value == pytest.approx(20.00e-6)
    assert pure.params["ranks"] == 4 and len(result.samples) == 4  # t_CPU, overlap not kept


def test_imb_multi_1_keeps_each_group_apart_and_apart_from_plain_pingpong() -> None:
    result = imb.parse(IMB_HEAD.format(part="MPI-1") + MULTI_1_BLOCK, source="multi.out")
    assert len(result.samples) == 8
    lat = one(result.samples, "p2p.latency", size=2048, group=1)
    assert lat.value == pytest.approx(16.49e-6)
    assert lat.params["groups"] == 2 and lat.params["group_ranks"] == 2
    assert "ranks" not in lat.params
    assert one(result.samples, "p2p.bandwidth", size=1024, group=0).value == pytest.approx(72.02e6)


def test_imb_runs_of_one_file_keep_their_own_version() -> None:
    first = text("imb", "alaska_ompi4_ucx_IMB_PingPong.out")
    second = first.replace("2019 Update 5", "2021.7")
    result = imb.parse(first + "$ mpirun -n 2 IMB-MPI1 pingpong\n" + second, source="two.out")
    assert result.complete
    assert {s.params["run"] for s in result.samples} == {1, 2}
    assert one(result.samples, "p2p.latency", size=0, run=2).params["version"] == "2021.7"
    assert one(result.samples, "p2p.latency", size=0, run=1).params["version"] == "2019 Update 5"


def test_osu_same_benchmark_twice_gets_a_run_each() -> None:
    once = text("osu", "alaska_ompi4_ucx_osu_latency.out")
    result = osu.parse(once + "$ mpirun -np 2 osu_latency\n" + once, source="twice.out")
    assert len(result.samples) == 48
    assert one(result.samples, "p2p.latency", size=0, run=2).value == pytest.approx(1.00e-6)
    single = osu.parse(once, source="once.out")
    assert all("run" not in s.params for s in single.samples)


# ------------------------------------------------- classes of the real corpus (issue 26)


def test_nccl_a_file_whose_every_test_failed_its_check_is_refused() -> None:
    whole = text("real/nccl", "dgx2_v100_old_format_three_collectives_oob_failed_excerpt.md")
    first = whole[: whole.index("Running:", whole.index("# Out of bounds values : 4 FAILED"))]
    with pytest.raises(ParseError, match="4 FAILED") as err:
        nccl.parse(first, source="dgx2.log")
    assert err.value.line == first.splitlines().index("# Out of bounds values : 4 FAILED") + 1
    # with the passing tests after it, the failed one is left out and the others kept
    result = nccl.parse(whole, source="dgx2.log")
    assert {s.params["benchmark"] for s in result.samples} == {"all_reduce_perf", "broadcast_perf"}
    assert any("all_gather_perf" in w and "out-of-bounds" in w for w in result.warnings)


def test_nccl_runs_of_one_collective_are_numbered_and_the_mpi_suffix_dropped() -> None:
    source = text("real/nccl", "eunomia_socket_thread_allreduce_mpi_tag_output_3reps.md")
    source = source.replace("[1,0]<stdout>:", "")  # the lead's prefix stripper does this
    result = nccl.parse(source, source="reps.md")
    assert {s.params["run"] for s in result.samples} == {1, 2, 3}
    assert {s.params["benchmark"] for s in result.samples} == {"all_reduce_perf"}


def test_perftest_header_with_neither_title_nor_command_is_refused_saying_so() -> None:
    source = text(
        "real/perftest", "rxe_softroce_session_write_bw_send_lat_untitled_and_duration_excerpt.md"
    )
    source = source.replace("ekou@ubuntu2:~$ ib_send_lat -d rxe0 -s 64 10.10.80.91\n", "")
    with pytest.raises(ParseError, match="nor a command line naming the test") as err:
        perftest.parse(source, source="lab.md")
    assert "after the closed table" in str(err.value)
