"""The probe registry: every probe assay can plan, by name."""

from __future__ import annotations

from assay.errors import SuiteError
from assay.probes.base import JobDraft, PlanContext, Probe, ProbeParams, parse_jsonl
from assay.probes.p2p import P2PProbe
from assay.probes.stream import StreamProbe

PROBES: dict[str, Probe] = {p.name: p for p in (StreamProbe(), P2PProbe())}


def get_probe(name: str) -> Probe:
    try:
        return PROBES[name]
    except KeyError:
        raise SuiteError(
            f"unknown probe {name!r}", hint=f"known probes: {', '.join(sorted(PROBES))}"
        ) from None


__all__ = ["PROBES", "JobDraft", "PlanContext", "Probe", "ProbeParams", "get_probe", "parse_jsonl"]
