"""The sbatch command line and the batch script of one run (text only; nothing is submitted).

Options go on the sbatch command line as an argv list, never through a shell. The script keeps
that command line, so the run directory says how it was submitted, as one quoted word in a
variable (``ASSAY_SBATCH``), never in a comment: a newline in an option would end a comment,
and the next line would run on the first node (issue 21). User text is written into the script
only as words quoted with ``shlex.quote``; the options are refused earlier anyway when they
hold a control character (``assay.config.schema``).
"""

from __future__ import annotations

import shlex
from pathlib import Path

from assay.launch.slurm.options import SlurmOptions


def sbatch_argv(opts: SlurmOptions, run_dir: Path, run_id: str, ppn: int = 1) -> list[str]:
    argv = [
        "sbatch", "--parsable", f"--job-name=assay-{run_id}", f"--nodes={opts.nodes}",
        f"--ntasks-per-node={max(1, ppn)}",
        f"--output={run_dir / 'slurm' / 'slurm-%j.out'}",
        # The front end follows the job; Slurm must not requeue it behind its back.
        "--no-requeue",
    ]  # fmt: skip
    for flag, value in (
        ("--partition", opts.partition),
        ("--account", opts.account),
        ("--qos", opts.qos),
        ("--constraint", opts.constraint),
        ("--time", opts.time),
    ):
        if value:
            argv.append(f"{flag}={value}")
    if opts.no_kill:
        # A node lost mid-sweep must not end the allocation: the sweep goes on without it
        # (assay.run.followup), and the report names it.
        argv.append("--no-kill")
    argv += list(opts.sbatch_args)
    argv.append(str(run_dir / "slurm" / "batch.sh"))
    return argv


def batch_script(
    *,
    run_dir: Path,
    python: str,
    sbatch: list[str],
    env: dict[str, str],
    heartbeat_timeout: float | None,
) -> str:
    """Runs ``python -m assay.run.runner RUN_DIR --launcher slurm`` as the allocation's batch
    step.

    ``exec`` makes the runner the step's process: scancel's signal reaches it directly, and it
    stops the job step in flight before the allocation ends.
    """
    q = shlex.quote
    lines = [
        "#!/bin/bash",
        "# Written by assay: one allocation runs every job of this run, in sequence.",
        "set -eu",
        "# how it was submitted: the sbatch command line, as one quoted word",
        f"ASSAY_SBATCH={q(shlex.join(sbatch))}",
        f"cd {q(str(run_dir))}",
    ]
    for key, value in sorted(env.items()):
        if not key.isidentifier() or not key.isascii():
            raise ValueError(f"environment variable name {key!r} is not a shell name")
        lines.append(f"export {key}={q(value)}")
    runner = [python, "-m", "assay.run.runner", str(run_dir), "--launcher", "slurm"]
    if heartbeat_timeout:
        runner += ["--heartbeat-timeout", f"{heartbeat_timeout:g}"]
    lines.append("exec " + shlex.join(runner))
    return "\n".join(lines) + "\n"
