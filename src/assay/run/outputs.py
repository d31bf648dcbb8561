"""What a job left behind, read for its record: the end of its stderr (the probe's own
diagnostics brought forward), and, for a job one step ran on each of its nodes, each node's
output parsed on its own."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from assay.errors import AssayError
from assay.inputfile import MAX_OUTPUT_BYTES, read_bounded
from assay.model import Job, Sample, node_output
from assay.probes import get_probe

STDERR_TAIL_LINES = 15


def read_output(path: Path, what: str = "job output") -> str:
    """A file a job wrote (its stdout, stderr, a node's output) as text; "" when it wrote
    none. Bounded as an import is (an output larger than any tool's is an AssayError naming
    the bound), and regular only: a job's file linked to /dev/zero is not read."""
    try:
        return read_bounded(path, MAX_OUTPUT_BYTES, what, follow=False).decode(errors="replace")
    except FileNotFoundError:
        return ""


def read_stderr(path: Path) -> str:
    """A job's stderr for its tail: "" when missing or unreadable (it only adds to a reason)."""
    try:
        return read_output(path, "job's stderr")
    except (OSError, AssayError):
        return ""


def stderr_tail(text: str, probe: str = "", lines: int = STDERR_TAIL_LINES) -> str:
    """The end of stderr, without launcher rulers, and always the probe's own diagnostics.

    Our probes prefix what they say with their name ("p2p: ..."); an MPI launcher may bury
    that line under its own boilerplate, so it is brought forward.
    """
    kept = [ln for ln in text.splitlines() if ln.strip() and set(ln.strip()) != {"-"}]
    own = [ln for ln in kept if probe and ln.startswith(f"{probe}:")]
    tail = kept[-lines:]
    return "\n".join([ln for ln in own if ln not in tail] + tail)


def parse_each_node(job: Job, job_dir: Path) -> tuple[list[Sample], str]:
    """A job one step ran on each of its nodes (``Placement.each``): each node's output parsed
    on its own, its samples naming it (``hosts``, ``node``); what failed on which node."""
    probe = get_probe(job.probe)
    samples: list[Sample] = []
    problems = []
    hosts = [str(h) for h in job.params.get("hosts") or []]
    for host in hosts:
        out = job_dir / node_output(host)
        try:
            text = read_output(out)
        except (OSError, AssayError) as exc:
            problems.append(f"{host}: {exc}")
            continue
        if not text.strip():
            why = stderr_tail(read_stderr(job_dir / node_output(host, "stderr")), job.probe, 2)
            problems.append(f"{host}: printed no measurement" + (f" ({why})" if why else ""))
            continue
        params = {**job.params, "hosts": [host], "node": host}
        try:
            found = probe.parse(text, dataclasses.replace(job, params=params), job_dir=job_dir)
        except AssayError as exc:
            problems.append(f"{host}: {exc}")
            continue
        for s in found:
            s.params.update(hosts=[host], node=host)
        samples += found
    if not problems:
        return samples, ""
    return samples, f"on {len(problems)} of {len(hosts)} nodes: " + "; ".join(problems)
