"""How far below its baseline a figure may be: the limits of ``assay check``'s grades, and its
``[check]`` table in the config (declared here: ``CheckTable``).

**Limits** (defaults; ``[check.warn_below]`` / ``[check.fail_below]`` in the config, keyed by a
metric, a family or ``default``, and ``--warn-below`` / ``--fail-below`` on the command line):

    default (memory, compute, gpu)   warn below 0.95, fail below 0.90 (the node rule's 10 %)
    storage                          warn below 0.80, fail below 0.50 (shared storage is noisy)
    p2p (links)                      warn below 0.80, fail below 0.50 (the link rule's 1.25x)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field

from assay.analysis.statistics.outliers import THRESHOLD
from assay.config.schema import ConfigTable, Name, Ratio, Section, table_defaults, validate_section
from assay.errors import ConfigError


@dataclass(frozen=True)
class Limits:
    warn_below: float
    fail_below: float


DEFAULT_LIMITS = {
    "default": Limits(0.95, 0.90),
    "storage": Limits(0.80, 0.50),
    "p2p": Limits(0.80, 0.50),
}


class CheckTable(ConfigTable):
    """``[check]``: what ``assay check`` judges against and how far below it a figure may be
    (limits keyed by a metric, a family or ``default``)."""

    baseline: Name | list[Name] | None = Field(
        None, description="the reference set each node is held to (a list: one per node type; "
        "default: the median of its peers)",
    )  # fmt: skip
    retest: bool = Field(True, description="re-measure each FAIL before it stands")
    warn_below: dict[Name, Ratio] = Field({}, description="WARN below this ratio to the baseline")
    fail_below: dict[Name, Ratio] = Field({}, description="FAIL below this ratio to the baseline")


SECTION = Section("check", CheckTable)
CHECK_KEYS = frozenset(CheckTable.model_fields)
_DEFAULT = table_defaults(CheckTable)


@dataclass(frozen=True)
class CheckRule:
    """How figures are graded: the user's limits (by metric, family or ``default``) over the
    defaults, the z threshold for peers, whether a FAIL is re-measured, and the baselines."""

    warn_below: Mapping[str, float] = field(default_factory=dict)
    fail_below: Mapping[str, float] = field(default_factory=dict)
    threshold: float = THRESHOLD
    retest: bool = _DEFAULT["retest"]
    baselines: tuple[str, ...] = ()

    def limits(self, metric: str) -> Limits:
        family = metric.split(".", 1)[0]
        base = DEFAULT_LIMITS.get(metric) or DEFAULT_LIMITS.get(family) or DEFAULT_LIMITS["default"]

        def pick(table: Mapping[str, float], default: float) -> float:
            for key in (metric, family, "default"):
                if key in table:
                    return table[key]
            return default

        fail = pick(self.fail_below, base.fail_below)
        warn = pick(self.warn_below, base.warn_below)
        return Limits(max(warn, fail), fail)  # a fail line above the warn line raises both


def check_rule(config: Mapping[str, Any], threshold: float = THRESHOLD) -> CheckRule:
    """The rule from the config's ``[check]`` table, checked by its declaration: ``baseline``
    (a name or a list, one per node type), ``retest``, ``warn_below`` and ``fail_below``."""
    table = {**_DEFAULT, **validate_section(SECTION, config.get("check"), "config")}
    baseline = table["baseline"] or ()
    return CheckRule(
        warn_below={str(k): float(v) for k, v in table["warn_below"].items()},
        fail_below={str(k): float(v) for k, v in table["fail_below"].items()},
        threshold=threshold,
        retest=table["retest"],
        baselines=(baseline,) if isinstance(baseline, str) else tuple(baseline),
    )


def limit_args(specs: Iterable[str], flag: str) -> dict[str, float]:
    """``--fail-below 0.9`` (every metric) or ``--fail-below memory.triad=0.85`` (repeatable)."""
    out: dict[str, float] = {}
    for spec in specs:
        key, sep, value = spec.rpartition("=")
        try:
            ratio = float(value)
        except ValueError:
            ratio = math.nan
        if (sep and not key) or not 0 < ratio <= 1:
            raise ConfigError(
                f"{flag} {spec!r}: expected RATIO or METRIC=RATIO, a ratio above 0 and at most "
                f"1 (e.g. {flag} 0.9, {flag} memory.triad=0.85)"
            )
        out[key or "default"] = ratio
    return out
