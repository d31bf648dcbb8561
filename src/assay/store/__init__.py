"""Results: run directories (the source of truth) and an SQLite index rebuilt from them."""

from assay.store.index import Index
from assay.store.recover import recover
from assay.store.rundir import LoadedRun, RunStore, RunWriter

__all__ = ["Index", "LoadedRun", "RunStore", "RunWriter", "recover"]
