"""Hardware facts, one collector per fact, read from /proc and /sys.

Every collector takes a ``Context`` and returns its fact or None. A collector that cannot read
something returns None and says why with ``ctx.note``. Collectors try not to raise, but the
aggregator (``assay.system.collect_system``) guards each call anyway, so that one broken
collector costs one fact, never the inventory.
"""

from __future__ import annotations

import os
import platform
import re
import socket
from typing import Any

from assay.system._context import Context, parse_size
from assay.system.cpulist import parse_cpulist
from assay.system.uarch import ARM_IMPLEMENTERS, X86_VENDORS, arm_uarch, x86_uarch

CPU_DIR = "/sys/devices/system/cpu"
NODE_DIR = "/sys/devices/system/node"

# ISA extensions that decide which kernels (and so which numbers) a node can reach, in the
# order a reader scans them: x86 SIMD, then AMX, then Arm. "asimd" is aarch64's name for NEON;
# "neon" appears only on 32-bit Arm.
HPC_ISA: tuple[str, ...] = (
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "avx512f",
    "avx512dq",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "amx_tile",
    "sve",
    "sve2",
    "asimd",
    "neon",
)

_CPU_NAME = re.compile(r"^cpu(\d+)$")
_NODE_NAME = re.compile(r"^node(\d+)$")
_MODEL_GHZ = re.compile(r"@\s*([\d.]+)\s*([GM])Hz", re.IGNORECASE)
_NODE_MEMTOTAL = re.compile(r"MemTotal:\s+(\d+)\s*kB")


def _int(text: str | None, base: int = 10) -> int | None:
    if text is None:
        return None
    try:
        return int(text.strip(), base)
    except ValueError:
        return None


def _cpulist(text: str | None) -> list[int] | None:
    if text is None:
        return None
    try:
        return parse_cpulist(text)
    except ValueError:
        return None


# --- identity ---------------------------------------------------------------------------------


def hostname(ctx: Context) -> str | None:
    # From the kernel (uname), not from the tree: the host is the live machine's.
    name = socket.gethostname()
    if not name:
        ctx.note("hostname: the kernel reported an empty host name")
    return name or None


def architecture(ctx: Context) -> str | None:
    arch = platform.machine()
    if not arch:
        ctx.note("architecture: uname -m gave nothing")
    return arch or None


def kernel(ctx: Context) -> str | None:
    release = platform.release()
    if not release:
        ctx.note("kernel: uname -r gave nothing")
    return release or None


def vendor(ctx: Context) -> str | None:
    vendor_id = ctx.cpuinfo_field("vendor_id")
    if vendor_id:
        return X86_VENDORS.get(vendor_id, vendor_id)
    implementer = _int(ctx.cpuinfo_field("CPU implementer"), 0)
    if implementer is not None:
        return ARM_IMPLEMENTERS.get(implementer, f"implementer {implementer:#x}")
    ctx.note("vendor: no vendor_id or CPU implementer in /proc/cpuinfo")
    return None


def cpu_model(ctx: Context) -> str | None:
    name = ctx.cpuinfo_field("model name")
    if name:
        return name
    # aarch64 kernels print no model name; name the core from its implementer/part instead.
    implementer = _int(ctx.cpuinfo_field("CPU implementer"), 0)
    part = _int(ctx.cpuinfo_field("CPU part"), 0)
    if implementer is not None and part is not None:
        maker = ARM_IMPLEMENTERS.get(implementer, f"{implementer:#x}")
        core = arm_uarch(implementer, part) or f"part {part:#x}"
        ctx.note("cpu_model: no model name in /proc/cpuinfo; named from CPU implementer/part")
        return f"{maker} {core}"
    ctx.note("cpu_model: no model name in /proc/cpuinfo")
    return None


