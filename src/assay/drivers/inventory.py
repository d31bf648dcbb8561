"""What a node has, as samples: ``python -m assay.drivers.inventory`` (the inventory probe).

``assay check`` compares each node's inventory with what its baseline expects (a DIMM lost, a
GPU gone, a link trained at a lower speed, an MPI missing after maintenance). On Slurm the
probe runs once per node like STREAM, so every node reports its own facts (the front end's
``system.json`` describes only the machine assay ran from).

One JSON object per line on stdout, the native probes' contract:

    inventory.cores       physical cores (all sockets)          1
    inventory.threads     logical CPUs                          1
    inventory.memory      MemTotal                              B
    inventory.gpus        GPUs found                            1
    inventory.link_speed  per network interface that is up and  B/s  (params iface)
                          says its speed, per RDMA port active  (params iface = dev/port)
    inventory.fabric      per kernel limit a big run over TCP    1  (params limit: see
                          meets (assay.system.fabric)               assay.system.fabric)
    inventory.node        1, carrying the facts that are words: cpu_model, sockets, kernel,
                          gpu_model, mpis ("openmpi 4.1.4,mpich 4.0.2"), hostname, boot_id
                          (nodes of one boot id share one kernel, and its limits)

A fact that could not be read is left out (never printed as 0); the notes of the collectors go
to stderr.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from assay.errors import AssayError
from assay.inputfile import read_bounded
from assay.model import System
from assay.system.links import link_speeds


def boot_id() -> str:
    """This kernel's boot id: nodes that print the same one are one kernel (namespaces)."""
    try:
        return read_bounded("/proc/sys/kernel/random/boot_id", 256, "boot id").decode().strip()
    except (OSError, AssayError, UnicodeDecodeError):
        return ""


def inventory_lines(system: System) -> list[dict[str, Any]]:
    """The samples of one node's inventory (see the module docstring)."""
    lines: list[dict[str, Any]] = []

    def add(metric: str, value: float | None, unit: str, **params: Any) -> None:
        if value is not None:
            lines.append({"metric": metric, "value": value, "unit": unit, "params": params})

    add("inventory.cores", system.cores, "1")
    add("inventory.threads", system.threads, "1")
    add("inventory.memory", system.memory_bytes, "B")
    add("inventory.gpus", len(system.gpus), "1")
    for iface, speed in sorted(link_speeds(system).items()):
        add("inventory.link_speed", speed, "B/s", iface=iface)
    for limit, value in sorted(system.fabric.items()):
        add("inventory.fabric", value, "1", limit=limit)
    models = sorted({str(g.get("name")) for g in system.gpus if g.get("name")})
    words = {
        "hostname": system.hostname or "",
        "cpu_model": system.cpu_model or "",
        "sockets": system.sockets or 0,
        "kernel": system.kernel or "",
        "gpu_model": ",".join(models),
        "mpis": ",".join(f"{m.name} {m.version}".strip() for m in system.mpis),
        "boot_id": boot_id(),
    }
    add("inventory.node", 1, "1", **words)
    return lines


def main() -> int:
    from assay.system import collect_system
    from assay.toolchain import discover_mpis

    system = collect_system(discover_mpis())
    for note in system.notes:
        print(f"inventory: {note}", file=sys.stderr)
    for line in inventory_lines(system):
        print(json.dumps(line, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
