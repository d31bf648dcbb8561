"""The MPI standard's ``mpiexec -n N`` (an MPI whose flavour assay does not know)."""

from __future__ import annotations

from assay.launch.parallel import ParallelLauncher, Step


class StandardExec(ParallelLauncher):
    name = "standard"

    def argv(self, step: Step, program: list[str]) -> list[str]:
        return [step.program, "-n", str(step.ranks), *step.args, *program]
