"""What the namespace cluster's slurmds logged: the steps they launched (the test cluster's
tests and bench/allpairs_cluster.py count launches by it)."""

from __future__ import annotations

import re
from pathlib import Path


def steps_launched(
    state_dir: str | Path, since: dict[str, int] | None = None
) -> tuple[set[str], dict[str, int]]:
    """The job steps (J.S) the cluster's slurmds launched after ``since`` (each log's size
    then), and each log's size now. Each slurmd logs a line for its own tasks of a step (a step
    over 16 nodes is 16 lines, one step); job ids start again at 1 when the cluster does."""
    steps: set[str] = set()
    sizes: dict[str, int] = {}
    for log in Path(state_dir, "log").glob("slurmd-*.log"):
        data = log.read_bytes()
        sizes[str(log)] = len(data)
        new = data[(since or {}).get(str(log), 0) :].decode(errors="replace")
        steps |= set(re.findall(r"launch task StepId=(\d+\.\d+)", new))
    return steps, sizes
