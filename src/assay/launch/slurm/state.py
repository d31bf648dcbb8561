"""Talking to Slurm: submit, ask a job's state, cancel. Parsing is pure and kept apart.

Only the controller's view is used (``scontrol show job``): it answers for pending, running
and finished jobs alike (for ``MinJobAge`` seconds after the end), and needs no accounting
database. Every failure quotes Slurm's own words.
"""

from __future__ import annotations

import contextlib
import dataclasses
import re
import shutil
import subprocess
from dataclasses import dataclass, field

from assay.errors import LaunchError
from assay.system.software import missing_config_file

FINAL_STATES = {
    "COMPLETED", "FAILED", "TIMEOUT", "NODE_FAIL", "CANCELLED", "OUT_OF_MEMORY",
    "PREEMPTED", "BOOT_FAIL", "DEADLINE", "SPECIAL_EXIT", "REVOKED",
}  # fmt: skip
CALL_TIMEOUT_S = 30.0

_FIELD = re.compile(r"(\w+(?::\w+)?)=(.*?)(?=\s+\w+(?::\w+)?=|\s*$)")


@dataclass
class JobState:
    job_id: str
    state: str  # PENDING, RUNNING, COMPLETED, ... or UNKNOWN once Slurm forgot the job
    reason: str = ""
    nodes: str = ""  # Slurm's compressed list, e.g. anode[1-3]
    exit_code: str = ""
    fields: dict[str, str] = field(default_factory=dict)

    @property
    def final(self) -> bool:
        return self.state in FINAL_STATES or self.state == "UNKNOWN"


def settled(s: JobState) -> JobState:
    """A ``--no-kill`` job (an all-pairs run: a lost node does not end it, so it never ends
    NODE_FAIL) whose batch script exited 0 but that Slurm is still ending on a node
    (COMPLETING: a step left on a node that died) is COMPLETED for assay: every result is
    written by then, and waiting for the cleanup cost a minute here after a lost node. Any
    other COMPLETING waits for its own final state (NODE_FAIL, TIMEOUT, CANCELLED say more)."""
    if s.state == "COMPLETING" and s.exit_code == "0:0":
        why = "Slurm was still ending the job's processes on a node when assay finished"
        return dataclasses.replace(s, state="COMPLETED", reason=s.reason or why)
    return s


def parse_show_job(job_id: str, text: str) -> JobState:
    """``scontrol show job -o ID`` -> JobState. The line is ``Key=Value`` pairs; some values
    (Reason, Command) may hold spaces, so a value runs until the next ``Key=``."""
    fields = {m.group(1): m.group(2) for m in _FIELD.finditer(text.strip())}
    if "JobState" not in fields:
        raise LaunchError(f"cannot read Slurm's answer about job {job_id}: {text.strip()[:200]}")
    # "CANCELLED by 0" -> CANCELLED
    state = fields["JobState"].split()[0]
    reason = fields.get("Reason", "")
    return JobState(
        job_id=job_id,
        state=state,
        reason="" if reason == "None" else reason,
        nodes="" if fields.get("NodeList") in (None, "(null)") else fields["NodeList"],
        exit_code=fields.get("ExitCode", ""),
        fields=fields,
    )


def _slurm_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise LaunchError(
            f"Slurm's {name} is not on PATH: --on slurm needs a Slurm front end",
            hint="run on a login node of the cluster, or use --on local",
        )
    return path


def require_slurm() -> None:
    """Fail before anything is built or stored when this is no Slurm front end."""
    for tool in ("sbatch", "scontrol", "scancel"):
        _slurm_tool(tool)
    conf = missing_config_file("SLURM_CONF")
    if conf is not None:  # every Slurm command would retry it for 60 s
        raise LaunchError(
            f"SLURM_CONF={conf} names no file: Slurm's commands cannot read their configuration",
            hint="set SLURM_CONF to the cluster's slurm.conf, or unset it",
        )


def _run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=CALL_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise LaunchError(
            f"{argv[0]} did not answer in {CALL_TIMEOUT_S:g} s: is slurmctld reachable?"
        ) from None


