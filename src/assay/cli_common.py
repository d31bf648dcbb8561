"""What every command module shares: the consoles, the store (recovered on opening) and the
index, and the system as found. No command lives here, so every ``cli_*`` module can import it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from assay.config import assay_home

if TYPE_CHECKING:  # imported when used: the store (sqlite3) would slow every 'assay --help'
    from assay.store import Index, RunStore

console = Console(stderr=True)  # messages and progress
out = Console(highlight=False)  # what the user asked for


def open_store() -> RunStore:
    from assay.store import RunStore, recover

    store = RunStore(assay_home())
    for message in recover(store.home):  # runs left "running" by a killed assay end "interrupted"
        console.print(Text(f"note: {message}", style="yellow"))
    return store


def open_index(store: RunStore) -> Index:
    from assay.store import Index

    index = Index(store.home / "assay.db")
    index.sync(store)
    return index


def discover():
    from assay.system import collect_system
    from assay.toolchain import discover_mpis

    mpis = discover_mpis()
    return collect_system(mpis), mpis
