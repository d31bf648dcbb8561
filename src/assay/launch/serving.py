"""The keys a serving probe adds to the table of every scheduler that starts its servers.

A probe whose jobs spread as "clients" (a server on every node: ``Probe.server_argv``) declares
what its servers take — fio: ``fio_port`` and ``fio_network`` (``Probe.server_keys``) — and a
scheduler that starts servers takes those keys in its own table (``[slurm] fio_port``), as fio's
ioengines add their options to a job section. The scheduler never names them: it hands each
probe's servers what the probe's own declaration made of its table (``settings``).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from assay.config.schema import ConfigTable, with_parts
from assay.probes import PROBES


def server_parts() -> dict[str, type[ConfigTable]]:
    """Each serving probe's keys, by the probe's name."""
    return {n: p.server_keys for n, p in PROBES.items() if p.server_keys is not None}


@functools.cache
def scheduler_table(own: type[ConfigTable]) -> type[ConfigTable]:
    """A scheduler's table as the schema knows it: its own keys and every serving probe's."""
    return with_parts(own, server_parts().values())


def settings(table: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """Where each serving probe's servers listen (``{"port", "network"}``, by probe name),
    from a scheduler's table already checked against ``scheduler_table``."""
    values = dict(table or {})
    out = {}
    for name, part in server_parts().items():
        mine = {k: v for k, v in values.items() if k in part.model_fields}
        out[name] = part.model_validate(mine).servers()  # type: ignore[attr-defined]
    return out
