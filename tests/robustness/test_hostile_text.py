"""Text from outside (labels, imported file and benchmark names, published pages) written out
as each format needs: Markdown that renders as the text itself (checked with a real CommonMark +
GFM-tables parser), no terminal escape sequence reaching a terminal, plot files inside their
directory whatever the benchmark is called, and a reference file that is valid TOML whatever the
run's label holds (issue 19's "Markdown is Markdown", issue 21's terminal, plot and TOML parts).
"""

from __future__ import annotations

import json
import re
import tomllib
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from assay.model import JobResult, Sample, System
from assay.report.render import markdown_table
from assay.report.table import Table
from assay.store import RunStore
from assay.textutil import markdown, terminal, toml_string, visible
from conftest import run_cli

FIX = Path(__file__).parents[1] / "fixtures"
SEEDS = Path("/work/shared/seeds")

# Real text: cells and notes of the published pages (seeds/000, 003; references/sets), and the
# report's own phrases; then what a hostile label could hold.
PUBLISHED = [
    "RDMA latency & bandwidth",
    "IOR sur 4* disques SSD Azure Premium (disques P30 managés, RAID0)**",
    "IOR on 4 * Azure Premium SSD (P30 Managed Disks, RAID0)",
    "~260 GB/s (32-33 GB/s per CCX)",
    "~1,000 GigaFLOPS (Rpeak), ~860 GigaFLOPS (Rmax)",
    "The summary's RDMA latency, 2.35 usec, is t_min of the 2-byte ib_send_lat row, not its "
    "t_typical.",
    "Latency [us] (MPICH 3.3 + CH4)",
    "`nc4as-t4-v3`, 1x `Standard_NC4as_T4_v3`, slurmd, edge, 116",
    "[benchmarking suite documentation](https://github.com/charmed-hpc/charmed-hpc-benchmarks/)",
]
HOSTILE = [
    "<script>alert(1)</script>|",
    "a|b\\|c\\",
    "&amp; &#60; &#x3C; &copy;",
    "*bold* **strong** _em_ __em__ ~~gone~~ ~gone~ a*b*c",
    "x_y_z snake_case _leading trailing_",
    "[x](javascript:alert(1)) ![img](http://e/x.png) [ref][r] <http://e> <a href=x>a</a>",
    "`code` ``two``",
    "# not a heading",
    "> not a quote",
    "- not a list",
    "1. not a list",
    "---",
    "===",
    "~~~",
    "    four spaces",
    "[r]: http://evil.example",
    "trailing hash #",
    "lab\x1b]0;PWNED\x07\x1b[2J x\x7f\x9b31m",
    "bidi \u202egnp.exe\u202c",
]


def _gfm() -> MarkdownIt:
    return MarkdownIt("gfm-like").disable("linkify")  # tables, strikethrough, raw HTML


