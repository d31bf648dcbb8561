"""Hydra's ``mpiexec`` (MPICH, MVAPICH, Intel MPI)."""

from __future__ import annotations

from assay.launch.parallel import ParallelLauncher, Step


class HydraExec(ParallelLauncher):
    name = "mpiexec"

    def argv(self, step: Step, program: list[str]) -> list[str]:
        cmd = [step.program, "-n", str(step.ranks)]
        if step.bind:
            cmd += ["-bind-to", step.bind]
        if step.ppn:
            cmd += ["-ppn", str(step.ppn)]
        if step.hosts:
            cmd += ["-hosts", ",".join(step.hosts)]
        return [*cmd, *step.args, *program]
