"""Rpeak: the theoretical peak of one node, cores x clock x FLOPs per cycle per core.

This is the figure TOP500 lists as Rpeak and vendors print next to HPL's Rmax ("~1000
GigaFLOPS Rpeak, ~860 Rmax"). The FLOPs per cycle of each micro-architecture live in
``assay/data/flops_per_cycle.toml``, each entry with its sources; a micro-architecture that is
not there is *unknown*: the result then carries no value and says which override to set, it
never falls back on a guess from the ISA flags.

Which clock: a *stated, stable* one, never the current clock while another exists. The
candidates are read by ``assay.system.clock`` (each with its source) and kept in the system
record; ``choose_clock`` takes the nominal (base) clock by default, the convention of TOP500
Rpeak figures — cpufreq base_frequency, ACPI CPPC nominal_freq, the "@ 2.40GHz" of the model
name, the per-model table ``cpu_clocks.toml``, dmidecode's Current Speed on bare metal, in that
order — else the max (boost) clock as a labelled upper bound, else, said loudly, the current
clock. ``clock = "max"`` picks the max clock; ``clock_ghz`` gives one outright (an all-core
AVX-512 clock, say, with ``clock_kind = "AVX-512 all-core"`` to label it). The derivation
names the clock and its source: "2 cores × 2.40 GHz (nominal, /proc/cpuinfo model name) × 16 DP
FLOP/cycle (...) = 76.80 GFLOP/s".

The AVX-512 frequency licence: Intel Xeon Scalable cores (Skylake-SP to Emerald Rapids) run
sustained AVX-512 FMA below their nominal clock, by a per-SKU amount Intel publishes; their
table entries carry a ``licence`` caveat that joins the notes whenever Rpeak uses a stated
clock; an entry without one adds no caveat.

A measured rate above Rpeak is impossible on the hardware as described: ``rpeak_flag`` turns
it into "Rpeak too low: clock source ..." for the report, never a bare 106%.

Overrides, in ``~/.config/assay/config.toml`` and/or as the ``overrides`` argument (which
wins), any subset; their table is declared here (``PeakTable``), and checked by it both ways::

    [peak]
    uarch = "zen2"              # use this table entry (for a CPU assay cannot identify)
    cores = 120
    clock_ghz = 2.45
    clock_kind = "all-core"     # a label for clock_ghz (default "user")
    clock = "base"              # or "max": which measured clock, when clock_ghz is not set
    flops_per_cycle_dp = 16
    flops_per_cycle_sp = 32
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Field

from assay.config import read_config
from assay.config.schema import ConfigTable, Name, Section, validate_section
from assay.errors import AssayError, ConfigError
from assay.model import System
from assay.system.flopstable import (  # re-exported: callers and tests import them from here
    TABLE_FILE,
    FlopsTableError,
    Precision,
    UarchEntry,
    load_table,
    parse_table,
)

__all__ = [
    "TABLE_FILE",
    "FlopsTableError",
    "PeakResult",
    "PeakUnknownError",
    "Precision",
    "UarchEntry",
    "load_table",
    "parse_table",
    "rpeak",
    "rpeak_flag",
]

PRECISIONS: tuple[Precision, ...] = ("dp", "sp")
PRECISION_LABEL: dict[Precision, str] = {"dp": "DP", "sp": "SP"}


class PeakTable(ConfigTable):
    """``[peak]``: Rpeak overrides."""

    uarch: Name | None = Field(None, description="use this entry of flops_per_cycle.toml")
    cores: Annotated[int, Field(ge=1, le=65536)] | None = Field(None, description="per node")
    clock_ghz: Annotated[float, Field(ge=0.01, le=100)] | None = Field(
        None, description="the clock outright (an all-core AVX-512 clock, say)"
    )
    clock_kind: Name | None = Field(None, description='a label for clock_ghz (default "user")')
    clock: Literal["base", "max"] | None = Field(
        None, description="which measured clock, when clock_ghz is not set (default base)"
    )
    flops_per_cycle_dp: Annotated[float, Field(gt=0, le=4096)] | None = Field(
        None, description="per core"
    )
    flops_per_cycle_sp: Annotated[float, Field(gt=0, le=4096)] | None = Field(
        None, description="per core"
    )


SECTION = Section("peak", PeakTable)
OVERRIDE_KEYS = tuple(PeakTable.model_fields)
# What assay.system.collectors.freq_base_hz notes when its "base" clock is really the current
# clock of /proc/cpuinfo (no cpufreq, no "@ 2.60GHz" in the model name, common in VMs).
CURRENT_CLOCK_NOTE = "freq_base_hz: the current clock"
FIX_UARCH = 'uarch = "<name>" or flops_per_cycle_dp / flops_per_cycle_sp'
FIX_PER_CYCLE = "flops_per_cycle_dp / flops_per_cycle_sp"


class PeakUnknownError(AssayError):
    """Rpeak cannot be stated without guessing: micro-architecture, cores or clock unknown."""


# --- the result ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PeakResult:
    """Rpeak of one node in flop/s; a value is None when it could not be stated (see reason)."""

    dp_flops: float | None
    sp_flops: float | None
    cores: int | None
    clock_hz: float | None
    clock_kind: str | None  # "base", "max", "current" or "user" (or the user's own label)
    flops_per_cycle_dp: float | None
    flops_per_cycle_sp: float | None
    uarch: str | None
    derivation: str  # the DP sentence: "120 cores × 2.45 GHz (base) × 16 DP ... = 4.70 TFLOP/s"
    derivation_sp: str
    sources: tuple[str, ...] = ()
    reason: str = ""  # why a value is None; "" when both are known
    notes: tuple[str, ...] = ()  # caveats: one-FMA SKUs, which clock stood in for the base...
    overridden: tuple[str, ...] = ()  # the inputs the user gave
    clock_source: str = ""  # "nominal, /proc/cpuinfo model name": what the derivation names

    @property
    def known(self) -> bool:
        return self.dp_flops is not None and self.sp_flops is not None

    def value(self, precision: Precision) -> float | None:
        return self.dp_flops if precision == "dp" else self.sp_flops

    def derivation_for(self, precision: Precision) -> str:
        return self.derivation if precision == "dp" else self.derivation_sp

    def require(self, precision: Precision = "dp") -> float:
        """The peak, or PeakUnknownError saying what to set."""
        value = self.value(precision)
        if value is None:
            raise PeakUnknownError(
                f"no {PRECISION_LABEL[precision]} Rpeak: {self.reason}",
                hint=f"known micro-architectures: {', '.join(sorted(load_table()))}",
            )
        return value

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        for key in ("sources", "notes", "overridden"):
            d[key] = list(d[key])
        return d


# --- overrides ----------------------------------------------------------------------------------


def validate_overrides(raw: Mapping[str, Any], origin: str = "[peak]") -> dict[str, Any]:
    """Checked overrides: the declaration's types and ranges (unknown keys and wrong types are
    errors, never ignored), then what they mean together."""
    out = validate_section(SECTION, raw, origin)
    if "uarch" in out:
        table = load_table()
        if out["uarch"] not in table:
            raise ConfigError(
                f"{origin}: [peak] uarch {out['uarch']!r} is not in {TABLE_FILE}",
                hint=f"known: {', '.join(sorted(table))}",
            )
    if "clock_kind" in out:
        out["clock_kind"] = out["clock_kind"].strip()
        if not out["clock_kind"]:
            raise ConfigError(f"{origin}: [peak] clock_kind must be a non-empty string")
        if "clock_ghz" not in out:
            raise ConfigError(f"{origin}: [peak] clock_kind labels clock_ghz, which is not set")
    return out


def merged_overrides(
    config: Mapping[str, Any], overrides: Mapping[str, Any] | None
) -> dict[str, Any]:
    """config.toml's [peak] table, then the caller's overrides on top."""
    merged = validate_overrides(config.get("peak") or {}, "config.toml")
    merged.update(validate_overrides(overrides or {}, "peak overrides"))
    return merged


# --- the pieces of the product -----------------------------------------------------------------


@dataclass(frozen=True)
class Clock:
    hz: float | None
    kind: str | None  # "base", "max", "current", "user" or the user's own label
    source: str = ""  # where it was read: "/proc/cpuinfo model name", "cpufreq ...", ...
    note: str = ""
    reason: str = ""  # why hz is None: the override key names the fix

    @property
    def label(self) -> str:
        """What the derivation prints in parentheses after the GHz."""
        what = KIND_LABEL.get(self.kind or "", self.kind or "")
        return f"{what}, {self.source}" if self.source else what


KIND_LABEL = {"base": "nominal", "max": "max/boost", "current": "CURRENT clock"}


@dataclass(frozen=True)
class ClockOption:
    """One clock the system record states (``System.clocks``, from assay.system.clock)."""

    hz: float
    kind: str  # "base", "max" or "current"
    source: str
    trusted: bool = True


def clock_options(system: System) -> list[ClockOption]:
    """The record's clock candidates; a record from before ``clocks`` existed (or a test's
    hand-made System) gives its freq_base_hz / freq_max_hz instead, labelled as such."""
    if system.clocks:
        return [
            ClockOption(
                float(c["hz"]), str(c["kind"]), str(c["source"]), bool(c.get("trusted", True))
            )
            for c in system.clocks
            if c.get("hz")
        ]
    out = []
    if system.freq_base_hz:
        current = any(note.startswith(CURRENT_CLOCK_NOTE) for note in system.notes)
        kind = "current" if current else "base"
        out.append(ClockOption(system.freq_base_hz, kind, "system record freq_base_hz"))
    if system.freq_max_hz:
        out.append(ClockOption(system.freq_max_hz, "max", "system record freq_max_hz"))
    return out


def choose_clock(options: list[ClockOption], want: str = "base") -> Clock:
    """The clock Rpeak uses, from the stated ones; never the current clock while a stable one
    exists, and never an unlabelled stand-in.

    Order (``want = "base"``): the first trusted nominal clock (cpufreq base_frequency, ACPI
    CPPC, the model name's "@ GHz", the per-model table, dmidecode on bare metal, in the order
    assay.system.clock reads them); else the max (boost) clock as a labelled upper bound;
    else the current clock, said loudly. Untrusted candidates (a hypervisor's SMBIOS) are
    never used. ``want = "max"`` takes the first trusted max clock or nothing.
    """
    trusted = [o for o in options if o.trusted]
    first = {kind: next((o for o in trusted if o.kind == kind), None) for kind in KIND_LABEL}
    top = first["max"]
    if want == "max":
        if top:
            return Clock(
                top.hz,
                "max",
                top.source,
                note="the max (boost) clock: no all-core FMA load holds it",
            )
        return Clock(None, None, reason="the max clock is unknown (no cpufreq, table or dmidecode)")
    if base := first["base"]:
        return Clock(base.hz, "base", base.source)
    if top:
        return Clock(
            top.hz,
            "max",
            top.source,
            note="the nominal clock is unknown: the max (boost) clock stands in for it, an upper "
            "bound; set [peak] clock_ghz to the nominal clock",
        )
    if current := first["current"]:
        return Clock(
            current.hz,
            "current",
            current.source + ": no stable clock found",
            note="Rpeak uses the CURRENT clock: no nominal or max clock was found (no cpufreq, "
            "no '@ GHz' in the model name, no table entry, no trusted dmidecode); it moves "
            "with load and, in a VM, is the hypervisor's figure: set [peak] clock_ghz to the "
            "nominal clock for an Rpeak that holds",
        )
    return Clock(None, None, reason="the clock is unknown (no base or max frequency was read)")


def select_clock(system: System, ov: Mapping[str, Any]) -> Clock:
    """The user's clock when set (``clock_ghz``), else ``choose_clock`` over the record's."""
    if "clock_ghz" in ov:
        return Clock(ov["clock_ghz"] * 1e9, ov.get("clock_kind", "user"))
    return choose_clock(clock_options(system), "max" if ov.get("clock") == "max" else "base")


@dataclass(frozen=True)
class PerCycle:
    value: float | None
    label: str = ""  # "(zen2: AVX2, 2 FMA units, 256-bit)"
    sources: tuple[str, ...] = ()
    note: str = ""
    reason: str = ""
    fix: str = ""  # the override keys that would supply the value


def _unknown_uarch_reason(system: System) -> str:
    if system.microarchitecture:
        return f"micro-architecture {system.microarchitecture!r} has no entry in {TABLE_FILE}"
    return f"unknown micro-architecture ({system.cpu_model or 'CPU model unknown'})"


def flops_per_cycle(system: System, ov: Mapping[str, Any], precision: Precision) -> PerCycle:
    """FLOPs per cycle per core for one precision: the user's, the table's, or a reason."""
    key = f"flops_per_cycle_{precision}"
    if key in ov:
        return PerCycle(ov[key], label="(set by the user)", sources=("user override",))
    name = ov.get("uarch") or system.microarchitecture
    entry = load_table().get(name) if name else None
    if entry is None:
        return PerCycle(None, reason=_unknown_uarch_reason(system), fix=FIX_UARCH)
    named = ", named by the user" if "uarch" in ov else ""
    label = f"({entry.name}{named}: {entry.simd})"
    if system.isa is None:
        return PerCycle(
            entry.flops_per_cycle(precision),
            label,
            entry.source,
            note=f"the CPU flags are unknown: could not confirm {', '.join(entry.requires)}",
        )
    missing = [flag for flag in entry.requires if flag not in system.isa]
    if missing:
        return PerCycle(
            None,
            reason=f"{entry.name} reaches {entry.flops_per_cycle(precision)} "
            f"{PRECISION_LABEL[precision]} FLOP/cycle only with {', '.join(missing)}, which "
            "this CPU's flags lack (masked by a hypervisor?)",
            fix=FIX_PER_CYCLE,
        )
    return PerCycle(entry.flops_per_cycle(precision), label, entry.source, note=entry.note)


def format_flops(value: float) -> str:
    """4.70 TFLOP/s, 860.00 GFLOP/s: the unit that keeps the number readable."""
    for unit, factor in (("PFLOP/s", 1e15), ("TFLOP/s", 1e12), ("GFLOP/s", 1e9)):
        if value >= factor:
            return f"{value / factor:.2f} {unit}"
    return f"{value / 1e6:.2f} MFLOP/s"


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else f"{x:g}"


def derivation_text(
    cores: int, cores_by_user: bool, clock: Clock, per_cycle: PerCycle, precision: Precision
) -> str:
    """The sentence that shows the product, e.g. 120 cores × 2.45 GHz (base) × 16 DP FLOP/cycle
    (zen2: AVX2, 2 FMA units, 256-bit) = 4.70 TFLOP/s."""
    assert clock.hz is not None and per_cycle.value is not None
    value = cores * clock.hz * per_cycle.value
    by_user = " (set by the user)" if cores_by_user else ""
    return (
        f"{cores} cores{by_user} × {clock.hz / 1e9:.2f} GHz ({clock.label}) × "
        f"{_number(per_cycle.value)} {PRECISION_LABEL[precision]} FLOP/cycle "
        f"{per_cycle.label} = {format_flops(value)}"
    )


def _licence(ov: Mapping[str, Any], system: System, clock: Clock) -> str:
    """The table's frequency-licence caveat, when Rpeak uses a stated clock of such a core."""
    if "clock_ghz" in ov or "flops_per_cycle_dp" in ov or not clock.hz:
        return ""
    entry = load_table().get(ov.get("uarch") or system.microarchitecture or "")
    return entry.licence if entry else ""


def _unique(items: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for i in items if i))


