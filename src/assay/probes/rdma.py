"""RDMA latency and bandwidth with perftest (ib_send_lat, ib_send_bw, ib_write_*, ib_read_*).

Run as the seeds do (``ib_send_lat -a``: every size from 2 B to 8 MiB), server and client
on this node through the device's loopback; the client's table is parsed by
``assay.parsers.perftest`` (MiB = 2^20 B, Gb = 10^9 bit, as perftest defines them). With no
RDMA device, or no perftest, the job is recorded as skipped with the reason — not a failure.
On Slurm with two nodes or more (its "server-client" spread, ``assay.launch.place``) the
server runs on the second node and the client on the first, each as its own srun step, the
client naming the server's node: the published inter-node ``ib_send_lat`` method.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Literal

from pydantic import Field

from assay.errors import ProbeError
from assay.model import Job, MpiInfo, Sample
from assay.parsers import perftest
from assay.probes.base import JobDraft, PlanContext, Probe, ProbeParams


class RdmaParams(ProbeParams):
    test: Literal["send_lat", "send_bw", "write_lat", "write_bw", "read_lat", "read_bw"] = (
        "send_lat"
    )
    device: str | None = Field(default=None, description="default: the first RDMA device")
    ib_port: int = Field(default=1, ge=1)
    tcp_port: int = Field(default=18515, ge=1024, description="perftest's rendezvous port")
    iterations: int | None = Field(default=None, ge=1, description="perftest -n")
    cpu: int | None = Field(default=None, ge=0, description="pin both ends (numactl)")
    report_gbits: bool = False


def rdma_devices(ctx: PlanContext) -> list[str]:
    return [str(n["name"]) for n in ctx.system.nics if n.get("kind") == "rdma"]


class RdmaProbe(Probe):
    name = "rdma"
    summary = "RDMA latency/bandwidth with perftest (ib_send_lat -a ...); skipped without a device"
    Params = RdmaParams
    default_timeout = 600.0
    spread_kind = "server-client"  # perftest's server on one node, its client on another

    def drafts(
        self, params: ProbeParams, ctx: PlanContext, *, mpis: list[MpiInfo], ranks: int | None
    ) -> list[JobDraft]:
        assert isinstance(params, RdmaParams)
        tool = f"ib_{params.test}"
        devices = rdma_devices(ctx)
        skip = None
        if not devices:
            skip = "no RDMA device (/sys/class/infiniband is empty): RDMA probes skipped"
        elif params.device and params.device not in devices:
            skip = f"RDMA device {params.device} not found (found: {', '.join(devices)})"
        elif not ctx.facts.which(tool):
            skip = f"{tool} not found: apt-get install perftest"
        device = params.device or (devices[0] if devices else "none")
        base = [tool, "-a", "-d", device, "-i", str(params.ib_port), "-p", str(params.tcp_port)]
        if params.iterations:
            base += ["-n", str(params.iterations)]
        if params.report_gbits and params.test.endswith("_bw"):
            base.append("--report_gbits")
        if params.cpu is not None:
            base = ["numactl", f"--physcpubind={params.cpu}", *base]
        argv = [
            sys.executable, "-m", "assay.drivers.pair",
            "--server", json.dumps(base), "--client", json.dumps([*base, "localhost"]),
        ]  # fmt: skip
        return [
            JobDraft(
                argv=argv,
                params={"test": params.test, "device": device, "ib_port": params.ib_port},
                label=f"{params.test} {device}",
                skip_reason=skip,
            )
        ]

    def parse(self, stdout: str, job: Job, *, job_dir: Path | None = None) -> list[Sample]:
        result = perftest.parse(stdout, source=job.job_id)
        if not result.samples:
            raise ProbeError(f"rdma: perftest printed no table ({'; '.join(result.warnings)})")
        for s in result.samples:
            s.probe = self.name
            s.params = {**job.params, **s.params}
        return result.samples