class _Cells(HTMLParser):
    """The rendered page's cells, paragraphs and every element it has."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[str] = []
        self.blocks: list[tuple[str, str]] = []  # (tag, text) of th, td, h2 and p
        self._open: list[list] = []

    def handle_starttag(self, tag: str, attrs) -> None:
        self.tags.append(tag)
        if tag in ("th", "td", "h2", "p"):
            self._open.append([tag, ""])

    def handle_endtag(self, tag: str) -> None:
        if self._open and self._open[-1][0] == tag:
            t, text = self._open.pop()
            self.blocks.append((t, text))

    def handle_data(self, data: str) -> None:
        if self._open:
            self._open[-1][1] += data


def _rendered(lines: list[str]) -> _Cells:
    parser = _Cells()
    parser.feed(_gfm().render("\n".join(lines)))
    return parser


def _shown(text: str) -> str:
    """What a reader must see: the text, lines folded, controls written out (a cell's and a
    line's leading and trailing spaces are not shown by any Markdown)."""
    return visible(" ".join(text.splitlines()), keep="\t").strip()


@pytest.mark.parametrize("text", PUBLISHED + HOSTILE)
def test_a_markdown_cell_and_note_render_as_the_text_itself(text: str):
    t = Table("x", text, ["#bytes", text], [["1", text], ["2", "3"]], [text, "second note"])
    t.best = {(0, 1), (1, 1)}  # a best cell is wrapped in "**": the data must not pair with it
    page = _rendered(markdown_table(t))
    cells = [b for b in page.blocks if b[0] in ("th", "td")]
    assert cells == [("th", "#bytes"), ("th", _shown(text)), ("td", "1"), ("td", _shown(text)),
                     ("td", "2"), ("td", "3")]  # fmt: skip
    assert ("h2", _shown(text)) in page.blocks
    assert ("p", f"{_shown(text)}\nsecond note") in page.blocks
    # no element but the table's own, the title, the notes' paragraph and the two bold cells
    assert set(page.tags) <= {"h2", "table", "thead", "tbody", "tr", "th", "td", "p", "br",
                              "strong"}  # fmt: skip
    assert page.tags.count("strong") == 2


def test_published_text_reads_as_published_in_markdown():
    # the text of a Markdown report is read as often as it is rendered: no HTML entities
    assert markdown("RDMA latency & bandwidth") == "RDMA latency & bandwidth"
    assert markdown("IOR on 4 * Azure Premium SSD") == "IOR on 4 * Azure Premium SSD"
    assert markdown("~260 GB/s") == "~260 GB/s"
    assert markdown("t_min of ib_send_lat") == "t_min of ib_send_lat"
    assert markdown("2 > 1 < 3") == "2 > 1 < 3"


def test_references_as_markdown_have_no_html_entities(assay_home: Path):
    out = run_cli("references", "azure-hb", "-f", "md", home=assay_home, check=True).stdout
    assert "| RDMA latency & bandwidth | 2.35 usec, 96.5 Gb/s |" in out
    assert "&amp;" not in out and "&gt;" not in out and "&lt;" not in out
    page = _rendered(out.splitlines())
    assert ("td", "RDMA latency & bandwidth") in page.blocks
    assert ("td", "~260 GB/s (32-33 GB/s per CCX)") in page.blocks
    assert "s" not in page.tags and "em" not in page.tags  # no stray strikethrough or emphasis


# -- terminals --------------------------------------------------------------------------------

# An OSC that sets the window title, a clear screen, a one-byte CSI (U+009B), a bell, DEL.
ESCAPES = "\x1b]0;PWNED\x07\x1b[2J\x9b31m\x7f"
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # any control but newline and tab


def _import(home: Path, *args: str) -> str:
    proc = run_cli("import", *args, home=home)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert not RAW.search(proc.stdout + proc.stderr), "import echoed a raw control character"
    return re.search(r"stored as run (\S+);", proc.stdout + proc.stderr).group(1)


def test_escape_sequences_never_reach_the_terminal_and_stay_stored(
    assay_home: Path, tmp_path: Path
):
    # a real osu_latency output under a file name, and a real IMB output with a benchmark name,
    # that hold escape sequences; the import's label holds them too
    osu = tmp_path / f"osu{ESCAPES}.out"
    osu.write_bytes((FIX / "osu" / "alaska_ompi4_ucx_osu_latency.out").read_bytes())
    imb = tmp_path / "imb.txt"
    text = (FIX / "imb" / "oci_imb2018_ompi4.1.2_alltoall_4nodes.txt").read_text()
    imb.write_text(text.replace("Benchmarking Alltoall", f"Benchmarking All{ESCAPES}toall"))
    run_id = _import(assay_home, "--label", f"MVAPICH{ESCAPES}", str(osu), str(imb))
    for args in (("runs",), ("report",), ("report", "-f", "md"), ("report", "-f", "csv"),
                 ("history", "p2p.latency"), ("compare", run_id, run_id),
                 ("label", run_id, f"after{ESCAPES}")):  # fmt: skip
        proc = run_cli(*args, home=assay_home)
        assert proc.returncode == 0, (args, proc.stderr)
        shown = proc.stdout + proc.stderr
        assert not RAW.search(shown), (args, RAW.search(shown))
    report = run_cli("report", home=assay_home, check=True).stdout
    assert "after\\x1b]0;PWNED\\x07\\x1b[2J\\x9b31m\\x7f" in report  # shown, escaped
    assert "all\\x1b]0;pwned\\x07\\x1b[2j\\x9b31m\\x7ftoall" in report  # the benchmark's table
    # what is stored is never changed: the label and the sample's source as they came
    run_dir = assay_home / "runs" / run_id
    assert json.loads((run_dir / "run.json").read_text())["label"] == f"after{ESCAPES}"
    stored = (run_dir / "samples.jsonl").read_text()
    assert json.dumps(f"osu{ESCAPES}.out")[1:-1] in stored
    # JSON output keeps the exact text (json escapes every control character)
    doc = json.loads(run_cli("report", "-f", "json", home=assay_home, check=True).stdout)
    assert doc["run"]["label"] == f"after{ESCAPES}"


def test_an_error_naming_a_hostile_file_is_shown_escaped(assay_home: Path, tmp_path: Path):
    bad = tmp_path / f"x{ESCAPES}.txt"
    bad.write_text("not any tool's output\n")
    proc = run_cli("import", str(bad), home=assay_home)
    assert proc.returncode != 0 and "x\\x1b]0;PWNED" in proc.stdout + proc.stderr
    assert not RAW.search(proc.stdout + proc.stderr)


def test_terminal_text_keeps_lines_and_shows_every_control():
    assert terminal("a\nb\tc") == "a\nb\tc"
    assert terminal("\x1b[2J\r\x00\x9b\u202e") == "\\x1b[2J\\x0d\\x00\\x9b\\u202e"
    assert terminal("a\udcffb") == "a\\udcffb"  # a non-UTF-8 file name: printable, not a crash


# -- plot files -------------------------------------------------------------------------------


def test_plot_files_stay_in_their_directory_whatever_the_benchmark_is_called(
    assay_home: Path, tmp_path: Path
):
    text = (FIX / "imb" / "oci_imb2018_ompi4.1.2_alltoall_4nodes.txt").read_text()
    blocks = text.split("# Benchmarking Alltoall")
    assert len(blocks) == 3  # two blocks (2 and 4 ranks): name them differently
    names = ["All/toall", "../../../escaped"]
    imb = tmp_path / "imb.txt"
    imb.write_text(blocks[0] + f"# Benchmarking {names[0]}" + blocks[1]
                   + f"# Benchmarking {names[1]}" + blocks[2])  # fmt: skip
    _import(assay_home, "--format", "imb", str(imb))
    plots = tmp_path / "deep" / "plots"
    proc = run_cli("report", "--plots-dir", str(plots), home=assay_home)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    written = sorted(p.name for p in plots.iterdir())
    assert all(p.is_file() for p in plots.iterdir())
    assert not list((tmp_path / "deep").glob("*.svg")) and not list(tmp_path.glob("*.svg"))
    assert "plot-coll-all-toall.svg" in written and "plot-coll-all-toall.png" in written
    assert "plot-coll-..-..-..-escaped.svg" in written


def test_two_plot_keys_that_make_one_file_name_get_two_files(tmp_path: Path):
    from assay.report.plots import draw, file_stems, write_plots
    from assay.report.plots.of_run import Chart

    def chart(key: str) -> Chart:
        return Chart(key, key, "x", lambda: draw.latency_vs_size([draw.Line("a", [1, 2], [1, 2])],
                                                                  key))  # fmt: skip

    paths = write_plots([chart("plot-coll-a/b"), chart("plot-coll-a:b"), chart("x" * 400)],
                        tmp_path)  # fmt: skip
    assert len({p.name for p in paths}) == 6
    assert all(p.parent == tmp_path and len(p.name) < 200 for p in paths)
    # a key that was a safe name keeps it (IMB's Reduce_scatter: "_" stays)
    safe = ["plot-p2p-latency", "plot-coll-reduce_scatter", "plot-memory.latency"]
    assert file_stems(safe) == safe


def test_a_plots_dir_that_cannot_be_written_is_a_message(assay_home: Path, tmp_path: Path):
    _import(assay_home, str(FIX / "osu" / "alaska_ompi4_ucx_osu_latency.out"))
    blocker = tmp_path / "plots"
    blocker.mkdir()
    (blocker / "plot-p2p-latency.svg").mkdir()  # a directory where the file must go
    proc = run_cli("report", "--plots-dir", str(blocker), home=assay_home)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "cannot write the plot" in proc.stderr


# -- reference TOML ---------------------------------------------------------------------------

LABEL = 'del\x7f nul\x00 esc\x1b quote" back\\slash tab\t nl\n emoji\U0001f600 \u202e'


def _stored_run(home: Path, label: str) -> str:
    store = RunStore(home)
    w = store.create(suite="t", suite_text="", system=System(hostname="h"), argv=[], label=label)
    s = Sample.make("stream", "memory.triad", 10e9, {"scope": "node", "threads": 2})
    s.job_id = "001-stream"
    w.record(JobResult(job_id="001-stream", status="ok", exit_code=0, wall_time=1, argv=[]), [s])
    w.finish("complete")
    return w.info.run_id


def test_references_add_writes_valid_toml_whatever_the_label(assay_home: Path, tmp_path: Path):
    refs = tmp_path / "refs"
    run_id = _stored_run(assay_home, LABEL)
    proc = run_cli("references", "add", "--from", run_id, "mine", home=assay_home,
                   env={"ASSAY_REFERENCES": str(refs)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    data = tomllib.loads((refs / "mine.toml").read_text())
    assert data["title"] == f"run {run_id} (t): {LABEL}"  # every character read back
    assert not (refs / ".writing").exists()
    shown = run_cli("references", "mine", home=assay_home, env={"ASSAY_REFERENCES": str(refs)})
    assert shown.returncode == 0 and not RAW.search(shown.stdout)


def test_references_add_leaves_nothing_behind_when_it_fails(assay_home: Path, tmp_path: Path):
    refs = tmp_path / "refs"
    (refs / "mine.toml").mkdir(parents=True)  # the target is a directory: the rename fails
    run_id = _stored_run(assay_home, "x")
    proc = run_cli("references", "add", "--from", run_id, "--force", "mine", home=assay_home,
                   env={"ASSAY_REFERENCES": str(refs)})  # fmt: skip
    assert proc.returncode == 2 and "cannot write" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (refs / ".writing").exists()


@pytest.mark.parametrize("text", [LABEL, "a\udcffb", "", "\\u0041", "'''", '"""'])
def test_a_toml_string_reads_back_as_the_text(text: str):
    value = tomllib.loads(f"x = {toml_string(text)}")["x"]
    # a lone surrogate is no Unicode scalar value: TOML cannot hold it, its escape is kept
    assert value == text.replace("\udcff", "\\udcff")


def test_a_csv_cell_is_never_a_spreadsheet_formula(assay_home: Path):
    """issue 28: a probe, job, metric or unit starting with ``=``, ``+``, ``-``, ``@`` was a
    CSV cell a spreadsheet executes; it is kept as text with a leading ``'`` (OWASP)."""
    import csv
    import io

    from assay.model import JobResult, Sample, System
    from assay.store import RunStore
    from assay.textutil import csv_text

    assert csv_text('=HYPERLINK("http://x")') == '\'=HYPERLINK("http://x")'
    assert [csv_text(t) for t in ("+1", "-1", "@SUM(A1)", "\tx", "ok", "1-2")] == [
        "'+1",
        "'-1",
        "'@SUM(A1)",
        "'\tx",
        "ok",
        "1-2",
    ]
    store = RunStore(assay_home)
    w = store.create(suite="t", suite_text="", system=System(hostname="h"), argv=[])
    s = Sample.make("=cmd|' /C calc'!A0", "memory.triad", 1e9, {"label": "=1+1"})
    w.record(JobResult(job_id="@SUM(1+1)", status="ok", exit_code=0, wall_time=1, argv=[]), [s])
    w.finish("complete")
    proc = run_cli("report", "-f", "csv", home=assay_home)
    assert proc.returncode == 0, proc.stderr
    rows = list(csv.reader(io.StringIO(proc.stdout)))
    text_columns = [i for i, name in enumerate(rows[0]) if name not in ("value",)
                    and not name.startswith("stats_")]  # fmt: skip
    for row in rows[1:]:
        for i in text_columns:
            assert not row[i].startswith(("=", "+", "-", "@")), (rows[0][i], row[i])
    assert rows[1][2] == "'=cmd|' /C calc'!A0"


def test_a_non_utf8_label_or_host_keeps_its_run_in_the_index(assay_home: Path):
    """issue 28: a label or host name with a lone surrogate (``--label $'\\xff'``) could not be
    stored by SQLite: the run was skipped as damaged, gone from ``runs`` and ``history``."""
    from assay.model import JobResult, Sample, System
    from assay.store import RunStore

    store = RunStore(assay_home)
    w = store.create(suite="t", suite_text="", system=System(hostname="h\udcfe"), argv=[],
                     label="lab\udcff")  # fmt: skip
    s = Sample.make("stream", "memory.triad", 1e9, {})
    w.record(JobResult(job_id="001", status="ok", exit_code=0, wall_time=1, argv=[]), [s])
    w.finish("complete")
    runs = run_cli("runs", home=assay_home)
    assert runs.returncode == 0 and w.info.run_id in runs.stdout, runs.stdout + runs.stderr
    assert "damaged" not in runs.stderr and "lab\\udcff" in runs.stdout
    hist = run_cli("history", "memory.triad", home=assay_home)
    assert hist.returncode == 0, hist.stderr