def microarchitecture(ctx: Context) -> str | None:
    flags = (ctx.cpuinfo_field("flags") or "").split()
    if "hypervisor" in flags:
        ctx.note("running under a hypervisor: CPU identification describes the virtual CPU")
    vendor_id = ctx.cpuinfo_field("vendor_id")
    family = _int(ctx.cpuinfo_field("cpu family"))
    model = _int(ctx.cpuinfo_field("model"))
    if vendor_id and family is not None and model is not None:
        name = x86_uarch(vendor_id, family, model, _int(ctx.cpuinfo_field("stepping")))
        if name is None:
            ctx.note(
                f"microarchitecture: {vendor_id} family {family} model {model} ({model:#x}) "
                "is not in the table"
            )
        return name
    implementer = _int(ctx.cpuinfo_field("CPU implementer"), 0)
    part = _int(ctx.cpuinfo_field("CPU part"), 0)
    if implementer is not None and part is not None:
        name = arm_uarch(implementer, part)
        if name is None:
            ctx.note(f"microarchitecture: Arm implementer {implementer:#x} part {part:#x} unknown")
        return name
    ctx.note("microarchitecture: no CPU identification in /proc/cpuinfo")
    return None


# --- topology ---------------------------------------------------------------------------------


def _cpu_ids(ctx: Context) -> list[int]:
    ids = []
    for entry in ctx.path(CPU_DIR).glob("cpu*"):
        m = _CPU_NAME.match(entry.name)
        if m:
            ids.append(int(m.group(1)))
    return sorted(ids)


def _online_cpus(ctx: Context) -> list[int] | None:
    return _cpulist(ctx.read(f"{CPU_DIR}/online"))


def _topology(ctx: Context) -> dict[int, tuple[int, int]] | None:
    """CPU id -> (package, core) for each online CPU, from sysfs, else /proc/cpuinfo."""
    online_list = _online_cpus(ctx)
    online = set(online_list) if online_list is not None else None
    topo: dict[int, tuple[int, int]] = {}
    for cpu in _cpu_ids(ctx):
        if online is not None and cpu not in online:
            continue
        package = _int(ctx.read(f"{CPU_DIR}/cpu{cpu}/topology/physical_package_id"))
        core = _int(ctx.read(f"{CPU_DIR}/cpu{cpu}/topology/core_id"))
        if package is not None and core is not None:
            topo[cpu] = (package, core)
    if topo:
        return topo
    for block in ctx.cpuinfo():
        cpu = _int(block.get("processor"))
        package = _int(block.get("physical id"))
        core = _int(block.get("core id"))
        if cpu is not None and package is not None and core is not None:
            topo[cpu] = (package, core)
    if topo:
        ctx.note("topology: no sysfs CPU topology; sockets and cores from /proc/cpuinfo")
        return topo
    ctx.note("topology: no physical_package_id/core_id in sysfs or /proc/cpuinfo")
    return None


def sockets(ctx: Context) -> int | None:
    topo = _topology(ctx)
    return len({package for package, _ in topo.values()}) if topo else None


def cores(ctx: Context) -> int | None:
    topo = _topology(ctx)
    # core_id repeats across packages, so a physical core is a (package, core) pair.
    return len(set(topo.values())) if topo else None


def threads(ctx: Context) -> int | None:
    online = _online_cpus(ctx)
    if online:
        return len(online)
    topo = _topology(ctx)
    if topo:
        return len(topo)
    processors = [b for b in ctx.cpuinfo() if "processor" in b]
    if processors:
        return len(processors)
    # os.cpu_count describes the live machine only, never a fake tree.
    count = os.cpu_count() if ctx.live else None
    if count:
        ctx.note("threads: from os.cpu_count (no sysfs online list or /proc/cpuinfo)")
    return count


# --- caches -----------------------------------------------------------------------------------


def _cache_instances(ctx: Context) -> dict[tuple[int, tuple[int, ...]], int | None]:
    """Distinct data/unified caches: (level, CPUs sharing it) -> size in bytes (None if unread)."""
    instances: dict[tuple[int, tuple[int, ...]], int | None] = {}
    for cpu in _cpu_ids(ctx):
        base = f"{CPU_DIR}/cpu{cpu}/cache"
        for index in sorted(ctx.path(base).glob("index*")):
            here = f"{base}/{index.name}"
            level = _int(ctx.read(f"{here}/level"))
            if level is None or ctx.read(f"{here}/type") == "Instruction":
                continue
            shared = _cpulist(ctx.read(f"{here}/shared_cpu_list")) or [cpu]
            size = parse_size(ctx.read(f"{here}/size") or "")
            # Every CPU of a shared cache lists the same instance; keep it once.
            instances.setdefault((level, tuple(shared)), size)
    return instances


