"""NCCL figures in nccl-tests' own layout (assay.report.nccl), on real nccl-tests output: a row
per size, out-of-place and in-place time/algbw/busbw as nccl-tests printed them, its
'# Avg bus bandwidth' under the table, and each test of a file its own table."""

from __future__ import annotations

from pathlib import Path

from assay.analysis.statistics.stats import fold_samples
from assay.parsers import parse_text
from assay.report.nccl import nccl_tables

REAL = Path(__file__).parents[1] / "fixtures" / "real" / "nccl"


def _tables(name: str):
    text = (REAL / name).read_text(errors="replace")
    samples = parse_text(text, "nccl", source=name).samples
    for s in samples:
        s.params.setdefault("mpi_label", name)
    return nccl_tables(fold_samples(samples).figures)


def test_a_tagged_all_reduce_reads_as_nccl_tests_printed_it():
    """aws_eks_p5 (mpirun --tag-output, p5.48xlarge): the 2 GiB row and the footer."""
    [t] = _tables("aws_eks_p5_all_reduce_tag_output.log")
    assert t.title.startswith("NCCL all_reduce (nccl-tests layout)")
    assert t.columns[:4] == ["size (B)", "out-of-place time (us)", "out-of-place algbw (GB/s)",
                             "out-of-place busbw (GB/s)"]  # fmt: skip
    row = next(r for r in t.rows if r[0] == "2147483648")
    assert row[3] == "437.79"  # busbw as printed
    assert "Avg bus bandwidth: 52.9753 GB/s (nccl-tests' own footer)" in t.notes


def test_every_run_of_a_file_is_a_table_of_its_own():
    tables = _tables("eunomia_socket_thread_allreduce_mpi_tag_output_3reps.md")
    assert len(tables) == 3 and len({t.title for t in tables}) == 3
    assert all("run=" in t.title for t in tables)
