"""IOR and mdtest parsers on published outputs (tests/fixtures/{ior,mdtest}/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from assay.errors import ParseError
from assay.parsers import detect_format, ior, mdtest, parse_text

FIXTURES = Path(__file__).parents[1] / "fixtures"
MIB = 2**20


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


def one(result, metric: str, **params):
    found = [
        s
        for s in result.samples
        if s.metric == metric and all(s.params.get(k) == v for k, v in params.items())
    ]
    assert len(found) == 1, [(s.metric, s.params) for s in result.samples]
    return found[0]


# ----------------------------------------------------------------------------------- IOR


def test_ior_330_summary_write_and_read():
    r = ior.parse(fixture("ior/exascaler_cloud_3.3.0.txt"), "ior.txt")
    assert r.complete and not r.missing and r.meta["version"] == "3.3.0"
    assert r.meta["iterations"] == 2 and r.meta["options"]["xfersize"] == "1 MiB"
    assert len(r.samples) == 4
    bw = one(r, "storage.bandwidth", operation="write")
    assert bw.value == 1931781079.04 == 1842.29 * MIB and bw.unit == "B/s"
    assert (bw.stats.n, bw.stats.min, bw.stats.max, bw.stats.stddev) == (
        1,
        1842.29 * MIB,
        1842.29 * MIB,
        0.0,
    )
    assert bw.params == {
        "api": "POSIX",
        "file_per_proc": True,
        "tasks": 64,
        "tasks_per_node": 16,
        "operation": "write",
        "test": 0,
        "repetitions": 1,
        "segments": 321,
        "block_size": 16777216,
        "transfer_size": 1048576,
        "mean_time_s": 178.42125,
        "aggregate_bytes": 328704 * MIB,
        # what tells this test from another (command line -C -F -e, Options "type")
        "collective": False,
        "fsync": True,
        "reorder_tasks": True,
    }
    assert one(r, "storage.bandwidth", operation="read").value == 2428638330.88
    iops = one(r, "storage.iops", operation="read")
    assert iops.value == 2316.13 and iops.unit == "op/s" and iops.better == "higher"


def test_ior_320_old_columns():
    r = ior.parse(fixture("ior/io500_ornl_summit_3.2.0_easy_write.txt"), "ornl")
    assert r.complete and r.meta["version"] == "3.2.0"
    bw = one(r, "storage.bandwidth")
    assert bw.value == 2210511.33 * MIB == 2317889128366.08
    assert (bw.params["tasks"], bw.params["tasks_per_node"]) == (1008, 2)
    assert (bw.params["block_size"], bw.params["transfer_size"]) == (1452839796736, 16777216)
    assert one(r, "storage.iops").value == 138156.96


def test_ior_io500_results_without_summary_are_iterations():
    r = ior.parse(fixture("ior/io500_cyfronet_4.1.0_easy_write.txt"), "io500")
    assert not r.complete and r.missing == ["the 'Summary of all tests' table"]
    assert r.meta["version"] == "4.1.0+dev"
    bw = one(r, "storage.bandwidth")
    assert bw.value == 361270 * MIB and bw.stats is None
    assert bw.params["iteration"] == 0 and bw.params["tasks"] == 640
    assert bw.params["transfer_size"] == 2 * MIB and bw.params["ior_latency_s"] == 0.000071
    assert one(r, "storage.iops").value == 180641.0


def test_ior_json_summary():
    # No published IOR JSON was found: this document follows src/ior-output.c
    # (PrintHeader, PrintReducedResult, PrintLongSummaryOneOperation) of hpc/ior; numbers
    # are those of the 3.3.0 text fixture.
    doc = {
        "Version": "3.3.0",
        "Began": "Mon Jul 11 12:04:24 2022",
        "Command line": "ior -O summaryFormat=JSON -F -e -r -w -a POSIX -b 16777216 -t 1048576",
        "Machine": "Linux cls0",
        "tests": [
            {
                "TestID": 0,
                "Results": [
                    [
                        {"access": "write", "bwMiB": 1842.29, "iops": 1842.31, "iter": 0},
                        {"access": "read", "bwMiB": 2316.13, "iops": 2316.15, "iter": 0},
                    ]
                ],
            }
        ],
        "summary": [
            {
                "operation": op,
                "API": "POSIX",
                "TestID": 0,
                "ReferenceNumber": 0,
                "segmentCount": 321,
                "blockSize": 16777216,
                "transferSize": 1048576,
                "numTasks": 64,
                "tasksPerNode": 16,
                "repetitions": 1,
                "filePerProc": 1,
                "reorderTasks": 1,
                "taskPerNodeOffset": 1,
                "reorderTasksRandom": 0,
                "reorderTasksRandomSeed": 0,
                "bwMaxMIB": bw,
                "bwMinMIB": bw,
                "bwMeanMIB": bw,
                "bwStdMIB": 0.0,
                "OPsMax": bw,
                "OPsMin": bw,
                "OPsMean": bw,
                "OPsSD": 0.0,
                "MeanTime": t,
                "xsizeMiB": 328704.0,
            }
            for op, bw, t in (("write", 1842.29, 178.4213), ("read", 2316.13, 141.9196))
        ],
        "Finished": "Mon Jul 11 12:09:48 2022",
    }
    text = json.dumps(doc, indent=2)
    assert ior.looks_like(text)
    r = ior.parse(text, "ior.json")
    assert r.complete and r.meta["version"] == "3.3.0"
    assert one(r, "storage.bandwidth", operation="write").value == 1842.29 * MIB
    assert one(r, "storage.iops", operation="read").params["block_size"] == 16777216
    # what the summary entries do not say, from the command line (-e, no -c): as in the text
    write = one(r, "storage.bandwidth", operation="write").params
    assert (write["fsync"], write["collective"], write["reorder_tasks"]) == (True, False, True)
    no_summary = {k: v for k, v in doc.items() if k != "summary"}
    r = ior.parse(json.dumps(no_summary), "iters.json")
    assert not r.complete
    assert one(r, "storage.bandwidth", operation="read").params["iteration"] == 0
    with pytest.raises(ParseError, match="cut short"):
        ior.parse(text[: len(text) // 2], "cut.json")


def test_ior_truncated_and_bad():
    text = fixture("ior/exascaler_cloud_3.3.0.txt")
    cut = text[: text.index("Summary of all tests")]
    r = ior.parse(cut, "cut")
    assert not r.complete and "the 'Summary of all tests' table" in r.missing
    assert len(r.samples) == 4 and all("iteration" in s.params for s in r.samples)
    half = text[: text.index("2316.13       0.00    2316.13")]
    r = ior.parse(half, "half")
    assert not r.complete and any("rest of the summary line" in m for m in r.missing)
    assert [s.params["operation"] for s in r.samples] == ["write", "write"]
    with pytest.raises(ParseError, match="empty"):
        ior.parse("", "e")
    with pytest.raises(ParseError, match="no IOR result table"):
        ior.parse(fixture("mdtest/exascaler_cloud_3.3.0.txt"), "md")
    broken = text.replace("0.105245   141.92", "0.105245")
    with pytest.raises(ParseError, match="10 values for the 11 Results columns") as err:
        ior.parse(broken, "broken")
    assert err.value.line == 33


def test_ior_210_summary_columns_as_its_source_prints_them():
    # No IOR 2.10 output was found (tests/fixtures/real/ior/PROVENANCE.md): these lines follow
    # the format strings of IOR 2.10.3's SummarizeResults (IOR.c, -v): spaced units in the
    # header, "Op grep" heading #Tasks.., the test number and API last, "EXCEL" ending a row.
    text = (
        "IOR-2.10.3: MPI Coordinated Test of Parallel I/O\n\n"
        "Operation  Max (MiB)  Min (MiB)  Mean (MiB)   Std Dev  Max (OPs)  Min (OPs)  "
        "Mean (OPs)   Std Dev  Mean (s)  Op grep #Tasks tPN reps  fPP reord reordoff "
        "reordrand seed segcnt blksiz xsize aggsize\n\n"
        "---------  ---------  ---------  ----------   -------  ---------  ---------  "
        "----------   -------  --------\n"
        "write         312.50     300.00      306.25      6.25     156.25     150.00"
        "      153.12      3.12   3.34400   8 4 2 1 0 1 0 0 1 536870912 2097152 4294967296 0 "
        "POSIX EXCEL\n\n"
        "Max Write: 312.50 MiB/sec (327.68 MB/sec)\n\nRun finished: Tue Aug  4 20:40:00 2015\n"
    )
    r = ior.parse(text, "210")
    assert r.complete and r.meta["version"] == "2.10.3"
    bw = one(r, "storage.bandwidth", operation="write")
    assert bw.value == 306.25 * MIB and bw.stats.n == 2 and bw.stats.stddev == 6.25 * MIB
    assert (bw.params["tasks"], bw.params["tasks_per_node"], bw.params["test"]) == (8, 4, 0)
    assert (bw.params["api"], bw.params["file_per_proc"], bw.params["aggregate_bytes"]) == (
        "POSIX",
        True,
        4294967296,
    )
    assert one(r, "storage.iops").value == 153.12


def test_ior_command_line_flags_tell_tests_apart():
    flags = ior._command_flags(
        "/usr/bin/ior -wvvvv -a MPIIO -c -t=1M -b 4m -O useO_DIRECT=1 --posix.odirect -Y -C=32"
    )
    assert flags["a"] == "MPIIO" and flags["t"] == "1M" and flags["b"] == "4m"
    assert {"w", "v", "c", "Y", "C", "posix.odirect"} <= set(flags)
    assert flags["useo_direct"] == "1"
    params = ior._test_params({}, flags)
    assert params == {
        "api": "MPIIO",
        "collective": True,
        "direct_io": True,
        "fsync_per_write": True,
        "reorder_tasks": True,
    }
    # the Options' "type" is IOR's own word for it
    assert ior._test_params({"type": "independent"}, flags)["collective"] is False
    assert ior._test_params({}, ior._command_flags("ior -O collective=0"))["collective"] is False
    assert "collective" not in ior._test_params({}, None)  # no command line, no Options


def test_ior_refusal_names_what_the_text_holds():
    text = fixture("ior/exascaler_cloud_3.3.0.txt")
    cut = text[: text.index("Results:")]
    with pytest.raises(ParseError, match=r"holds the IOR-3\.3\.0 banner, its Options, its command"):
        ior.parse(cut, "cut")


# -------------------------------------------------------------------------------- mdtest


def test_mdtest_330_every_phase():
    r = mdtest.parse(fixture("mdtest/exascaler_cloud_3.3.0.txt"), "md")
    assert r.complete and r.meta["version"] == "3.3.0"
    assert [s.metric for s in r.samples] == [
        "storage.metadata.directory_creation",
        "storage.metadata.directory_stat",
        "storage.metadata.directory_removal",
        "storage.metadata.file_creation",
        "storage.metadata.file_stat",
        "storage.metadata.file_read",
        "storage.metadata.file_removal",
        "storage.metadata.tree_creation",
        "storage.metadata.tree_removal",
    ]
    s = r.samples[0]
    assert s.value == 5963.545 and s.unit == "op/s" and s.better == "higher"
    assert (s.stats.n, s.stats.min, s.stats.max, s.stats.stddev) == (
        3,
        3211.453,
        7345.338,
        1945.909,
    )
    assert s.params == {
        "tasks": 64,
        "nodes": 4,
        "items": 131072,
        "operation": "Directory creation",
        "items_per_rank": 2048,  # the command line's -n
    }
    assert r.samples[5].value == 26512.201  # File read


def test_mdtest_410_rate_and_time_tables():
    r = mdtest.parse(fixture("mdtest/io500_cyfronet_4.1.0_easy_write.txt"), "md4")
    assert r.complete and r.meta["version"] == "4.1.0+dev"
    create = one(r, "storage.metadata.file_creation")
    assert create.value == 119113.15 and create.params["time_s"] == 372.432
    assert create.params["tasks"] == 640 and create.params["items"] == 640000000
    assert one(r, "storage.metadata.tree_creation").value == 4.279
    assert r.meta["not_run"] == ["File read", "File removal", "File stat", "Tree removal"]
    assert len(r.samples) == 2


def test_mdtest_193():
    r = mdtest.parse(fixture("mdtest/io500_ornl_summit_1.9.3_easy_write.txt"), "md19")
    assert r.complete and r.meta["version"] == "1.9.3"
    create = one(r, "storage.metadata.file_creation")
    assert create.value == 3071261.901 and create.params["nodes"] == 504
    assert one(r, "storage.metadata.tree_creation").value == 0.147


def test_mdtest_truncated_and_bad():
    text = fixture("mdtest/exascaler_cloud_3.3.0.txt")
    cut = text[: text.index("   File stat")]
    r = mdtest.parse(cut, "cut")
    assert not r.complete and any("finished" in m for m in r.missing)
    assert len(r.samples) == 4
    header_only = text[: text.index("   Directory creation")]
    r = mdtest.parse(header_only, "header")
    assert not r.complete and "the rows of the last SUMMARY table" in r.missing
    with pytest.raises(ParseError, match="empty"):
        mdtest.parse("\n", "e")
    with pytest.raises(ParseError, match="no mdtest 'SUMMARY rate' table"):
        mdtest.parse(fixture("ior/exascaler_cloud_3.3.0.txt"), "ior")
    with pytest.raises(ParseError, match="expected a number") as err:
        mdtest.parse(text.replace("9250.393", "9250.x93"), "bad")
    assert err.value.line == 14


def test_mdtest_18_tree_rates_and_the_table_end():
    text = (FIXTURES / "real/mdtest/ior_manpage_mdtest_1.8.1_two_examples.txt").read_text()
    r = mdtest.parse(text, "man")
    assert r.meta["runs"] == 2 and r.complete
    tree = one(r, "storage.metadata.tree_creation", run=0)
    assert tree.value == 12826.617737 and tree.stats is None and tree.params["items"] == 200
    # "time to remove tree: ..." after the table ends it: no row of that name
    assert not [s for s in r.samples if "time" in s.metric]
    assert one(r, "storage.metadata.file_removal", run=1).params["depth"] == 3


def test_mdtest_command_line_params():
    p = mdtest.command_params("mdtest '-n' '3334' '-u' '-F' -z4 -b=2 '--dataPacketType=x' -a POSIX")
    assert p == {
        "items_per_rank": 3334,
        "unique_dir": True,
        "files_only": True,
        "depth": 4,
        "branching": 2,
        "api": "POSIX",
    }
    # a value that is not a plain count is kept as typed, never a reason to refuse the output
    assert mdtest.command_params("mdtest -n $N -w 4k") == {
        "items_per_rank": "$N",
        "write_bytes": "4k",
    }


def test_mdtest_refusal_names_a_run_without_summary():
    text = fixture("mdtest/exascaler_cloud_3.3.0.txt")
    with pytest.raises(ParseError, match="holds a run's header but no summary"):
        mdtest.parse(text[: text.index("SUMMARY")], "cut")


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("ior/exascaler_cloud_3.3.0.txt", "ior"),
        ("ior/io500_ornl_summit_3.2.0_easy_write.txt", "ior"),
        ("ior/io500_cyfronet_4.1.0_easy_write.txt", "ior"),
        ("mdtest/exascaler_cloud_3.3.0.txt", "mdtest"),
        ("mdtest/io500_cyfronet_4.1.0_easy_write.txt", "mdtest"),
        ("mdtest/io500_ornl_summit_1.9.3_easy_write.txt", "mdtest"),
    ],
)
def test_formats_are_detected(name: str, fmt: str):
    text = fixture(name)
    assert detect_format(text, name) == fmt
    assert parse_text(text, fmt, name).tool == fmt