def slurm_words(stderr: str) -> str:
    """Slurm's message without the tool prefixes ("sbatch: error: ...")."""
    lines = []
    for line in stderr.strip().splitlines():
        line = re.sub(r"^(sbatch|srun|scontrol|scancel|squeue|salloc): (error: )?", "", line)
        if line.strip():
            lines.append(line.strip())
    return "; ".join(lines) or "(no message)"


def submit(argv: list[str]) -> str:
    """sbatch --parsable ... -> the job id, or Slurm's refusal as an error."""
    argv = [_slurm_tool(argv[0]), *argv[1:]]
    proc = _run(argv)
    if proc.returncode != 0:
        raise LaunchError(f"Slurm refused the job: {slurm_words(proc.stderr)}")
    job_id = proc.stdout.strip().split(";")[0]
    if not job_id.isdigit():
        raise LaunchError(f"sbatch answered {proc.stdout.strip()!r}, not a job id")
    return job_id


def query(job_id: str) -> JobState:
    proc = _run([_slurm_tool("scontrol"), "show", "job", "-o", job_id])
    if proc.returncode != 0:
        if "Invalid job id" in proc.stderr:
            return JobState(job_id, "UNKNOWN", reason="Slurm no longer knows this job")
        raise LaunchError(f"scontrol show job {job_id}: {slurm_words(proc.stderr)}")
    return parse_show_job(job_id, proc.stdout)


def cancel(job_id: str) -> None:
    """scancel; a job that already ended is not an error."""
    path = shutil.which("scancel")
    if path is None:
        return
    with contextlib.suppress(subprocess.TimeoutExpired):
        subprocess.run([path, job_id], capture_output=True, timeout=CALL_TIMEOUT_S, check=False)


def expand_nodes(nodelist: str) -> list[str]:
    """anode[1-3] -> [anode1, anode2, anode3], by Slurm itself (scontrol show hostnames)."""
    if not nodelist:
        return []
    proc = _run([_slurm_tool("scontrol"), "show", "hostnames", nodelist])
    if proc.returncode != 0:
        raise LaunchError(f"scontrol show hostnames {nodelist}: {slurm_words(proc.stderr)}")
    return proc.stdout.split()


ALIVE_TIMEOUT_S = 30.0  # a node whose slurmd does not start a step in this long is lost


def each_node(hosts: list[str], shell: str, name: str, timeout: float) -> dict[str, str]:
    """What ``shell`` prints on each of ``hosts``, by ONE step over all of them (one task per
    node, each line "<node> <answer>"), whatever their number: one step per node cost 129
    steps of one job at 64 nodes. A dead node's task never answers: the step is ended at
    ``timeout`` and what the others printed by then stands."""
    argv = ["srun", f"--job-name={name}", f"--nodes={len(hosts)}",
            f"--nodelist={','.join(hosts)}", f"--ntasks={len(hosts)}", "--ntasks-per-node=1",
            "--overlap", "--mpi=none", "--kill-on-bad-exit=0", "sh", "-c",
            f'echo "$SLURMD_NODENAME $({shell})"']  # fmt: skip
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
        out = proc.stdout
    except subprocess.TimeoutExpired as exc:
        raw = exc.stdout or b""
        out = raw.decode(errors="replace") if isinstance(raw, bytes) else raw
    except OSError:
        return {}
    found = {}
    for line in out.splitlines():
        fields = line.split(maxsplit=1)
        if fields and fields[0] in hosts:
            found[fields[0]] = fields[1].strip() if len(fields) > 1 else ""
    return found


def answering(hosts: list[str], timeout: float = ALIVE_TIMEOUT_S) -> list[str]:
    """The hosts of this allocation on which a task of one step over all of them runs
    within ``timeout``: a dead node's task fails or hangs."""
    found = each_node(hosts, "echo ok", "assay-alive", timeout)
    return [h for h in hosts if found.get(h) == "ok"]


def boot_ids(hosts: list[str], timeout: float = ALIVE_TIMEOUT_S) -> dict[str, str]:
    """Each host's kernel boot id, by one step over all of them; {} when the step fails."""
    found = each_node(hosts, "cat /proc/sys/kernel/random/boot_id", "assay-kernels", timeout)
    return {h: v for h, v in found.items() if v}
