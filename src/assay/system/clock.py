"""Every clock frequency the node states, each with where it was read: the inputs of Rpeak.

Rpeak needs a *stable* clock — the nominal (base) one that vendors and TOP500 use, or the max
(boost) one as a labelled upper bound. The current clock of ``/proc/cpuinfo`` is none of
these: it moves with load and power state, and in a VM it is whatever the hypervisor reports
(on one VM 2.45 GHz "current" put DGEMM at 102.6% of Rpeak). This module only *reads*; which
candidate Rpeak uses is chosen by ``assay.system.peak`` (pure), which says which it took.

Sources, one candidate each (``kind`` is "base", "max" or "current"):

- ``cpufreq/base_frequency`` (intel_pstate, amd-pstate): the nominal clock, kHz;
- ``acpi_cppc/nominal_freq``: the firmware's nominal clock, MHz (0 when unfilled);
- the "@ 2.40GHz" in the ``/proc/cpuinfo`` model name (Intel names carry it, AMD's do not);
- the per-model table ``assay/data/cpu_clocks.toml`` (vendor product pages), by model name;
- ``dmidecode -t processor`` (SMBIOS type 4): "Current Speed" is, per the SMBIOS spec, the
  speed at boot (the nominal clock on the servers we saw), "Max Speed" the highest the board
  supports. Under a hypervisor the table is the hypervisor's own — QEMU writes 2000 MHz
  whatever the host runs — so those candidates are marked ``trusted = False``;
- ``cpufreq/cpuinfo_max_freq``: the max (boost) clock, highest over all CPUs;
- "cpu MHz" of ``/proc/cpuinfo``: the current clock, last resort.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any

from assay.inputfile import load_toml
from assay.system._context import Context

CPU_DIR = "/sys/devices/system/cpu"
CLOCK_TABLE = "cpu_clocks.toml"
_MODEL_GHZ = re.compile(r"@\s*([\d.]+)\s*([GM])Hz", re.IGNORECASE)
_DMI_SPEED = re.compile(r"^\s*(Max|Current) Speed:\s*(\d+)\s*MHz", re.MULTILINE)


@dataclass(frozen=True)
class ClockCandidate:
    """One stated clock: its value, what it is, where it was read, and whether to trust it."""

    hz: float
    kind: str  # "base" (nominal), "max" (boost) or "current"
    source: str  # "/proc/cpuinfo model name", "cpufreq base_frequency", ...
    trusted: bool = True
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ClockCandidate:
        return cls(
            hz=float(data["hz"]),
            kind=str(data["kind"]),
            source=str(data["source"]),
            trusted=bool(data.get("trusted", True)),
            note=str(data.get("note", "")),
        )


def _number(text: str | None) -> float | None:
    try:
        value = float(text) if text else None
    except ValueError:
        return None
    return value if value and value > 0 else None


def _cpus(ctx: Context) -> list[str]:
    return sorted(
        (p.name for p in ctx.path(CPU_DIR).glob("cpu*") if p.name[3:].isdigit()),
        key=lambda name: int(name[3:]),
    )


def from_cpufreq(ctx: Context) -> list[ClockCandidate]:
    out = []
    khz = _number(ctx.read(f"{CPU_DIR}/cpu0/cpufreq/base_frequency"))
    if khz:
        out.append(ClockCandidate(khz * 1e3, "base", "cpufreq base_frequency"))
    mhz = _number(ctx.read(f"{CPU_DIR}/cpu0/acpi_cppc/nominal_freq"))
    if mhz:
        out.append(ClockCandidate(mhz * 1e6, "base", "ACPI CPPC nominal_freq"))
    # The highest over all CPUs: hybrid and preferred-core parts differ from cpu0.
    tops = [
        v
        for cpu in _cpus(ctx)
        if (v := _number(ctx.read(f"{CPU_DIR}/{cpu}/cpufreq/cpuinfo_max_freq")))
    ]
    if tops:
        out.append(ClockCandidate(max(tops) * 1e3, "max", "cpufreq cpuinfo_max_freq"))
    return out


def from_model_name(model: str | None) -> list[ClockCandidate]:
    m = _MODEL_GHZ.search(model or "")
    if not m:
        return []
    hz = float(m.group(1)) * (1e9 if m.group(2).upper() == "G" else 1e6)
    return [ClockCandidate(hz, "base", "/proc/cpuinfo model name")]


def load_clock_table() -> dict[str, dict[str, Any]]:
    """The shipped per-model table: exact model name -> {base_ghz, max_ghz, source}."""
    text = (resources.files("assay") / "data" / CLOCK_TABLE).read_text()
    return dict(load_toml(text).get("model", {}))


def from_table(
    model: str | None, table: dict[str, dict[str, Any]] | None = None
) -> list[ClockCandidate]:
    if not model:
        return []
    entry = (table if table is not None else load_clock_table()).get(" ".join(model.split()))
    if not entry:
        return []
    source = f"{CLOCK_TABLE} ({entry['source']})"
    out = [ClockCandidate(float(entry["base_ghz"]) * 1e9, "base", source)]
    if "max_ghz" in entry:
        out.append(ClockCandidate(float(entry["max_ghz"]) * 1e9, "max", source))
    return out


def from_dmidecode(text: str | None, *, virtual: bool) -> list[ClockCandidate]:
    """SMBIOS processor speeds; the first processor that states them (all sockets alike)."""
    speeds: dict[str, float] = {}
    for which, mhz in _DMI_SPEED.findall(text or ""):
        if int(mhz) > 0:
            speeds.setdefault(which, int(mhz) * 1e6)
    note = (
        "under a hypervisor SMBIOS is the hypervisor's table (QEMU states 2000 MHz whatever "
        "the host runs)"
        if virtual
        else ""
    )
    out = []
    if "Current" in speeds:
        out.append(
            ClockCandidate(
                speeds["Current"],
                "base",
                "dmidecode Current Speed (SMBIOS: the speed at boot)",
                trusted=not virtual,
                note=note,
            )
        )
    if "Max" in speeds:
        out.append(
            ClockCandidate(
                speeds["Max"], "max", "dmidecode Max Speed", trusted=not virtual, note=note
            )
        )
    return out


def from_current(ctx: Context) -> list[ClockCandidate]:
    hz = _number(ctx.cpuinfo_field("cpu MHz"))
    if not hz:
        return []
    return [
        ClockCandidate(
            hz * 1e6,
            "current",
            "/proc/cpuinfo cpu MHz",
            note="the current clock moves with load and power state; in a VM it is the "
            "hypervisor's figure",
        )
    ]


def clock_candidates(ctx: Context) -> list[dict[str, Any]] | None:
    """Every clock the node states, as dicts (the System record's ``clocks``), best first
    within each source family; None (and a note) when there is none at all."""
    model = ctx.cpuinfo_field("model name")
    virtual = "hypervisor" in (ctx.cpuinfo_field("flags") or "").split()
    found = from_cpufreq(ctx) + from_model_name(model) + from_table(model)
    # dmidecode reads /sys/firmware/dmi or /dev/mem: root only; it fails quietly otherwise.
    if ctx.which("dmidecode"):
        found += from_dmidecode(ctx.run(["dmidecode", "-t", "processor"]), virtual=virtual)
    found += from_current(ctx)
    if not found:
        ctx.note("clocks: no clock in cpufreq, the model name, dmidecode or /proc/cpuinfo")
        return None
    if not any(c.kind != "current" and c.trusted for c in found):
        ctx.note(
            "clocks: only the current clock is known (no cpufreq, no '@ GHz' in the model "
            "name, no table entry, no trusted dmidecode): set clock_ghz in config.toml's peak table"
        )
    return [c.to_dict() for c in found]


def describe_clocks(clocks: list[dict[str, Any]]) -> str:
    """One line for ``assay doctor``: "2.40 GHz base (/proc/cpuinfo model name); ..."."""
    parts = []
    for c in clocks:
        untrusted = "" if c.get("trusted", True) else ", not trusted"
        parts.append(f"{float(c['hz']) / 1e9:.2f} GHz {c['kind']} ({c['source']}{untrusted})")
    return "; ".join(parts)
