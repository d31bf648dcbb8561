"""Suites: TOML files naming probes, parameter sweeps, MPIs and repetitions."""

from assay.suite.loader import builtin_suites, load_suite, resolve_suite
from assay.suite.schema import BenchSpec, SuiteSpec

__all__ = ["BenchSpec", "SuiteSpec", "builtin_suites", "load_suite", "resolve_suite"]