def _last_level_cache(ctx: Context) -> list[tuple[tuple[int, ...], int | None]] | None:
    """Instances of the L3 (or, lacking one, of the largest-level cache), by first CPU."""
    instances = _cache_instances(ctx)
    if not instances:
        ctx.note(f"caches: no cache information in {CPU_DIR}/cpu*/cache")
        return None
    levels = {level for level, _ in instances}
    level = 3 if 3 in levels else max(levels)
    if level != 3:
        ctx.note(f"caches: no L3; L3 fields describe the L{level}, the last-level cache")
    chosen = [(cpus, size) for (lvl, cpus), size in instances.items() if lvl == level]
    return sorted(chosen, key=lambda item: item[0])


def l3_domains(ctx: Context) -> list[list[int]] | None:
    llc = _last_level_cache(ctx)
    return [list(cpus) for cpus, _ in llc] if llc else None


def l3_bytes(ctx: Context) -> int | None:
    llc = _last_level_cache(ctx)
    if not llc:
        return None
    if any(size is None for _, size in llc):
        ctx.note("l3_bytes: the size of a last-level cache instance is unreadable")
        return None
    return sum(size for _, size in llc if size is not None)


# --- memory -----------------------------------------------------------------------------------


def memory_bytes(ctx: Context) -> int | None:
    text = ctx.read("/proc/meminfo")
    m = re.search(r"^MemTotal:\s+(\d+)\s*kB", text or "", re.MULTILINE)
    if not m:
        ctx.note("memory_bytes: no MemTotal in /proc/meminfo")
        return None
    return int(m.group(1)) * 1024


def numa_nodes(ctx: Context) -> list[dict[str, Any]] | None:
    ids = sorted(
        int(m.group(1))
        for entry in ctx.path(NODE_DIR).glob("node*")
        if (m := _NODE_NAME.match(entry.name))
    )
    if not ids:
        ctx.note(f"numa_nodes: no {NODE_DIR}/node* (kernel without NUMA support?)")
        return None
    nodes: list[dict[str, Any]] = []
    for node in ids:
        cpus = _cpulist(ctx.read(f"{NODE_DIR}/node{node}/cpulist"))
        if cpus is None:
            ctx.note(f"numa_nodes: node{node}/cpulist unreadable")
        m = _NODE_MEMTOTAL.search(ctx.read(f"{NODE_DIR}/node{node}/meminfo") or "")
        if not m:
            ctx.note(f"numa_nodes: no MemTotal in node{node}/meminfo")
        memory = int(m.group(1)) * 1024 if m else None
        # A memory-only node (HBM, CXL) has an empty cpulist: cpus [] is a fact, not a gap.
        nodes.append({"id": node, "cpus": cpus, "memory_bytes": memory})
    return nodes


# --- instruction set and frequency ------------------------------------------------------------


def isa(ctx: Context) -> list[str] | None:
    flags = ctx.cpuinfo_field("flags") or ctx.cpuinfo_field("Features")
    if flags is None:
        ctx.note("isa: no flags or Features line in /proc/cpuinfo")
        return None
    present = set(flags.split())
    return [name for name in HPC_ISA if name in present]


def freq_max_hz(ctx: Context) -> float | None:
    # The highest over all CPUs: hybrid and preferred-core parts differ from cpu0.
    khz = [
        value
        for cpu in _cpu_ids(ctx)
        if (value := _int(ctx.read(f"{CPU_DIR}/cpu{cpu}/cpufreq/cpuinfo_max_freq")))
    ]
    if not khz:
        ctx.note("freq_max_hz: no cpufreq/cpuinfo_max_freq (no cpufreq driver, common in VMs)")
        return None
    return max(khz) * 1e3


