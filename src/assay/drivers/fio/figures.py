"""Totals of one fio run from its json+ document, and its samples as JSON Lines objects."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from assay.parsers.fio import merge_bins, ns_to_s, parse, percentiles_from_bins

DIRECTIONS = ("read", "write", "trim")


@dataclass(frozen=True)
class PointFigures:
    """One fio run's totals over every direction and job."""

    iops: float
    latency_s: float | None  # mean total latency (lat_ns) over every I/O
    p99_s: float | None  # from the merged json+ bins of the total latency
    p999_s: float | None
    completions: int  # I/Os whose latency was measured


def point_figures(doc: Mapping[str, Any]) -> PointFigures:
    """Totals of a fio json+ document: IOPS summed, latency averaged over I/Os (weighted by
    each direction's count), percentiles from merged histogram bins -- never averaged."""
    iops = 0.0
    weighted = 0.0
    count = 0
    bins: list[Mapping[str, int]] = []
    have_bins = True
    for entry in doc.get("jobs") or []:
        if entry.get("error"):
            continue
        for ddir in DIRECTIONS:
            data = entry.get(ddir)
            if not isinstance(data, Mapping) or not data.get("total_ios"):
                continue
            iops += float(data.get("iops", 0.0))
            lat = data.get("lat_ns") or {}
            n = int(lat.get("N", 0))
            if n:
                weighted += float(lat["mean"]) * n
                count += n
                if lat.get("bins"):
                    bins.append(lat["bins"])
                else:
                    have_bins = False
    mean = ns_to_s(weighted / count) if count else None
    p99 = p999 = None
    if bins and have_bins:
        pct = percentiles_from_bins(merge_bins(bins), (99.0, 99.9))
        p99 = ns_to_s(pct[99.0]) if 99.0 in pct else None
        p999 = ns_to_s(pct[99.9]) if 99.9 in pct else None
    return PointFigures(iops, mean, p99, p999, count)


def sample_objects(text: str, source: str, extra: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The samples of one fio output as JSON Lines objects, ``extra`` merged into params."""
    result = parse(text, source)
    out = []
    for s in result.samples:
        obj: dict[str, Any] = {
            "metric": s.metric,
            "value": s.value,
            "unit": s.unit,
            "params": {**s.params, **extra},
        }
        if s.stats is not None:
            obj["stats"] = s.stats.to_dict()
        out.append(obj)
    return out


def load_document(text: str) -> dict[str, Any]:
    """fio's JSON document in its output file. A client writes its hosts' ``<host>`` lines
    before it, so the document starts at the first line that starts with ``{``."""
    m = re.search(r"^\{", text, re.MULTILINE) or re.search(r"\{", text)
    if m is None:
        return {}
    doc, _ = json.JSONDecoder().raw_decode(text, m.start())
    return doc if isinstance(doc, dict) else {}
