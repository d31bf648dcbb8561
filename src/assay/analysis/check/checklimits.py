"""How far below its baseline a figure may be: the limits of ``assay check``'s grades, and its
``[check]`` table in the config.

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

from assay.analysis.statistics.outliers import THRESHOLD
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
CHECK_KEYS = frozenset({"baseline", "retest", "warn_below", "fail_below"})  # of [check]
LIMIT_HINT = (
    'e.g. [check.fail_below] default = 0.9, "memory.triad" = 0.85, storage = 0.5 '
    "(a ratio to the baseline: 0.9 is 10 % worse)"
)


@dataclass(frozen=True)
class CheckRule:
    """How figures are graded: the user's limits (by metric, family or ``default``) over the
    defaults, the z threshold for peers, whether a FAIL is re-measured, and the baselines."""

    warn_below: Mapping[str, float] = field(default_factory=dict)
    fail_below: Mapping[str, float] = field(default_factory=dict)
    threshold: float = THRESHOLD
    retest: bool = True
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


def _limit_table(value: Any, where: str) -> dict[str, float]:
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where} in the config must be a table", hint=LIMIT_HINT)
    out = {}
    for key, v in value.items():
        if isinstance(v, bool) or not isinstance(v, int | float) or not 0 < v <= 1:
            raise ConfigError(
                f"{where} {key} = {v!r}: expected a ratio above 0 and at most 1", hint=LIMIT_HINT
            )
        out[str(key)] = float(v)
    return out


def check_rule(config: Mapping[str, Any], threshold: float = THRESHOLD) -> CheckRule:
    """The rule from the config's ``[check]`` table: ``baseline`` (a name or a list, one per
    node type), ``retest`` (true), ``warn_below`` and ``fail_below`` tables."""
    table = config.get("check") or {}
    if not isinstance(table, Mapping):
        raise ConfigError("[check] in the config must be a table", hint=LIMIT_HINT)
    known = CHECK_KEYS
    unknown = sorted(set(table) - known)
    if unknown:
        raise ConfigError(
            f"[check] has unknown key(s): {', '.join(unknown)}",
            hint=f"known: {', '.join(sorted(known))}",
        )
    baseline = table.get("baseline", ())
    baselines = (baseline,) if isinstance(baseline, str) else tuple(baseline)
    if not all(isinstance(b, str) and b for b in baselines):
        raise ConfigError(f"[check] baseline = {baseline!r}: expected a name or a list of names")
    retest = table.get("retest", True)
    if not isinstance(retest, bool):
        raise ConfigError(f"[check] retest = {retest!r}: expected true or false")
    return CheckRule(
        warn_below=_limit_table(table.get("warn_below", {}), "[check.warn_below]"),
        fail_below=_limit_table(table.get("fail_below", {}), "[check.fail_below]"),
        threshold=threshold,
        retest=retest,
        baselines=baselines,
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
