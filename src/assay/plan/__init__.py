"""The plan stage: a suite expanded into concrete jobs from the context alone (pure)."""

from assay.plan.expand import BENCH_KEYS, Overrides, apply_overrides, parse_value, plan

__all__ = ["BENCH_KEYS", "Overrides", "apply_overrides", "parse_value", "plan"]
