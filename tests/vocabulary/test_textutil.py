"""The shared text helpers."""

from __future__ import annotations

import pytest

from assay.textutil import slugify


@pytest.mark.parametrize(
    ("text", "kwargs", "expected"),
    [
        ("Open MPI 4.1", {}, "open-mpi-4.1"),
        ("  latency  MPICH 4.0.2 ", {}, "latency-mpich-4.0.2"),
        ("rand/read 4k", {"lower": False}, "rand-read-4k"),
        ("ÄÖ ok", {}, "ok"),  # non-ASCII letters are not path-safe everywhere
        (" / ", {"empty": "job"}, "job"),
        ("", {}, ""),
    ],
)
def test_slugify(text: str, kwargs: dict, expected: str):
    assert slugify(text, **kwargs) == expected
