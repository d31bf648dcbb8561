"""The probe registry: every probe assay can plan, by name.

Each module of this package that defines a ``Probe`` subclass with a ``name`` registers it;
adding a probe means adding a module, nothing else.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

from assay.errors import SuiteError
from assay.probes.base import JobDraft, PlanContext, Probe, ProbeParams, parse_jsonl


def _discover() -> dict[str, Probe]:
    found: dict[str, Probe] = {}
    for module_info in pkgutil.iter_modules(__path__):
        if module_info.name.startswith("_") or module_info.name == "base":
            continue
        module = importlib.import_module(f"{__name__}.{module_info.name}")
        for _, cls in inspect.getmembers(module, inspect.isclass):
            if (
                issubclass(cls, Probe)
                and not inspect.isabstract(cls)
                and cls.__module__ == module.__name__
            ):
                found[cls.name] = cls()
    return dict(sorted(found.items()))


PROBES: dict[str, Probe] = _discover()


def get_probe(name: str) -> Probe:
    try:
        return PROBES[name]
    except KeyError:
        raise SuiteError(
            f"unknown probe {name!r}", hint=f"known probes: {', '.join(PROBES)}"
        ) from None


__all__ = ["PROBES", "JobDraft", "PlanContext", "Probe", "ProbeParams", "get_probe", "parse_jsonl"]
