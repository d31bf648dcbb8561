"""Slurm's ``srun``: a step that names its nodes (``--nodelist``) and rank layout exactly, so
steps can run side by side; ``--kill-on-bad-exit`` ends a step whose rank died."""

from __future__ import annotations

from assay.launch.parallel import ParallelLauncher, Step


def srun_head(name: str, hosts: list[str] | tuple[str, ...]) -> list[str]:
    """The start every step on ``hosts`` shares."""
    return ["srun", f"--job-name={name}", f"--nodes={len(hosts)}",
            f"--nodelist={','.join(hosts)}", "--kill-on-bad-exit=1"]  # fmt: skip


class Srun(ParallelLauncher):
    name = "srun"

    def argv(self, step: Step, program: list[str]) -> list[str]:
        threaded = [f"--cpus-per-task={step.threads}"] if step.threads > 1 else []
        return [
            *srun_head(step.name, step.hosts), *(["--overlap"] if step.overlap else []),
            f"--ntasks={step.ranks}", f"--ntasks-per-node={step.ppn or 1}", *threaded,
            f"--mpi={step.plugin or 'none'}", *step.args, *program,
        ]  # fmt: skip
