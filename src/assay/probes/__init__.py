"""The probe registry: every probe assay can plan, by name.

Each module of this package that defines a ``Probe`` subclass with a ``name`` registers it;
adding a probe means adding a module, nothing else. The module is named after its probe
(``probes/stream.py`` holds "stream"; tests/architecture checks it), so ``get_probe`` imports
the one module a job needs: a command that plans a memory suite no longer imports fio's, HPL's
and the all-pairs matrix's modules (numpy among them), 0.4 s of every start on a small VM.
Reading the whole registry (``PROBES``) still imports every module, once.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Iterator, Mapping
from types import ModuleType

from assay.errors import SuiteError
from assay.probes.base import JobDraft, PlanContext, Probe, ProbeParams, parse_jsonl


def _probes_of(module: ModuleType) -> dict[str, Probe]:
    """The probes ``module`` itself defines (not those it imports), by name."""
    return {
        cls.name: cls()
        for _, cls in inspect.getmembers(module, inspect.isclass)
        if issubclass(cls, Probe)
        and not inspect.isabstract(cls)
        and cls.__module__ == module.__name__
    }


def _module_names() -> list[str]:
    return [
        m.name
        for m in pkgutil.iter_modules(__path__)
        if not m.name.startswith("_") and m.name != "base"
    ]


class _Registry(Mapping[str, Probe]):
    """Every probe by name, its modules imported on the first look at the whole table."""

    def __init__(self) -> None:
        self._loaded: dict[str, Probe] = {}
        self._read: set[str] = set()  # the modules read: each probe is made once
        self._complete = False

    def _read_module(self, name: str) -> None:
        if name not in self._read:
            self._read.add(name)
            self._loaded.update(_probes_of(importlib.import_module(f"{__name__}.{name}")))

    def _all(self) -> dict[str, Probe]:
        if not self._complete:
            for name in _module_names():
                self._read_module(name)
            self._loaded = dict(sorted(self._loaded.items()))
            self._complete = True
        return self._loaded

    def one(self, name: str) -> Probe | None:
        """The probe ``name``, importing only its own module where there is one."""
        if name not in self._loaded and not self._complete and name in _module_names():
            self._read_module(name)
        if name not in self._loaded:  # a module holding another name's probe: look at all
            self._all()
        return self._loaded.get(name)

    def __getitem__(self, name: str) -> Probe:
        return self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


PROBES = _Registry()


def get_probe(name: str) -> Probe:
    probe = PROBES.one(name)
    if probe is None:
        raise SuiteError(f"unknown probe {name!r}", hint=f"known probes: {', '.join(PROBES)}")
    return probe


__all__ = ["PROBES", "JobDraft", "PlanContext", "Probe", "ProbeParams", "get_probe", "parse_jsonl"]
