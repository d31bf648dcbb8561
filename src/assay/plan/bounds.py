"""How large a plan may grow: bounds checked where a count is read, before anything grows.

A count no machine runs (``--repeat 99999999999``, ``--nodes 1000000000``) is refused with a
message saying the bound, instead of a MemoryError, a plan growing past gigabytes, or a command
that never answers. A planned job costs about 1 KB in memory and in the run's plan (80,000
jobs of a dry run, one per node pair as all-pairs runs were planned before the matrix probe:
147 MB resident), so 200,000 jobs stay well within a login node's memory. The plan is held to
it as it is expanded (``plan.expand``) and as it is placed on an allocation
(``launch.place``); the node count has its scheduler's bound (``launch.slurm.options``).
"""

from __future__ import annotations

MAX_JOBS = 200_000  # jobs of one plan, placed on an allocation included
MAX_REPEAT = 10_000  # repetitions of one job (--repeat, a suite's repeat =)
