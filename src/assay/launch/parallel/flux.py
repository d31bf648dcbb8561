"""Flux's ``flux run`` (flux-core): nodes, tasks, tasks per node, cores per task, and the hosts
as a constraint (``--requires=host:...``)."""

from __future__ import annotations

from assay.launch.parallel import ParallelLauncher, Step


class FluxRun(ParallelLauncher):
    name = "flux"

    def argv(self, step: Step, program: list[str]) -> list[str]:
        cmd = [step.program or "flux", "run", f"--nodes={max(1, len(step.hosts))}",
               f"--ntasks={step.ranks}"]  # fmt: skip
        if step.ppn:
            cmd.append(f"--tasks-per-node={step.ppn}")
        if step.threads > 1:
            cmd.append(f"--cores-per-task={step.threads}")
        if step.name:
            cmd.append(f"--job-name={step.name}")
        if step.hosts:
            cmd.append(f"--requires=host:{','.join(step.hosts)}")
        return [*cmd, *step.args, *program]
