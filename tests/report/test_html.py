"""The HTML report: one self-contained page, data escaped, opened in real headless Chromium.

The browser tests keep their screenshots in ``build/test-artifacts/`` (or ``$ASSAY_ARTIFACTS``)
so a reviewer can look at what the reader sees.
"""

from __future__ import annotations

import json
import os
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from assay.report.html import esc, page
from assay.report.render import md
from assay.report.table import Table
from conftest import FAST_SETS, run_cli
from html_browser import Browser

FIX = Path(__file__).parents[1] / "fixtures"
HOSTILE = "<script>alert(1)</script>|"
ARTIFACTS = Path(os.environ.get("ASSAY_ARTIFACTS", Path(__file__).parent.parent / "build"))

# What the test reads back from the page: facts only the rendered DOM knows.
FACTS_JS = """JSON.stringify({
  plots: [...document.querySelectorAll('figure.plot')].map(f => ({
      id: f.id, svg: !!f.querySelector('svg'),
      width: f.querySelector('svg') ? f.querySelector('svg').getBoundingClientRect().width : 0})),
  tables: [...document.querySelectorAll('section.table')].map(s => s.id),
  headers: [...document.querySelectorAll('th')].map(t => t.textContent),
  scripts: document.querySelectorAll('script').length,
  text: document.body.innerText,
  title: document.title,
  alerted: window.__alerted === true,
})"""


def _artifact(name: str, data: bytes) -> Path:
    where = ARTIFACTS / "test-artifacts"
    where.mkdir(parents=True, exist_ok=True)
    path = where / name
    path.write_bytes(data)
    return path


def _open(path: Path, shot: str) -> tuple[dict, object]:
    with Browser() as browser:
        visit = browser.visit(path, FACTS_JS)
    _artifact(shot, visit.screenshot)
    assert visit.screenshot.startswith(b"\x89PNG")
    return json.loads(visit.facts), visit


def _import(home: Path, label: str, *files: Path, fmt: str = "auto", extra: tuple = ()) -> str:
    args = ("import", "--format", fmt, "--label", label, *extra, *map(str, files))
    proc = run_cli(*args, home=home)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return re.search(
        r"stored\s+as\s+run\s+(\d{8}-\d{6}-[0-9a-f]+)", proc.stdout + proc.stderr
    ).group(1)