def freq_base_hz(ctx: Context) -> float | None:
    """Base (nominal) clock, from the most to the least direct source; each fallback is noted."""
    khz = _int(ctx.read(f"{CPU_DIR}/cpu0/cpufreq/base_frequency"))
    if khz:
        return khz * 1e3
    mhz = _int(ctx.read(f"{CPU_DIR}/cpu0/acpi_cppc/nominal_freq"))
    if mhz:  # firmware that does not fill the field reports 0
        ctx.note("freq_base_hz: from ACPI CPPC nominal_freq (no cpufreq base_frequency)")
        return mhz * 1e6
    m = _MODEL_GHZ.search(ctx.cpuinfo_field("model name") or "")
    if m:
        ctx.note("freq_base_hz: from the '@ ...Hz' in the CPU model name")
        return float(m.group(1)) * (1e9 if m.group(2).upper() == "G" else 1e6)
    current = ctx.cpuinfo_field("cpu MHz")
    try:
        value = float(current) if current else None
    except ValueError:
        value = None
    if value:
        ctx.note("freq_base_hz: the current clock ('cpu MHz' in /proc/cpuinfo), not the base")
        return value * 1e6
    ctx.note("freq_base_hz: no base frequency in sysfs, the model name or /proc/cpuinfo")
    return None


# --- network ----------------------------------------------------------------------------------


def _rate_gbps(rate: str | None) -> float | None:
    # sysfs rate reads like "200 Gb/sec (4X HDR)".
    m = re.match(r"\s*([\d.]+)\s*Gb/sec", rate or "")
    return float(m.group(1)) if m else None


def _rdma_devices(ctx: Context) -> list[dict[str, Any]]:
    devices = []
    for dev in sorted(ctx.path("/sys/class/infiniband").glob("*")):
        base = f"/sys/class/infiniband/{dev.name}"
        ports = []
        for port in sorted(ctx.path(f"{base}/ports").glob("*"), key=lambda p: _int(p.name) or 0):
            here = f"{base}/ports/{port.name}"
            rate = ctx.read(f"{here}/rate")
            state = ctx.read(f"{here}/state")  # "4: ACTIVE"
            ports.append(
                {
                    "port": _int(port.name),
                    "rate": rate,
                    "rate_gbps": _rate_gbps(rate),
                    "link_layer": ctx.read(f"{here}/link_layer"),
                    "state": state.partition(":")[2].strip() if state else None,
                }
            )
        devices.append(
            {"name": dev.name, "kind": "rdma", "fw_ver": ctx.read(f"{base}/fw_ver"), "ports": ports}
        )
    return devices


def _net_interfaces(ctx: Context) -> list[dict[str, Any]] | None:
    if not ctx.path("/sys/class/net").is_dir():
        ctx.note("nics: no /sys/class/net")
        return None
    interfaces = []
    for iface in sorted(ctx.path("/sys/class/net").glob("*")):
        if iface.name == "lo":
            continue
        here = f"/sys/class/net/{iface.name}"
        speed = _int(ctx.read(f"{here}/speed"))
        interfaces.append(
            {
                "name": iface.name,
                "kind": "net",
                # -1 (link down) and EINVAL (virtual device) both mean "not known".
                "speed_mbps": speed if speed is not None and speed > 0 else None,
                "state": ctx.read(f"{here}/operstate"),
                "mtu": _int(ctx.read(f"{here}/mtu")),
                # Physical NICs link to their bus device; bridges, tunnels, veths do not.
                "virtual": not ctx.path(f"{here}/device").exists(),
            }
        )
    return interfaces


def nics(ctx: Context) -> list[dict[str, Any]] | None:
    """RDMA devices (/sys/class/infiniband), then network interfaces other than lo."""
    rdma = _rdma_devices(ctx)
    net = _net_interfaces(ctx)
    if net is None and not rdma:
        return None
    return rdma + (net or [])
