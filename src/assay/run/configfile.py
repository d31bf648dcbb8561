"""config.toml as a whole: every owner's table assembled into one schema, and the file read and
checked against it.

The tables are declared by their owners (``assay.config.schema`` is only the mechanism): each
scheduler's through the scheduler registry (``Scheduler.config_section``, with the keys serving
probes add), and the tables of the flow's own parts named here. A new backend adds its table by
declaring it with itself; a new part of the core that reads config.toml adds its section to
``sections``. The edges (``run``, the commands) load the config here, so an unknown section or a
bad value anywhere in the file is named before anything runs.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from assay.config import config_path, read_config
from assay.config.schema import Schema, Section, assemble, validate_config


def sections() -> list[Section]:
    """Every declared table: the schedulers' first, then those of the flow's own parts.
    Imported here, not with this module: a run without a config file assembles nothing."""
    from assay.analysis.check import checklimits
    from assay.analysis.statistics import outliers
    from assay.launch.registry import config_sections
    from assay.system import peak
    from assay.toolchain import mpiconfig

    core = [mpiconfig.SECTION, peak.SECTION, outliers.SECTION, checklimits.SECTION]
    return [*config_sections(), *core]


@functools.cache
def schema() -> Schema:
    return assemble(sections())


def load_config(path: Path | None = None) -> dict[str, Any]:
    """The user's config (``$ASSAY_CONFIG`` or ``~/.config/assay/config.toml``), checked
    against every owner's table, or {} when there is none: ConfigError names every problem."""
    path = path or config_path()
    parsed = read_config(path)
    # no file, nothing to check: the schema (every scheduler and probe imported) not assembled
    return validate_config(parsed, schema(), origin=str(path)) if parsed else parsed