def override_reason(missing: list[tuple[str, str]]) -> str:
    """What is unknown, then the override keys that would supply it, in one sentence."""
    if not missing:
        return ""
    what = "; ".join(_unique([m for m, _ in missing]))
    keys = ", ".join(_unique([k for _, k in missing]))
    return f"{what}: set an override, [peak] {keys} in config.toml (or pass overrides)"


# --- Rpeak --------------------------------------------------------------------------------------


def rpeak(
    system: System,
    overrides: Mapping[str, Any] | None = None,
    *,
    config: Mapping[str, Any] | None = None,
) -> PeakResult:
    """Rpeak of the node ``system`` describes: cores × clock × FLOPs/cycle/core, DP and SP.

    ``config`` defaults to the user's config.toml (its [peak] table); ``overrides`` win over it.
    Raises ConfigError for a malformed override; an unknown input is not an error but a
    result whose value is None and whose ``reason`` says what to set.
    """
    ov = merged_overrides(read_config() if config is None else config, overrides)
    cores = ov.get("cores", system.cores)
    clock = select_clock(system, ov)
    per_cycle = {p: flops_per_cycle(system, ov, p) for p in PRECISIONS}

    missing: list[tuple[str, str]] = []  # (what is unknown, the override that fixes it)
    if not cores:
        missing.append(("the core count is unknown", "cores"))
    if clock.reason:
        missing.append((clock.reason, "clock_ghz"))
    values: dict[Precision, float | None] = {}
    sentences: dict[Precision, str] = {}
    for p in PRECISIONS:
        pc = per_cycle[p]
        if cores and clock.hz and pc.value is not None:
            values[p] = cores * clock.hz * pc.value
            sentences[p] = derivation_text(cores, "cores" in ov, clock, pc, p)
        else:
            values[p] = None
            own = [(pc.reason, pc.fix)] if pc.reason else []
            sentences[p] = f"no {PRECISION_LABEL[p]} Rpeak: {override_reason(missing + own)}"
    dp, sp = per_cycle["dp"], per_cycle["sp"]
    if dp.reason and dp.reason == sp.reason:  # the usual case: one cause for both precisions
        missing.append((dp.reason, dp.fix))
    else:
        missing += [
            (f"{PRECISION_LABEL[p]}: {pc.reason}", pc.fix)
            for p, pc in per_cycle.items()
            if pc.reason
        ]

    return PeakResult(
        dp_flops=values["dp"],
        sp_flops=values["sp"],
        cores=cores,
        clock_hz=clock.hz,
        clock_kind=clock.kind,
        clock_source=clock.label if clock.hz else "",
        flops_per_cycle_dp=per_cycle["dp"].value,
        flops_per_cycle_sp=per_cycle["sp"].value,
        uarch=ov.get("uarch") or system.microarchitecture,
        derivation=sentences["dp"],
        derivation_sp=sentences["sp"],
        sources=_unique([s for p in PRECISIONS for s in per_cycle[p].sources]),
        reason=override_reason(missing),
        notes=_unique(
            [clock.note, *(per_cycle[p].note for p in PRECISIONS), _licence(ov, system, clock)]
        ),
        overridden=tuple(k for k in OVERRIDE_KEYS if k in ov),
    )


