"""``assay runs``: the stored runs as a table, newest last, and only the newest by default.

A store gathers runs for years (a nightly run is 365 a year; imports add more): drawing every
one of them is seconds of table layout and a screen nobody reads. As ``git log`` pages, the
list shows the newest ``DEFAULT_LIMIT`` and says how many more there are and how to see them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from rich.table import Table
from rich.text import Text

from assay.textutil import terminal

DEFAULT_LIMIT = 20
COLUMNS = ("suite", "status", "host", "jobs", "failed", "samples", "label")


def runs_table(rows: list[dict[str, Any]], runs_dir: Path) -> Table:
    """The runs (oldest first, as given) as one table; every cell is data, never markup."""
    t = Table(title=f"Runs in {runs_dir}", title_justify="left")
    widest = max((len(str(r["run_id"])) for r in rows), default=3)
    t.add_column("run", no_wrap=True, min_width=widest)  # ids are what users copy: never cut
    for col in COLUMNS:
        t.add_column(col)
    for r in rows:
        # a run whose assay died was closed ("interrupted") when the store was opened
        cells = (r["run_id"], r["suite"], r["status"], r["hostname"], r["n_jobs"])
        cells += (r["n_failed"], r["n_samples"], r["label"])
        # Text, not str: "[/]" in a label is data, never rich markup; an escape sequence in
        # one is shown, never sent to the terminal
        t.add_row(*(Text(terminal(c)) for c in cells))
    return t


def more_line(shown: int, total: int) -> str | None:
    """What the table leaves out, and how to see it; None when it shows every run."""
    hidden = total - shown
    if hidden <= 0:
        return None
    older = "run" if hidden == 1 else "runs"
    return (
        f"showing the newest {shown} of {total:,} runs; {hidden:,} older {older} not shown: "
        "assay runs --all, or --limit N"
    )
