"""Every scheduler assay knows, by the name ``assay run --on NAME`` takes.

Adding a scheduler is a folder under ``assay/launch/`` implementing the contract
(``assay.launch.contract``) and one line here. Schedulers are imported when chosen, and when
the config's schema is assembled (each declares its own table: ``config_sections``), so a
scheduler's module needs none of its tools to be imported, only to run.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from assay.errors import ConfigError
from assay.launch.admin import NodeAdmin
from assay.launch.contract import BatchScheduler, LaunchOptions, Scheduler

if TYPE_CHECKING:
    from assay.config.schema import Section

SCHEDULERS: dict[str, str] = {
    "local": "assay.launch.local.scheduler:LocalScheduler",
    "slurm": "assay.launch.slurm.scheduler:SlurmScheduler",
}


# The backend of the jobs assay runs in its own process, on this node (``assay.run.execute``).
HERE = "local"


def here(cores: int | None = None) -> Scheduler:
    """This node's scheduler; MPI ranks are bound to its ``cores`` (default: every CPU)."""
    return scheduler_class(HERE)(cores)  # type: ignore[call-arg]  # the local backend's


# The scheduler whose node this is, for a check run on it (``assay check --on local --drain``:
# Slurm's HealthCheckProgram runs it on each node).
HOST_SCHEDULER = "slurm"


def node_admin(name: str, partition: str | None = None) -> NodeAdmin:
    """The node administration of the backend ``name`` (for ``partition``'s nodes); for a
    backend that administers none (this node), the one of :data:`HOST_SCHEDULER`."""
    admin = scheduler_class(name).node_admin(partition)
    if admin is None and name != HOST_SCHEDULER:
        admin = scheduler_class(HOST_SCHEDULER).node_admin(partition)
    if admin is None:
        raise ConfigError(f"the {name} scheduler cannot drain or resume nodes")
    return admin


def scheduler_class(name: str) -> type[Scheduler]:
    """The scheduler registered as ``name``; an unknown name is a ConfigError listing them."""
    where = SCHEDULERS.get(name)
    if where is None:
        raise ConfigError(
            f"--on {name}: no such scheduler", hint=f"schedulers: {', '.join(sorted(SCHEDULERS))}"
        )
    module, _, attr = where.partition(":")
    return getattr(importlib.import_module(module), attr)


def config_sections() -> list[Section]:
    """Each scheduler's table of config.toml, as it declares it (every scheduler imported)."""
    found = (scheduler_class(n).config_section() for n in sorted(SCHEDULERS))
    return [s for s in found if s is not None]


def takers(option: str) -> list[str]:
    """The schedulers that take one of their own options (``partition``: ["slurm"])."""
    return [n for n in sorted(SCHEDULERS) if option in scheduler_class(n).caps.options]


def configured(name: str, config: dict[str, Any], options: LaunchOptions) -> Scheduler:
    """The scheduler ``name`` with the config's settings and the command line's options.

    Options a scheduler does not take are refused here, naming the schedulers that do, so
    ``--partition`` without ``--on slurm`` never passes silently."""
    cls = scheduler_class(name)
    foreign = sorted(k for k, v in options.own.items() if v and k not in cls.caps.options)
    if foreign:
        flags = ", ".join(f"--{k.replace('_', '-')}" for k in foreign)
        who = sorted({n for k in foreign for n in takers(k)})
        raise ConfigError(
            f"{flags}: not an option of the {name} scheduler",
            hint=f"{flags} needs --on {' or --on '.join(who)}" if who else None,
        )
    if cls.caps.max_nodes == 1 and (options.detach or options.nodes):
        raise ConfigError(f"--nodes and --detach {needs_nodes(name)}")
    return cls.configured(config, options)


def needs_nodes(name: str) -> str:
    """What an option of many nodes says on the one-node scheduler ``name``."""
    others = [n for n in sorted(SCHEDULERS) if scheduler_class(n).caps.max_nodes != 1]
    return f"need --on {' or --on '.join(others)} (a multi-node scheduler), not --on {name}"


def batch_scheduler(name: str, plan: dict[str, Any]) -> BatchScheduler:
    """Inside an allocation: the batch scheduler the run's plan names, as the front end set it."""
    cls = scheduler_class(name)
    if not issubclass(cls, BatchScheduler):
        raise ConfigError(f"the {name} scheduler does not run jobs inside an allocation")
    return cls.from_plan(plan)
