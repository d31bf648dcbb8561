"""A node's link speeds from its system record: what ``assay check`` expects each link to keep."""

from __future__ import annotations

from assay.model import System


def link_speeds(system: System) -> dict[str, float]:
    """B/s per network interface that is up and states its speed, and per active RDMA port
    (``mlx5_0/1``). Virtual interfaces (bridges, veths, tunnels, bonds: no bus device) are
    left out: they come and go with containers and test networks, and a bond's members are the
    physical links it is made of."""
    out: dict[str, float] = {}
    for nic in system.nics:
        if nic.get("kind") == "rdma":
            for port in nic.get("ports") or []:
                if port.get("rate_gbps") and str(port.get("state", "")).upper() == "ACTIVE":
                    out[f"{nic['name']}/{port.get('port')}"] = port["rate_gbps"] * 1e9 / 8
        elif nic.get("state") == "up" and nic.get("speed_mbps") and not nic.get("virtual"):
            out[str(nic["name"])] = nic["speed_mbps"] * 1e6 / 8
    return out
