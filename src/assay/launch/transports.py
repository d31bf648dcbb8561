"""Keeping an MPI's ranks on different "nodes" off shared memory, when the nodes share one
kernel (network namespaces, containers on one host): a figure between two such nodes must
cross their network, or it is not a link.

MPIs choose shared memory by what they see: Open MPI's vader BTL and MPICH's own shared
memory by host name (different in each namespace, so they stay off), UCX by the kernel's boot
id (the same: UCX would use shared memory, measured here: MPICH over UCX read 1,703 MB/s on a
link throttled to 100 Mbit/s, and 0.61 us latency between two "nodes"). The environment below
names the network transports only.
"""

from __future__ import annotations

from assay.model import MpiInfo

SHARED_KERNEL_ENV = "ASSAY_SHARED_KERNEL"  # set for every job: probes that poll may yield


def network_only(mpi: MpiInfo) -> dict[str, str]:
    """The environment that keeps ``mpi`` on TCP between processes of different nodes."""
    if mpi.flavor == "openmpi":
        # ob1 with the TCP BTL (no UCX PML, no shared-memory BTL); yield while polling, as
        # the nodes share the kernel's CPUs too
        return {"OMPI_MCA_pml": "ob1", "OMPI_MCA_btl": "tcp,self",
                "OMPI_MCA_mpi_yield_when_idle": "1"}  # fmt: skip
    if mpi.flavor in ("mpich", "mvapich"):
        # ch4:ucx: UCX's TCP transport only; MPICH's own shared memory off for ranks it
        # might take for neighbours
        return {"UCX_TLS": "tcp,self", "MPIR_CVAR_NOLOCAL": "1"}
    if mpi.flavor == "intel":
        return {"I_MPI_FABRICS": "ofi", "FI_PROVIDER": "tcp"}
    return {}


def shared_kernels(boot_ids: dict[str, str]) -> list[list[str]]:
    """Groups of hosts that run on one kernel (the same boot id), for the note that says so."""
    groups: dict[str, list[str]] = {}
    for host, boot in boot_ids.items():
        if boot:
            groups.setdefault(boot, []).append(host)
    return [sorted(h) for h in groups.values() if len(h) > 1]
