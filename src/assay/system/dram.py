"""The theoretical DRAM bandwidth of a node, from its DIMMs: populated DIMMs × MT/s × 8 B.

STREAM's figure means little without it: 22 GB/s is most of one DDR4 channel and a tenth of a
twelve-channel socket. The DIMMs are read from SMBIOS (``dmidecode -t 17``, root only): each
populated "Memory Device", at its "Configured Memory Speed" (else its "Speed"). Each DIMM is
counted as a channel of its own (64 data bits, 8 B a transfer — DDR5's two 32-bit
sub-channels make the same 8 B), which is right for one DIMM per channel and an upper bound
with two: the derivation says so.

Under a hypervisor SMBIOS is the hypervisor's invention (QEMU lists one DIMM of the guest's
size, speed "Unknown"), and the host's DIMMs cannot be seen at all: the result is then
"unknown", with that reason, never a guess.

``dram_peak`` returns ``{"bytes_per_s", "derivation", "source"}`` or ``{"reason"}``; never
raises.
"""

from __future__ import annotations

import re
from typing import Any

from assay.system._context import Context

BYTES_PER_TRANSFER = 8  # a DIMM's 64 data bits (ECC bits carry no data)
_SPEED = re.compile(r"^\s*(Configured Memory Speed|Configured Clock Speed|Speed):\s*(\d+)\s*MT/s")
_SIZE = re.compile(r"^\s*Size:\s*(.+)$")


def dimms_from_dmidecode(text: str) -> list[dict[str, Any]]:
    """Populated DIMMs of ``dmidecode -t 17`` output: [{"size", "mts"}] (mts None: unknown)."""
    out = []
    for block in text.split("\n\n"):
        if "Memory Device" not in block:
            continue
        size, speeds = None, {}
        for line in block.splitlines():
            if m := _SIZE.match(line):
                size = m.group(1).strip()
            elif m := _SPEED.match(line):
                speeds[m.group(1)] = int(m.group(2))
        if not size or size.startswith("No Module") or size in ("0", "Unknown"):
            continue
        mts = (
            speeds.get("Configured Memory Speed")
            or speeds.get("Configured Clock Speed")
            or speeds.get("Speed")
        )
        out.append({"size": size, "mts": mts})
    return out


def peak_of(dimms: list[dict[str, Any]], source: str) -> dict[str, Any]:
    """The peak of these DIMMs, or why there is none."""
    if not dimms:
        return {"reason": f"no populated DIMM listed ({source})"}
    speeds = {d["mts"] for d in dimms}
    if None in speeds or len(speeds) != 1:
        return {"reason": f"DIMM speeds unknown or mixed ({source}: {sorted(map(str, speeds))})"}
    mts = speeds.pop()
    peak = len(dimms) * mts * 1e6 * BYTES_PER_TRANSFER
    return {
        "bytes_per_s": peak,
        "derivation": f"{len(dimms)} DIMMs × {mts} MT/s × {BYTES_PER_TRANSFER} B = "
        f"{peak / 1e9:.1f} GB/s (one DIMM per channel assumed; two per channel share it)",
        "source": source,
    }


def dram_peak(ctx: Context) -> dict[str, Any]:
    """The node's theoretical DRAM bandwidth, or the reason it is unknown."""
    virtual = "hypervisor" in (ctx.cpuinfo_field("flags") or "").split()
    if virtual:
        return {
            "reason": "a virtual machine (the CPU's 'hypervisor' flag): the host's DIMMs are "
            "hidden from the guest and its SMBIOS memory table is the hypervisor's"
        }
    if not ctx.which("dmidecode"):
        return {"reason": "dmidecode not found (apt-get install dmidecode) and no other source"}
    text = ctx.run(["dmidecode", "-t", "17"])
    if not text or "Memory Device" not in text:
        return {"reason": "dmidecode -t 17 listed no memory device (it needs root and SMBIOS)"}
    return peak_of(dimms_from_dmidecode(text), "dmidecode -t 17")


def describe_dram(dram: dict[str, Any]) -> str:
    """One line for the system tables: the derivation, or 'unknown: <reason>'."""
    if dram.get("derivation"):
        return f"{dram['derivation']} ({dram.get('source', '')})"
    return f"unknown: {dram.get('reason') or 'not collected'}"
