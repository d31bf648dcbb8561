"""The node's inventory as samples (``assay.drivers.inventory``): cores, memory, GPUs, link
speeds, kernel, MPIs. ``assay check`` judges them against what its baseline expects; on Slurm
the probe runs once per node, as STREAM does, so each node reports its own."""

from __future__ import annotations

import sys
from pathlib import Path

from assay.model import Job, MpiInfo, Sample
from assay.probes.base import JobDraft, PlanContext, Probe, ProbeParams, parse_jsonl


class InventoryParams(ProbeParams):
    pass


class InventoryProbe(Probe):
    name = "inventory"
    summary = "what the node has: cores, memory, GPUs, link speeds, kernel, MPIs"
    Params = InventoryParams
    default_timeout = 60.0
    stdout_only = True  # on a cluster: one step over every node, each node's output its own

    def drafts(
        self, params: ProbeParams, ctx: PlanContext, *, mpis: list[MpiInfo], ranks: int | None
    ) -> list[JobDraft]:
        return [JobDraft(argv=[sys.executable, "-m", "assay.drivers.inventory"], params={})]

    def expected_seconds(self, job: Job) -> float | None:
        return 1.0

    def parse(self, stdout: str, job: Job, *, job_dir: Path | None = None) -> list[Sample]:
        return parse_jsonl(stdout, self.name, job.params)
