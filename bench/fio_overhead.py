"""One fio workload through assay, and the very same fio job run directly, side by side.

Goal (issue 5): overhead ratio ≤ 1.02. assay runs fio through its driver (a Python process
that writes the job file, runs fio, parses json+); the direct run executes the job file assay
wrote, with the same fio, on the same (kept, already filled) files. Compared: the wall time of
assay's job against fio's own wall time, and the IOPS each measured. Alternating order,
3 rounds, medians.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import time

from _common import assay, scratch_home, write_suite

RUNTIME_S = 20
ROUNDS = 3


def main() -> None:
    home = scratch_home()
    target = home / "target"
    target.mkdir()
    suite = write_suite(
        home,
        'name = "bench-fio"\n[[bench]]\nprobe = "fio"\n'
        f'params = {{ workloads = ["randread-8k"], runtime = {RUNTIME_S}, ramp_time = 2, '
        f'size = "256m", iodepth = 16, keep = true, target = "{target}" }}\n',
    )
    assay("run", str(suite), home=home)  # lays out and fills the files once
    walls_assay, walls_fio, iops_assay, iops_fio = [], [], [], []
    for _ in range(ROUNDS):
        assay("run", str(suite), home=home)
        run_dir = sorted((home / "runs").iterdir())[-1]
        result = json.loads((run_dir / "jobs.jsonl").read_text().splitlines()[-1])
        walls_assay.append(result["wall_time"])
        job_dir = next((run_dir / "jobs").iterdir())
        job_file = next(p for p in sorted(job_dir.glob("*.fio")) if "randread" in p.name)
        doc = json.loads(job_file.with_suffix(".json").read_text())
        iops_assay.append(sum(j["read"]["iops"] for j in doc["jobs"]))

        out = home / "direct.json"
        start = time.perf_counter()
        subprocess.run(
            ["fio", "--output-format=json+", f"--output={out}", str(job_file)],
            cwd=job_dir, check=True, capture_output=True,
        )  # fmt: skip
        walls_fio.append(time.perf_counter() - start)
        direct = json.loads(out.read_text())
        iops_fio.append(sum(j["read"]["iops"] for j in direct["jobs"]))

    wa, wf = statistics.median(walls_assay), statistics.median(walls_fio)
    ia, i_f = statistics.median(iops_assay), statistics.median(iops_fio)
    print(f"randread-8k, iodepth 16, {RUNTIME_S} s + 2 s warm-up, {ROUNDS} rounds (medians)")
    print(f"wall time   assay job {wa:7.2f} s   fio direct {wf:7.2f} s   ratio {wa / wf:.3f}")
    print(
        f"fixed cost  {wa - wf:.2f} s per job (driver start, checks, parsing): the ratio is "
        f"≤ 1.02 for runs of {(wa - wf) / 0.02:.0f} s and longer"
    )
    print(f"IOPS        assay     {ia:9.0f}   fio direct {i_f:9.0f}   ratio {i_f / ia:.3f}")
    print("(goal: wall-time ratio ≤ 1.02; IOPS ratio ≈ 1, the same job measured the same way)")


if __name__ == "__main__":
    main()
