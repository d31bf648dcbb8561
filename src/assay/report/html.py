"""The report as one self-contained HTML page: the seed-style tables with their plots.

Everything is inline (CSS in ``<style>``, plots as ``<svg>`` with text drawn as paths), and a
Content-Security-Policy forbids every fetch and every script, so the page opens the same from a
laptop or a shared file system and a hostile string in a label can neither run nor load
anything. All data go through :func:`esc`; the only unescaped markup is our own and the SVG
matplotlib wrote (which escapes its text itself).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from assay.report.plots import Chart, svg_of
from assay.report.table import Table
from assay.textutil import html_text

# No fetch of any kind, no script; inline style and the inline SVG only.
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'none'"

CSS = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #1b1f24;
       max-width: 1100px; margin: 2em auto; padding: 0 1em; }
h1 { font-size: 1.6em; margin-bottom: .2em; } h2 { font-size: 1.2em; margin-top: 2em;
     border-bottom: 1px solid #d0d7de; padding-bottom: .2em; }
.meta { color: #57606a; margin: .1em 0; }
nav ul { columns: 2; font-size: .9em; padding-left: 1.2em; }
table { border-collapse: collapse; margin: .6em 0; font-variant-numeric: tabular-nums; }
th, td { border: 1px solid #d0d7de; padding: .25em .6em; text-align: right; }
th { background: #f6f8fa; } td:first-child, th:first-child { text-align: left; }
table.text td, table.text th { text-align: left; }
td.best { font-weight: 700; background: #dafbe1; }
td.worse { background: #ffebe9; } td.better { background: #dafbe1; }
pre { background: #f6f8fa; padding: .5em; font-size: .85em; white-space: pre-wrap;
      overflow-wrap: anywhere; }
p.note { color: #57606a; font-size: .9em; margin: .2em 0; }
figure { margin: 1em 0; } figure svg { max-width: 100%; height: auto; }
figcaption { color: #57606a; font-size: .9em; }
.warn { background: #fff8c5; padding: .5em; border: 1px solid #d4a72c; }
td.g-pass { background: #dafbe1; } td.g-warn { background: #fff8c5; }
td.g-fail { background: #ffebe9; font-weight: 700; }
"""
GRADES = ("PASS", "WARN", "FAIL")  # assay check's verdict cells are coloured by grade

# Tables whose cells are words, not figures: left-aligned.
TEXT_TABLES = ("system", "failures", "other", "compare")


# Any data as HTML text: ``<``, ``>``, ``&`` and both quotes escaped, controls shown
# (assay.textutil: the one HTML escaping).
esc = html_text


def anchor(key: str) -> str:
    """An id from a key: only letters, digits and ``-`` (a key may hold an import's label)."""
    return "".join(c if c.isalnum() else "-" for c in key).strip("-") or "x"


def table_html(t: Table) -> list[str]:
    """One table as a section: title, the commands that made it, the table, its notes."""
    out = [f'<section id="t-{anchor(t.key)}" class="table">', f"<h2>{esc(t.title)}</h2>"]
    out += [f"<pre>$ {esc(cmd)}</pre>" for cmd in t.commands]
    cls = ' class="text"' if t.key.startswith(TEXT_TABLES) else ""
    out.append(f"<table{cls}>")
    if t.key != "system":
        out.append(
            "<thead><tr>" + "".join(f"<th>{esc(c)}</th>" for c in t.columns) + "</tr></thead>"
        )
    out.append("<tbody>")
    for r, row in enumerate(t.rows):
        cells = []
        for i, c in enumerate(row):
            tag = "th" if t.key == "system" and i == 0 else "td"
            klass = ""
            if (r, i) in t.best:
                klass = ' class="best"'
            elif t.key == "compare" and i == len(row) - 1:
                klass = f' class="{esc(str(c).split()[0] if str(c).strip() else "")}"'
            elif t.key.startswith("check") and str(c).split(" ")[0] in GRADES:
                klass = f' class="g-{str(c).split(" ")[0].lower()}"'
            cells.append(f"<{tag}{klass}>{esc(c)}</{tag}>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    out.append("</tbody></table>")
    out += [f'<p class="note">{esc(n)}</p>' for n in t.notes]
    out.append("</section>")
    return out


def chart_html(chart: Chart) -> list[str]:
    return [
        f'<figure id="{anchor(chart.key)}" class="plot">',
        svg_of(chart),
        f"<figcaption>{esc(chart.title)}</figcaption>",
        "</figure>",
    ]


def page(
    title: str,
    head: Iterable[str],
    tables: list[Table],
    charts: list[Chart] = (),  # type: ignore[assignment]
    warnings: Iterable[str] = (),
) -> str:
    """The whole page: title, header lines, a contents list, each table followed by its plots
    (a chart sits after the first table whose key starts with its ``section``); charts with no
    table go last."""
    placed: dict[int, list[Chart]] = {}
    loose = []
    for ch in charts:
        at = next((i for i, t in enumerate(tables) if t.key.startswith(ch.section)), None)
        if at is None:
            loose.append(ch)
        else:
            placed.setdefault(at, []).append(ch)
    out = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{esc(title)}</title>",
        f"<style>{CSS}</style>",
        "</head><body>",
        f"<h1>{esc(title)}</h1>",
    ]
    out += [f'<p class="meta">{esc(line)}</p>' for line in head]
    out += [f'<p class="warn">{esc(w)}</p>' for w in warnings]
    out.append("<nav><ul>")
    for t in tables:
        out.append(f'<li><a href="#t-{anchor(t.key)}">{esc(t.title)}</a></li>')
    out.append("</ul></nav>")
    for i, t in enumerate(tables):
        out += table_html(t)
        for ch in placed.get(i, []):
            out += chart_html(ch)
    if loose:
        out.append('<section id="t-plots"><h2>Plots</h2>')
        for ch in loose:
            out += chart_html(ch)
        out.append("</section>")
    out.append(
        '<p class="meta">Made by assay. Units: GB/s and MB/s = 10^9 and 10^6 B/s, '
        "Gb/s = 10^9 bit/s; n / reps = the repetitions or iterations behind a figure.</p>"
    )
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def sections_page(title: str, sections: list[Any], charts: Iterable[Chart] = ()) -> str:
    """``assay compare`` / ``history`` as a page: their sections (title, columns, rows, notes:
    :class:`assay.report.reference.Section`) as tables, keyed ``s<i>-…`` so a chart whose
    ``section`` is ``s<i>-`` sits after the i-th."""
    tables = [
        Table(f"s{i}-{anchor(sec.title)[:40]}", sec.title, list(sec.columns),
              [list(map(str, r)) for r in sec.rows], list(sec.notes))
        for i, sec in enumerate(sections)
    ]  # fmt: skip
    return page(title, [], tables, list(charts))
