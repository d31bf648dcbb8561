"""Toolchains: the MPI implementations found here (``mpis``) and the compilers that build the
native probes into a cache (``build``)."""

from assay.toolchain.build import (
    Compiler,
    build_probe,
    c_compiler,
    cache_key,
    compiler_for,
    keyed_text,
    native_source,
    nvcc_compiler,
    probe_path,
)
from assay.toolchain.mpis import (
    ALTERNATIVES,
    INSTALL_HINT,
    discover_mpis,
    identify_launcher,
    select_mpis,
)

__all__ = [
    "ALTERNATIVES",
    "INSTALL_HINT",
    "Compiler",
    "build_probe",
    "c_compiler",
    "cache_key",
    "compiler_for",
    "discover_mpis",
    "identify_launcher",
    "keyed_text",
    "native_source",
    "nvcc_compiler",
    "probe_path",
    "select_mpis",
]