class _Check(HTMLParser):
    """Every element and attribute the page has, to check it fetches nothing."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.urls: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        for k, v in attrs:
            if k in ("src", "href", "xlink:href", "action") and v and not v.startswith("#"):
                self.urls.append(v)


def test_hostile_labels_stay_text_in_html_and_markdown():
    t = Table(
        "p2p-latency",
        HOSTILE,
        ["#bytes", f"Latency [us] ({HOSTILE})"],
        [["1", HOSTILE]],
        [HOSTILE],
        [f"mpirun {HOSTILE}"],
    )
    text = page(HOSTILE, [HOSTILE], [t])
    assert "<script>" not in text and "&lt;script&gt;alert(1)&lt;/script&gt;|" in text
    parser = _Check()
    parser.feed(text)
    assert "script" not in parser.tags and parser.urls == []
    assert esc('"><img src=x>') == "&quot;&gt;&lt;img src=x&gt;"
    # Markdown: the pipe cannot split a cell, the tag is not live (a Markdown escape, not an
    # HTML entity: issue 19)
    assert md(HOSTILE) == "\\<script>alert(1)\\</script>\\|"


def test_the_page_forbids_every_fetch_and_script():
    text = page("t", [], [])
    assert "default-src 'none'" in text and "<script" not in text


@pytest.fixture(scope="module")
def imported_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    """Real OSU, STREAM, HPL and fio outputs imported as runs, one under a hostile label
    (once per module: the tests only read these runs, or add runs of their own)."""
    assay_home = tmp_path_factory.mktemp("html") / "assay-home"
    osu = [FIX / "osu" / f"alaska_ompi4_ucx_osu_{b}.out" for b in ("latency", "bw", "bibw")]
    a = _import(
        assay_home, "MVAPICH2 2.3", *osu, FIX / "osu" / "alaska_ompi4_ucx_osu_allreduce.out"
    )
    b = _import(assay_home, HOSTILE, osu[0], osu[1])
    c = _import(
        assay_home,
        "site",
        FIX / "stream" / "revyos_lpi4a_omp8.txt",
        FIX / "hpl" / "sc14_hpl21.txt",
        FIX / "fio" / "randread_8k.jsonplus.json",
    )
    return assay_home, [a, b, c]


def test_imported_runs_in_one_html_report_render_in_chromium(imported_runs, tmp_path: Path):
    home, runs = imported_runs
    out = tmp_path / "report.html"
    plots = tmp_path / "plots"
    proc = run_cli(
        "report", *runs, "--format", "html", "-o", str(out), "--plots-dir", str(plots), home=home
    )
    assert proc.returncode == 0, proc.stderr
    text = out.read_text()
    parser = _Check()
    parser.feed(text)
    assert "script" not in parser.tags and parser.urls == []  # nothing to fetch

    facts, visit = _open(out, "imported-runs.png")
    assert visit.errors() == []
    assert visit.requests == [out.resolve().as_uri()]  # the page itself, nothing else
    assert facts["scripts"] == 0 and not facts["alerted"]
    ids = {p["id"] for p in facts["plots"]}
    assert {"plot-p2p-latency", "plot-p2p-bandwidth", "plot-p2p-bibw", "plot-coll-allreduce"} <= ids
    assert all(p["svg"] and p["width"] > 300 for p in facts["plots"])  # drawn, not collapsed
    assert {"t-system", "t-p2p-latency", "t-p2p-bandwidth", "t-stream"} <= set(facts["tables"])
    # the imports stand as columns side by side, labelled; the hostile label is plain text
    assert "Latency [us] (MVAPICH2 2.3)" in facts["headers"]
    assert f"Latency [us] ({HOSTILE})" in facts["headers"]
    assert HOSTILE in facts["text"]
    # --plots-dir wrote the same plots
    assert {p.stem for p in plots.glob("*.svg")} == ids
    assert {p.stem for p in plots.glob("*.png")} == ids


def test_several_runs_in_markdown_and_json_too(imported_runs):
    home, runs = imported_runs
    md_text = run_cli("report", runs[0], runs[1], "--format", "md", home=home, check=True).stdout
    header = next(ln for ln in md_text.splitlines() if ln.startswith("| #bytes | Latency"))
    assert "(MVAPICH2 2.3)" in header and "(\\<script>alert(1)\\</script>\\|)" in header
    assert header.count(" | ") == 2  # three cells: the pipe in the label split nothing
    doc = json.loads(run_cli("report", *runs[:2], "--format", "json", home=home, check=True).stdout)
    labels = {s["params"].get("mpi_label") for s in doc["samples"]}
    assert {"MVAPICH2 2.3", HOSTILE} <= labels


@pytest.mark.slow
def test_a_real_run_with_an_imported_osu_column_renders_in_chromium(
    assay_home: Path, tmp_path: Path
):
    """assay's own OpenMPI and MPICH columns, and an imported OSU output beside them."""
    proc = run_cli("run", "quick", *FAST_SETS, home=assay_home, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    own = re.search(r"run (\d{8}-\d{6}-[0-9a-f]+): suite quick", proc.stdout + proc.stderr)[1]
    osu = _import(assay_home, "MVAPICH2 2.3", FIX / "osu" / "alaska_ompi4_ucx_osu_latency.out")
    out = tmp_path / "report.html"
    run_cli("report", own, osu, "--format", "html", "-o", str(out), home=assay_home, check=True)
    facts, visit = _open(out, "real-run.png")
    assert visit.errors() == [] and visit.requests == [out.resolve().as_uri()]
    lat_headers = [h for h in facts["headers"] if h.startswith("Latency [us]")]
    assert any("OpenMPI" in h for h in lat_headers) and any("MPICH" in h for h in lat_headers)
    assert "Latency [us] (MVAPICH2 2.3)" in lat_headers
    assert {"plot-p2p-latency", "plot-compute"} <= {p["id"] for p in facts["plots"]}
    assert "reps" in facts["text"] or " it." in facts["text"]  # counts behind the figures

    # the JSON report of a real run round-trips, each MPI keeping its own column
    doc = tmp_path / "own.json"
    run_cli("report", own, "--format", "json", "-o", str(doc), home=assay_home, check=True)
    # the system record comes from --system-from (docs/report-json.md, Limits)
    back = _import(assay_home, "copy", doc, fmt="assay-json", extra=("--system-from", own))
    before = run_cli("report", own, "--format", "md", home=assay_home, check=True).stdout
    after = run_cli("report", back, "--format", "md", home=assay_home, check=True).stdout
    assert _tables_of(after) == _tables_of(before)


def _tables_of(md_text: str) -> list[str]:
    """A Markdown report's titles and table rows: not its header (run id, path, times) nor the
    commands (an import's command is the file it read)."""
    # the jobs that failed are the original run's, not figures: an import has none
    kept = md_text.partition("## Jobs that failed or were skipped")[0]
    return [ln for ln in kept.splitlines() if ln.startswith(("## ", "|"))]


def test_json_report_round_trips_through_import(imported_runs, tmp_path: Path):
    home, runs = imported_runs
    doc = tmp_path / "run.json"
    run_cli("report", runs[0], "--format", "json", "-o", str(doc), home=home, check=True)
    data = json.loads(doc.read_text())
    assert data["schema"] == "assay-report" and data["schema_version"] == 2
    back = _import(home, "MVAPICH2 2.3", doc, fmt="assay-json")
    before = run_cli("report", runs[0], "--format", "md", home=home, check=True).stdout
    after = run_cli("report", back, "--format", "md", home=home, check=True).stdout
    assert _tables_of(after) == _tables_of(before)
    # auto-detected too
    assert _import(home, "again", doc)


def test_a_newer_json_schema_is_refused_not_misread(assay_home: Path, tmp_path: Path):
    doc = tmp_path / "new.json"
    doc.write_text(json.dumps({"schema": "assay-report", "schema_version": 99, "samples": []}))
    proc = run_cli("import", "--format", "assay-json", str(doc), home=assay_home)
    assert proc.returncode != 0
    assert "schema_version 99" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr


def test_compare_and_history_as_html_render_in_chromium(imported_runs, tmp_path: Path):
    home, runs = imported_runs
    pages = {
        "compare": run_cli("compare", runs[0], runs[1], "--format", "html", home=home),
        "history": run_cli(
            "history", "p2p.latency", "--params", "size=8", "--format", "html", home=home
        ),
    }
    facts = {}
    with Browser() as browser:
        for name, proc in pages.items():
            assert proc.returncode == 0, proc.stderr
            path = tmp_path / f"{name}.html"
            path.write_text(proc.stdout)
            visit = browser.visit(path, FACTS_JS)
            _artifact(f"{name}.png", visit.screenshot)
            assert visit.errors() == [] and visit.requests == [path.resolve().as_uri()]
            facts[name] = json.loads(visit.facts)
    assert [p["id"] for p in facts["compare"]["plots"]] == ["plot-compare"]
    assert facts["compare"]["tables"] and "verdict" in facts["compare"]["text"]
    # one plot per series (the imports share one: same host, same planned params)
    assert "plot-history-0" in {p["id"] for p in facts["history"]["plots"]}
    assert all(p["svg"] and p["width"] > 300 for p in facts["history"]["plots"])


def test_a_hostile_host_name_stays_text_in_the_system_table():
    from assay.model import System
    from assay.report.render import markdown_table
    from assay.report.system import system_table

    t = system_table(System(hostname=HOSTILE, cpu_model="A | B <b>"), [HOSTILE])
    text = page("r", [], [t])
    assert "<script>" not in text and "<b>" not in text
    assert "<td>A | B &lt;b&gt;</td>" in text
    rows = [ln for ln in markdown_table(t) if ln.startswith("| Host")]
    assert rows == ["| Host | \\<script>alert(1)\\</script>\\| |"]
