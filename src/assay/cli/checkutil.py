"""Small helpers the modules of ``assay check`` share: a message line, the index sync after a
run, a JSON file written whole."""

from __future__ import annotations

import json
from pathlib import Path

from rich.text import Text

from assay.cli.common import console, open_index, open_store
from assay.errors import AssayError


def sync_index() -> None:
    try:
        open_index(open_store()).close()
    except AssayError as exc:  # the results are in the run directory whatever the index says
        console.print(Text(f"warning: {exc}", style="yellow"))


def write_json(path: Path, data: dict) -> None:
    from assay.store.rundir import write_atomic

    write_atomic(path, json.dumps(data, indent=1, default=str) + "\n")


def say(text: str) -> None:
    console.print(Text(text))
