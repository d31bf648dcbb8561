"""Open MPI's ``mpirun``."""

from __future__ import annotations

import os

from assay.launch.parallel import ParallelLauncher, Step


class OpenMpiRun(ParallelLauncher):
    name = "mpirun"

    def argv(self, step: Step, program: list[str]) -> list[str]:
        cmd = [step.program, "-np", str(step.ranks)]
        if step.hosts:  # the hosts, then how the ranks map onto them
            cmd += ["--host", ",".join(f"{h}:{step.ppn or 1}" for h in step.hosts),
                    "--map-by", f"ppr:{step.ppn or 1}:node"]  # fmt: skip
        if step.bind:
            cmd += ["--bind-to", step.bind]
        if step.report_bindings:
            cmd.append("--report-bindings")
        if os.geteuid() == 0:  # Open MPI refuses root without it
            cmd.append("--allow-run-as-root")
        if step.oversubscribe:
            cmd.append("--oversubscribe")
        if step.ppn and not step.hosts:  # on this node the mapping closes the line (as ever)
            cmd += ["--map-by", f"ppr:{step.ppn}:node"]
        if step.overlap:  # the srun that starts Open MPI's daemons inside an allocation
            cmd += ["--mca", "plm_slurm_args", "--overlap"]
        return [*cmd, *step.args, *program]
