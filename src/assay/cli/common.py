"""What every command module shares: the consoles, the store (recovered on opening) and the
index, and the system as found. No command lives here, so every ``cli_*`` module can import it.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from assay.config import assay_home, config_path
from assay.errors import AssayError
from assay.textutil import terminal

if TYPE_CHECKING:  # imported when used: the store (sqlite3) would slow every 'assay --help'
    from assay.store import Index, LoadedRun, RunStore

console = Console(stderr=True)  # messages and progress
out = Console(highlight=False)  # what the user asked for


def write_output(chunks: Iterable[str], output: Path | None) -> None:
    """A report to ``output`` (said on stderr), or to stdout, piece by piece as it comes."""
    if not output:
        for chunk in chunks:
            sys.stdout.write(chunk)
        return
    try:
        with open(output, "w") as f:
            for chunk in chunks:
                f.write(chunk)
    except OSError as exc:
        raise AssayError(
            f"cannot write the report to {output}: {exc.strerror or exc}",
            hint="give a file in a directory that exists and that you can write to",
        ) from exc
    console.print(Text(f"wrote {terminal(output)}"))


def open_store() -> RunStore:
    from assay.store import RunStore, recover

    store = RunStore(assay_home())
    for message in recover(store.home):  # runs left "running" by a killed assay end "interrupted"
        console.print(Text(f"note: {terminal(message)}", style="yellow"))
    return store


def open_index(store: RunStore, *, rebuild: bool = False) -> Index:
    """The index, synced with the run directories (made again if it had to be: said once)."""
    from assay.store import Index

    index = Index(store.home / "assay.db")
    index.sync(store, rebuild=rebuild)
    index_notes(index)
    return index


_SAID: set[str] = set()  # notes already printed by this command


def index_notes(index: Index) -> None:
    """What the index found (each once per command): that it was made again, and why (in a
    sync, or when a query met a damaged page), and the runs it skipped."""
    notes = [f"skipped a damaged run: {skipped}" for skipped in index.skipped]
    if index.rebuilt:
        why = f"the index {index.path} was rebuilt from the run directories: {index.rebuilt}"
        notes.insert(0, f"note: {why}")
    for note in notes:
        if note not in _SAID:
            _SAID.add(note)
            console.print(Text(note, style="yellow"))


def say_damage(notes: Iterable[str]) -> None:
    """Damaged record lines skipped (``assay.store.records``): each note once per command."""
    for note in notes:
        if note not in _SAID:
            _SAID.add(note)
            console.print(Text(f"note: {note}", style="yellow"))


def say_run_damage(*runs: LoadedRun) -> None:
    say_damage(note for run in runs for note in run.damage_notes())


def user_config() -> dict:
    """``load_config()``: the user's config checked against every table, or {} when there is
    no file. The check (the schema, pydantic: 0.12 s of CPU) is imported only for a file."""
    if not config_path().exists():
        return {}  # as load_config says for no file, without importing it
    from assay.run.configfile import load_config

    return load_config()


def discover():
    from assay.system import collect_system
    from assay.toolchain import discover_mpis

    mpis = discover_mpis(user_config())  # the whole config checked: doctor names what is wrong
    return collect_system(mpis), mpis


def print_summary(outcome, elapsed: float, path: Path) -> None:
    """The end of a run (local or Slurm): each job's status, the totals, the run's notes."""
    from rich.table import Table

    t = Table(title=f"Run {outcome.info.run_id} — {outcome.info.status}", title_justify="left")
    for col in ("job", "status", "wall s", "samples"):
        t.add_column(col, justify="right" if col in ("wall s", "samples") else "left")
    for r in outcome.results:
        style = {"ok": "green", "skipped": "yellow"}.get(r.status, "red")
        t.add_row(
            r.job_id, f"[{style}]{r.status}[/{style}]", f"{r.wall_time:.1f}", str(r.n_samples)
        )
    console.print(t)
    skipped = sum(1 for r in outcome.results if r.status == "skipped")
    ok = len(outcome.results) - len(outcome.failed) - skipped
    console.print(
        f"{ok}/{len(outcome.results)} jobs ok"
        + (f", {skipped} skipped (nothing to measure here)" if skipped else "")
        + ", "
        f"{len(outcome.samples)} samples in {elapsed:.0f} s; stored in {path}\n"
        "see the figures with: assay report"
    )
    for note in outcome.info.notes:
        console.print(Text(f"note: {terminal(note)}", style="yellow"))
