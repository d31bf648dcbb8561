"""The options of a multi-node scheduler's allocation (``--nodes``, ``--partition``, ...), shared
by the commands that submit one (``assay run``, ``assay check``): one wording, one help panel,
one dict of the scheduler's own options (``LaunchOptions.own``)."""

from __future__ import annotations

from typing import Annotated, Any

import typer

PANEL = "Multi-node schedulers (--on slurm)"

Nodes = Annotated[int | None, typer.Option(help="Slurm: nodes to allocate.", rich_help_panel=PANEL)]
Partition = Annotated[str | None, typer.Option(help="Slurm partition.", rich_help_panel=PANEL)]
Account = Annotated[str | None, typer.Option(help="Slurm account.", rich_help_panel=PANEL)]
Qos = Annotated[str | None, typer.Option(help="Slurm QOS.", rich_help_panel=PANEL)]
Constraint = Annotated[
    str | None, typer.Option(help="Slurm node features (--constraint).", rich_help_panel=PANEL)
]
TimeLimit = Annotated[
    str | None, typer.Option("--time", help="Slurm time limit.", rich_help_panel=PANEL)
]
SbatchArg = Annotated[
    list[str] | None,
    typer.Option(
        metavar="ARG", help="Slurm: extra sbatch argument (repeatable).", rich_help_panel=PANEL
    ),
]
MaxWait = Annotated[
    float | None,
    typer.Option(help="Slurm: seconds the allocation may stay pending.", rich_help_panel=PANEL),
]


def own_options(
    partition: str | None,
    account: str | None,
    qos: str | None,
    constraint: str | None,
    time_limit: str | None,
    sbatch_args: list[str] | None,
    max_wait: float | None,
) -> dict[str, Any]:
    """The options only some schedulers take, by their name in ``LaunchOptions.own``."""
    return {
        "partition": partition, "account": account, "qos": qos, "constraint": constraint,
        "time": time_limit, "sbatch_args": list(sbatch_args or []), "max_wait": max_wait,
    }  # fmt: skip