# --- a measured rate against Rpeak ---------------------------------------------------------------

_CLOCK_IN_DERIVATION = re.compile(r"GHz \(([^)]*)\)")


def rpeak_flag(rate: float, rpeak: float | None, derivation: str = "") -> str | None:
    """The flag for a measured rate above Rpeak, or None when the rate is within it.

    No code can run faster than the peak of the hardware it runs on, so a rate above Rpeak
    means Rpeak was stated too low: a clock below the one the cores ran at (the current clock
    of an idle VM, a hypervisor's SMBIOS figure, a base clock under boost), or too few
    FLOPs/cycle. The flag names the clock source the derivation used, e.g.
    "Rpeak too low: clock source nominal, /proc/cpuinfo model name — DGEMM at 102.6% ...".
    ``derivation`` is the Rpeak sample's sentence (``PeakResult.derivation``).
    """
    if not rpeak or not rate > rpeak:
        return None
    m = _CLOCK_IN_DERIVATION.search(derivation)
    source = m.group(1) if m else "not stated"
    return (
        f"Rpeak too low: clock source {source}: the measured {format_flops(rate)} is "
        f"{100 * rate / rpeak:.1f}% of Rpeak {format_flops(rpeak)}"
        + (f" ({derivation})" if derivation else "")
        + "; the cores ran faster than that clock, or do more FLOPs/cycle: set [peak] clock_ghz"
    )
