"""Real outputs from other people's clusters (tests/fixtures/real/): each file imports with the
figures a person reads in it, or is refused with a true message, whether its format is named
or detected. The hand-read figures are in each folder's expected.toml (see the README there)."""

from __future__ import annotations

import math
import tomllib
from pathlib import Path
from typing import Any

import pytest

from assay.errors import ParseError
from assay.parsers import FORMATS, parse_text
from conftest import run_cli

REAL = Path(__file__).parents[1] / "fixtures" / "real"
NOT_FILES = {"PROVENANCE.md", "expected.toml"}
MIN_PER_FORMAT = 5
MIN_FILES = 100


def _entries() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for folder in sorted(p for p in REAL.iterdir() if p.is_dir()):
        expected = folder / "expected.toml"
        if not expected.exists():
            continue
        for entry in tomllib.loads(expected.read_text())["file"]:
            out.append((folder.name, entry))
    return out


ENTRIES = _entries()


def _read(fmt: str, name: str) -> str:
    # as `assay import` reads a file: bytes, undecodable bytes replaced
    return (REAL / fmt / name).read_bytes().decode("utf-8", errors="replace")


def _series_key(params: dict[str, Any], row_params: list[str]) -> tuple:
    return tuple(sorted((k, repr(v)) for k, v in params.items() if k not in row_params))


def _check_figure(samples, fig: dict[str, Any], where: str) -> None:
    want = fig.get("params", {})
    found = [
        s
        for s in samples
        if s.metric == fig["metric"] and all(s.params.get(k) == v for k, v in want.items())
    ]
    assert len(found) == 1, (
        f"{where}: {len(found)} samples match {fig['metric']} {want} (exactly one must): "
        f"{[(s.metric, s.params) for s in found][:6]}"
    )
    got = found[0].value
    assert math.isclose(got, fig["value"], rel_tol=fig.get("rel", 1e-6)), (
        f"{where}: {fig['metric']} {want} = {got!r}, read by hand {fig['value']!r}"
    )


@pytest.mark.parametrize("fmt,entry", ENTRIES, ids=[f"{fmt}/{e['name']}" for fmt, e in ENTRIES])
@pytest.mark.parametrize("how", ["named", "auto"])
def test_real_output_imports_with_its_hand_read_figures(fmt: str, entry: dict, how: str):
    text = _read(fmt, entry["name"])
    asked = fmt if how == "named" else "auto"
    where = f"{fmt}/{entry['name']} (--format {asked})"
    if "refused" in entry:
        with pytest.raises(ParseError) as err:
            parse_text(text, asked, source=entry["name"])
        assert entry["refused"] in str(err.value), f"{where}: refused with {err.value}"
        return
    result = parse_text(text, asked, source=entry["name"])
    samples = result.samples
    assert samples, f"{where}: no samples"
    if "samples" in entry:
        assert len(samples) == entry["samples"], f"{where}: {len(samples)} samples"
    if "series" in entry:
        rows = entry.get("row_params", ["size"])
        keys = {(s.metric, _series_key(s.params, rows)) for s in samples}
        assert len(keys) == entry["series"], f"{where}: {len(keys)} series: {sorted(keys)[:8]}"
    if "complete" in entry:
        assert result.complete == entry["complete"], f"{where}: complete={result.complete}"
    if "warning" in entry:
        assert any(entry["warning"] in w for w in result.warnings), (
            f"{where}: no warning holds {entry['warning']!r}: {result.warnings}"
        )
    for fig in entry.get("figure", []):
        _check_figure(samples, fig, where)
    for s in samples:  # nothing a measurement cannot give
        assert math.isfinite(s.value) and s.value >= 0, f"{where}: {s.metric} {s.value}"


REPORTED = [(fmt, e) for fmt, e in ENTRIES if e.get("report_contains") or e.get("report_lacks")]


@pytest.mark.parametrize("fmt,entry", REPORTED, ids=[f"{fmt}/{e['name']}" for fmt, e in REPORTED])
def test_real_output_report_shows_every_test_it_holds(fmt: str, entry: dict, assay_home: Path):
    path = REAL / fmt / entry["name"]
    done = run_cli("import", "--format", fmt, str(path), home=assay_home)
    # 1: imported, some of it partial (a cut-off output); the report must show what it kept
    assert done.returncode in (0, 1) and "nothing stored" not in done.stderr, done.stderr
    md = run_cli("report", "-f", "md", home=assay_home, check=True).stdout
    for want in entry.get("report_contains", []):
        assert want in md, f"{fmt}/{entry['name']}: the report lacks {want!r}"
    for unwanted in entry.get("report_lacks", []):
        assert unwanted not in md, f"{fmt}/{entry['name']}: the report shows {unwanted!r}"


def test_every_corpus_file_has_hand_read_figures_and_provenance():
    for folder in sorted(p for p in REAL.iterdir() if p.is_dir()):
        names = {e["name"] for fmt, e in ENTRIES if fmt == folder.name}
        files = {p.name for p in folder.iterdir() if p.is_file() and p.name not in NOT_FILES}
        assert files == names, f"{folder.name}: files and entries differ: {files ^ names}"
        provenance = (folder / "PROVENANCE.md").read_text()
        for name in files:
            assert name in provenance, f"{folder.name}/{name} is not in PROVENANCE.md"


def test_the_corpus_covers_every_import_format():
    counts = {fmt: 0 for fmt in FORMATS}
    for fmt, _ in ENTRIES:
        assert fmt in counts, f"tests/fixtures/real/{fmt}: not an import format"
        counts[fmt] += 1
    thin = {fmt: n for fmt, n in counts.items() if n < MIN_PER_FORMAT}
    assert not thin, f"formats with fewer than {MIN_PER_FORMAT} real files: {thin}"
    assert sum(counts.values()) >= MIN_FILES, f"{sum(counts.values())} real files"
