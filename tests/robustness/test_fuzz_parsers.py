"""Every parser, fed mutated real outputs, returns only possible values or raises ParseError.

The mutator (tests/mutate.py) truncates, deletes, duplicates and swaps lines, flips bytes,
puts NaN/inf/huge/negative/Python-only numbers in place of real ones, inserts non-UTF-8
bytes, turns line ends into CRLF or CR, makes very long lines (of a filler or of the line's own
characters), changes a JSON value's type (a number quoted, a string a list, an object, null)
and makes statistics impossible (a min above its max, a mean outside them). ``make test`` runs a few
hundred cases per parser; ``make soak`` (marker ``soak``) runs 100,000 per parser
(ASSAY_SOAK_CASES to change it) and prints the counts recorded in docs/robustness.md.
"""

from __future__ import annotations

import os

import pytest

from assay.parsers import FORMATS
from mutate import fixture_files, mutated, run

FAST_CASES = 300
SOAK_CASES = int(os.environ.get("ASSAY_SOAK_CASES", "100000"))
PARSERS = sorted(FORMATS)


def test_every_format_has_real_fixtures_to_mutate():
    for fmt in PARSERS:
        assert fixture_files(fmt), f"no fixture for {fmt}"


def test_the_mutator_is_reproducible_and_mutates():
    assert mutated("osu", 7, 3) == mutated("osu", 7, 3)
    originals = {p.read_bytes().decode("utf-8", "replace") for p in fixture_files("osu")}
    texts = {mutated("osu", 0, case)[0] for case in range(50)}
    assert len(texts - originals) >= 45  # nearly every case differs from the real file


@pytest.mark.parametrize("fmt", PARSERS)
def test_mutated_outputs_never_crash_a_parser_nor_yield_impossible_values(fmt: str):
    tally = run(fmt, FAST_CASES, seed=1)
    assert not tally.crashes, "\n".join(tally.crashes[:5])
    assert not tally.impossible, "\n".join(tally.impossible[:5])
    assert not tally.slow, "\n".join(tally.slow[:5])
    assert tally.parsed > 0 and tally.refused > 0  # the mutations both pass and fail parsing


@pytest.mark.soak
@pytest.mark.parametrize("fmt", PARSERS)
def test_soak_mutated_outputs(fmt: str):
    tally = run(fmt, SOAK_CASES, seed=2)
    print("\nSOAK " + tally.line())
    assert not tally.crashes, "\n".join(tally.crashes[:10])
    assert not tally.impossible, "\n".join(tally.impossible[:10])
    assert not tally.slow, "\n".join(tally.slow[:10])
