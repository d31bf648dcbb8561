"""Issue 28's surfaces under seeded random input, as the parsers' mutation harness does for
tool outputs (tests/mutate.py):

* the all-pairs matrix file (``allpairs.bin``): a real-format file of known content with its
  figures replaced by specials (inf, NaN, float32's largest, negatives, zero, huge) and bytes
  flipped anywhere; reading it either refuses it (ProbeError) or keeps only links the
  parsers' backstop would keep;
* hostile names (controls, lone surrogates, XML and spreadsheet specials, bidi overrides)
  through the writers of ``assay check`` and the CSV report: the JUnit file parses as XML,
  OpenMetrics encodes as UTF-8, a CSV cell is never a formula, the terminal line has no
  control character.
"""

from __future__ import annotations

import random
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

from assay.condensed import n_links
from assay.errors import ProbeError
from assay.parsers.allpairs_file import read_matrix_file, write_sweep

CASES = 300
SPECIALS = [np.inf, -np.inf, np.nan, 3.4e38, -1.0, 0.0, 1e30, 1e-45, 1e18, 1e9]


def _matrix_case(path: Path, rng: random.Random) -> None:
    n = rng.randint(2, 9)
    lat = np.array([rng.uniform(1e-6, 9e-6) for _ in range(n_links(n))], np.float32)
    bw = np.array([rng.uniform(1e8, 2e10) for _ in range(n_links(n))], np.float32)
    for values in (lat, bw):
        for _ in range(rng.randint(0, 3)):
            values[rng.randrange(len(values))] = rng.choice(SPECIALS)
    write_sweep(path, [f"n{i}" for i in range(n)], lat, bw)
    data = bytearray(path.read_bytes())
    for _ in range(rng.choice([0, 0, 1, 3])):  # flip bytes anywhere, header included
        i = rng.randrange(len(data))
        data[i] = rng.randrange(256)
    if rng.random() < 0.2:
        data = data[: rng.randrange(len(data) + 1)]
    path.write_bytes(bytes(data))


def test_mutated_matrix_files_keep_only_possible_links(tmp_path: Path):
    rng = random.Random(28)
    path = tmp_path / "allpairs.bin"
    read = refused = 0
    for case in range(CASES):
        _matrix_case(path, rng)
        try:
            m = read_matrix_file(path)
        except ProbeError:
            refused += 1
            continue
        read += 1
        lat, bw = m.latency[~np.isnan(m.latency)], m.bandwidth[~np.isnan(m.bandwidth)]
        assert ((lat > 0) & (lat <= 1e8)).all(), (case, lat)
        assert ((bw >= 0) & (bw <= 1e17)).all(), (case, bw)
        for column, low, high in (("latency", 0, 1e8), ("bandwidth", 0, 1e17)):
            v = m.retests[column][~np.isnan(m.retests[column])]
            assert ((v >= low) & (v <= high)).all(), case
    assert read > CASES // 2 and refused > 0


POOL = (["\x00", "\x01", "\x07", "\x1b[2J", "\x1b]0;t\x07", "\x7f", "\x9b", "\u202e", "\udcff",
         "\ud800", "<", ">", "&", '"', "'", "]]>", "=", "+", "-", "@", "\t", "\r", "\n", ",",
         "$", "{", "}", "\\", "é", "😀", *"abcxyz019.-_"])  # fmt: skip


def _name(rng: random.Random) -> str:
    return "".join(rng.choice(POOL) for _ in range(rng.randint(1, 8)))


def test_hostile_names_through_the_check_writers_and_csv(tmp_path: Path, capsys):
    import dataclasses
    from types import SimpleNamespace

    from assay.analysis.check.checklimits import CheckRule
    from assay.analysis.check.checkrun import CheckInput, judge
    from assay.analysis.statistics.stats import Figure
    from assay.cli import checkshow
    from assay.model import Sample
    from assay.report.junit import junit_xml
    from assay.report.openmetrics import openmetrics_text
    from assay.textutil import csv_text

    def fig(host: str, value: float) -> Figure:
        params = {"placement": "per-node", "hosts": [host], "node": host}
        return Figure(Sample.make("stream", "memory.triad", value, params), 1, None, (value,))

    rng = random.Random(28)
    base = {f"n{i}": 700e9 + i * 1e9 for i in range(5)}
    base["n4"] = 100e9
    verdicts = judge(CheckInput({h: [fig(h, v)] for h, v in base.items()}, [], {}), [],
                     CheckRule(), ["memory.triad"]).verdicts  # fmt: skip
    run = tmp_path / "run"
    run.mkdir()
    for _ in range(CASES // 3):
        names = {f"n{i}": _name(rng) + str(i) for i in range(5)}
        vs = [dataclasses.replace(v, subject=names[v.subject]) for v in verdicts]
        suite, run_id = _name(rng), _name(rng)
        xml = junit_xml(vs, suite=suite, run_id=run_id, seconds=1.0, timestamp="t")
        ET.fromstring(xml.encode("utf-8"))
        openmetrics_text(vs, run_id=run_id, suite=suite, level=1, timestamp=1.0).encode()
        for text in (*names.values(), suite):
            assert not csv_text(text).startswith(("=", "+", "-", "@", "\t", "\r"))
        args = SimpleNamespace(json=False, junit=None, openmetrics=None, html=None)
        checkshow.write_outputs(args, suite, 1, run_id, None, vs, {}, [], [], 1.0, run)
        out = capsys.readouterr().out
        assert not any(c in out for c in "\x00\x01\x07\x1b\x7f\x9b\u202e\udcff\ud800\r"), out
