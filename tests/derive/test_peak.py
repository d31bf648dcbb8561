"""Rpeak (assay.system.peak): the FLOPs/cycle table, overrides, unknowns, the derivation.

Pure: no probe runs. The expected peaks are the published figures of real parts (vendor
datasheets, TOP500), computed independently of the table as cores × GHz × FLOPs/cycle.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from assay.errors import ConfigError
from assay.model import System
from assay.system import uarch as uarch_ids
from assay.system.peak import (
    FlopsTableError,
    PeakUnknownError,
    format_flops,
    load_table,
    parse_table,
    rpeak,
)

X86_FLAGS = ["sse4_2", "avx", "avx2", "fma", "avx512f", "avx512dq", "avx512bw", "avx512vl"]
ARM_FLAGS = ["asimd", "sve", "sve2"]

# Micro-architectures assay can identify but deliberately leaves out of the table for want of
# a source at hand (flops_per_cycle.toml's header lists them): they must come out "unknown".
UNLISTED = {
    "cooperlake",
    "graniterapids",
    "sierraforest",
    "knm",
    "thunderx2",
    "tsv110",
    "ampere1",
    "neoverse-v3",
    "neoverse-n3",
}


def node(uarch: str | None, cores: int | None = 64, ghz: float | None = 2.0, **kw) -> System:
    isa = ARM_FLAGS if uarch and (uarch.startswith("neoverse") or uarch == "a64fx") else X86_FLAGS
    fields = {
        "cpu_model": "Test CPU",
        "microarchitecture": uarch,
        "cores": cores,
        "freq_base_hz": ghz * 1e9 if ghz else None,
        "isa": isa,
    }
    return System(**{**fields, **kw})


# --- the table ---------------------------------------------------------------------------------


def identified_uarchs() -> set[str]:
    names = set(uarch_ids.INTEL_FAMILY6.values())
    names |= {name for _, _, name in uarch_ids._INTEL_0x55_BY_STEPPING}
    names |= {name for *_, name in uarch_ids.AMD_MODEL_RANGES}
    names |= set(uarch_ids.ARM_PARTS.values())
    return names


def test_every_identified_uarch_is_in_the_table_or_knowingly_left_out():
    table = set(load_table())
    ids = identified_uarchs()
    assert ids - table == UNLISTED, "add the new micro-architecture to flops_per_cycle.toml"
    assert not UNLISTED & table
    assert {"skylake-client"} <= table - ids  # a name only an override reaches


@pytest.mark.parametrize("name", sorted(load_table()))
def test_each_entry_is_consistent_and_cited(name: str):
    e = load_table()[name]
    # the numbers follow from the units that produce them
    assert e.dp == e.pipes * (e.vector_bits // 64) * e.flops_per_lane
    assert e.sp == e.pipes * (e.vector_bits // 32) * e.flops_per_lane
    assert e.flops_per_lane in (1, 2) and e.vector_bits in (128, 256, 512)
    assert e.requires and e.simd
    assert e.source and all(s.startswith(("https://", "http://")) for s in e.source)


def test_families_have_the_expected_flops_per_cycle():
    expected = {
        "sandybridge": 8,  # AVX, separate add + mul, no FMA
        "haswell": 16,
        "broadwell": 16,
        "skylake-client": 16,
        "knl": 32,
        "skylake-sp": 32,
        "cascadelake": 32,
        "icelake-sp": 32,
        "sapphirerapids": 32,
        "emeraldrapids": 32,
        "zen": 8,  # 128-bit datapath
        "zen2": 16,
        "zen3": 16,
        "zen4": 16,  # AVX-512 double-pumped on 256-bit pipes
        "zen5": 32,
        "neoverse-n1": 8,
        "neoverse-n2": 8,
        "neoverse-v1": 16,
        "neoverse-v2": 16,
        "a64fx": 32,
    }
    table = load_table()
    assert {name: table[name].dp for name in expected} == expected
    assert all(table[name].sp == 2 * dp for name, dp in expected.items())


def test_one_fma_skus_and_mobile_zen5_are_flagged():
    table = load_table()
    for name in ("skylake-sp", "cascadelake"):
        assert "one AVX-512 FMA unit" in table[name].note
        assert "flops_per_cycle_dp = 16" in table[name].note
    assert "Strix Point" in table["zen5"].note


def test_a_malformed_table_is_an_error():
    good = {"simd": "x", "pipes": 2, "vector_bits": 256, "flops_per_lane": 2, "dp": 16}
    good |= {"sp": 32, "requires": ["avx2"], "source": ["https://example.org"]}
    assert parse_table({"uarch": {"a": good}})["a"].dp == 16
    for broken in (
        {k: v for k, v in good.items() if k != "dp"},
        {**good, "pipes": 0},
        {**good, "dp": "16"},
        {**good, "source": []},
        {**good, "source": "https://example.org"},
    ):
        with pytest.raises(FlopsTableError):
            parse_table({"uarch": {"a": broken}})
    with pytest.raises(FlopsTableError):
        parse_table({})


# --- Rpeak of real parts, per family ------------------------------------------------------------


@pytest.mark.parametrize(
    ("uarch", "cores", "ghz", "published_dp"),
    [
        ("haswell", 12, 2.5, 480e9),  # Xeon E5-2680 v3
        ("cascadelake", 28, 2.7, 2419.2e9),  # Xeon Platinum 8280
        ("icelake-sp", 40, 2.3, 2944e9),  # Xeon Platinum 8380
        ("sapphirerapids", 56, 2.0, 3584e9),  # Xeon Platinum 8480+
        ("zen", 32, 2.2, 563.2e9),  # EPYC 7601
        ("zen2", 64, 2.25, 2304e9),  # EPYC 7742, AMD: "2.3 TFLOPS"
        ("zen3", 64, 2.45, 2508.8e9),  # EPYC 7763
        ("zen4", 96, 2.4, 3686.4e9),  # EPYC 9654
        ("zen5", 128, 2.7, 11059.2e9),  # EPYC 9755
        ("neoverse-n1", 64, 2.5, 1280e9),  # Graviton2
        ("neoverse-v1", 64, 2.6, 2662.4e9),  # Graviton3
        ("neoverse-v2", 144, 3.1, 7142.4e9),  # Grace CPU Superchip, NVIDIA: "7.1 TFLOPS"
        ("a64fx", 48, 2.2, 3379.2e9),  # Fugaku node, "3.38 TFLOPS"
    ],
)
def test_rpeak_of_real_parts(uarch: str, cores: int, ghz: float, published_dp: float):
    r = rpeak(node(uarch, cores, ghz), config={})
    assert r.known and r.reason == ""
    assert r.dp_flops == pytest.approx(published_dp)
    assert r.sp_flops == pytest.approx(2 * published_dp)
    assert (r.cores, r.clock_kind, r.uarch) == (cores, "base", uarch)
    assert r.clock_hz == pytest.approx(ghz * 1e9)
    assert r.sources == load_table()[uarch].source
    assert r.derivation.startswith(
        f"{cores} cores × {ghz:.2f} GHz (nominal, system record freq_base_hz) × "
    )
    assert r.derivation.endswith(f"= {format_flops(published_dp)}")
    assert "SP FLOP/cycle" in r.derivation_sp


def test_derivation_sentence_reads_as_the_brief_says():
    r = rpeak(node("zen2", 120, 2.45), config={})
    assert r.derivation == (
        "120 cores × 2.45 GHz (nominal, system record freq_base_hz) × 16 DP FLOP/cycle "
        "(zen2: AVX2, 2 FMA units, 256-bit) = 4.70 TFLOP/s"
    )
    assert r.derivation_sp.endswith(
        "32 SP FLOP/cycle (zen2: AVX2, 2 FMA units, 256-bit) = 9.41 TFLOP/s"
    )


def test_format_flops():
    assert format_flops(4.704e12) == "4.70 TFLOP/s"
    assert format_flops(860e9) == "860.00 GFLOP/s"
    assert format_flops(1.5e15) == "1.50 PFLOP/s"
    assert format_flops(2.5e6) == "2.50 MFLOP/s"


# --- unknown: never a guess ---------------------------------------------------------------------


def test_unknown_uarch_gives_no_value_and_says_set_an_override():
    # AVX-512 flags alone would suggest 32 DP FLOP/cycle: that must not be used
    r = rpeak(node(None, cpu_model="Intel(R) Xeon(R) Processor"), config={})
    assert r.dp_flops is None and r.sp_flops is None and not r.known
    assert r.flops_per_cycle_dp is None and r.sources == ()
    assert "unknown micro-architecture (Intel(R) Xeon(R) Processor)" in r.reason
    assert "set an override" in r.reason and "[peak] uarch" in r.reason
    assert r.derivation.startswith("no DP Rpeak: unknown micro-architecture")
    # what is known is still reported
    assert (r.cores, r.clock_kind) == (64, "base")
    with pytest.raises(PeakUnknownError, match="unknown micro-architecture") as info:
        r.require("dp")
    assert "zen2" in (info.value.hint or "")


def test_identified_but_unlisted_uarch_is_unknown_too():
    r = rpeak(node("graniterapids"), config={})
    assert r.dp_flops is None
    assert "'graniterapids' has no entry in flops_per_cycle.toml" in r.reason


def test_masked_isa_refuses_the_table_value():
    # a hypervisor that hides AVX-512 from a Skylake-SP guest: 32 DP FLOP/cycle is out of reach
    r = rpeak(node("skylake-sp", isa=["avx", "avx2", "fma"]), config={})
    assert r.dp_flops is None and "avx512f" in r.reason
    assert "flops_per_cycle_dp / flops_per_cycle_sp" in r.reason


def test_unknown_isa_keeps_the_value_but_says_it_was_not_confirmed():
    r = rpeak(node("haswell", isa=None), config={})
    assert r.dp_flops == pytest.approx(64 * 2e9 * 16)
    assert any("could not confirm avx2, fma" in n for n in r.notes)


def test_unknown_cores_or_clock():
    r = rpeak(node("zen2", cores=None, ghz=None), config={})
    assert r.dp_flops is None
    assert "core count is unknown" in r.reason and "clock is unknown" in r.reason
    assert "[peak] cores, clock_ghz in config.toml" in r.reason


# --- clocks -------------------------------------------------------------------------------------


def test_base_clock_is_preferred_and_max_is_a_labelled_stand_in():
    both = node("zen3", ghz=2.45, freq_max_hz=3.5e9)
    assert rpeak(both, config={}).clock_kind == "base"
    r = rpeak(both, {"clock": "max"}, config={})
    assert (r.clock_kind, r.clock_hz) == ("max", 3.5e9)
    assert "(max/boost, system record freq_max_hz)" in r.derivation
    only_max = node("zen3", ghz=None, freq_max_hz=3.5e9)
    r = rpeak(only_max, config={})
    assert r.clock_kind == "max" and any("stands in" in n for n in r.notes)


def test_a_base_clock_read_from_cpu_mhz_is_called_current():
    note = "freq_base_hz: the current clock ('cpu MHz' in /proc/cpuinfo), not the base"
    r = rpeak(node("zen3", notes=[note]), config={})
    assert r.clock_kind == "current" and "(CURRENT clock, " in r.derivation
    assert "no stable clock found" in r.derivation
    assert any("Rpeak uses the CURRENT clock" in n for n in r.notes)


# --- overrides ----------------------------------------------------------------------------------


def test_config_overrides_and_argument_overrides_win_over_config():
    config = {"peak": {"cores": 120, "clock_ghz": 2.45, "flops_per_cycle_dp": 16}}
    r = rpeak(node(None), config=config)
    assert r.dp_flops == pytest.approx(4.704e12)
    assert r.clock_kind == "user"
    assert r.derivation == (
        "120 cores (set by the user) × 2.45 GHz (user) × 16 DP FLOP/cycle (set by the user) "
        "= 4.70 TFLOP/s"
    )
    assert r.sources == ("user override",)
    # SP was not given and the micro-architecture is unknown: no SP value, said so
    assert r.sp_flops is None and r.reason.startswith("SP: unknown micro-architecture")
    assert set(r.overridden) == {"cores", "clock_ghz", "flops_per_cycle_dp"}

    r = rpeak(node(None), {"cores": 60, "flops_per_cycle_sp": 32}, config=config)
    assert r.dp_flops == pytest.approx(60 * 2.45e9 * 16)
    assert r.sp_flops == pytest.approx(60 * 2.45e9 * 32)
    assert r.known


def test_naming_the_uarch_and_labelling_the_clock():
    r = rpeak(node(None), {"uarch": "zen4", "clock_ghz": 3.0, "clock_kind": "all-core"}, config={})
    assert r.dp_flops == pytest.approx(64 * 3e9 * 16)
    assert r.uarch == "zen4" and r.clock_kind == "all-core"
    assert "(zen4, named by the user: " in r.derivation and "(all-core)" in r.derivation
    # a one-FMA Xeon Silver: the table says 32, the user knows better
    r = rpeak(node("skylake-sp"), {"flops_per_cycle_dp": 16, "flops_per_cycle_sp": 32}, config={})
    assert r.flops_per_cycle_dp == 16 and r.dp_flops == pytest.approx(64 * 2e9 * 16)


def test_rpeak_reads_peak_from_config_toml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    cfg = tmp_path / "config.toml"
    cfg.write_text('[peak]\nuarch = "haswell"\ncores = 4\nclock_ghz = 3.0\n')
    monkeypatch.setenv("ASSAY_CONFIG", str(cfg))
    r = rpeak(node(None))
    assert r.dp_flops == pytest.approx(4 * 3e9 * 16)
    monkeypatch.setenv("ASSAY_CONFIG", str(tmp_path / "absent.toml"))
    assert rpeak(node(None)).dp_flops is None


@pytest.mark.parametrize(
    ("overrides", "words"),
    [
        ({"cpus": 4}, "unknown key 'cpus' in [peak]"),
        ({"cores": 0}, "[peak] cores = 0: expected a value of at least 1"),
        ({"cores": True}, "[peak] cores = True: expected a whole number"),
        ({"cores": 2.5}, "[peak] cores = 2.5: expected a whole number"),
        ({"clock_ghz": "2.4"}, "[peak] clock_ghz = '2.4': expected a number"),
        ({"clock_ghz": -1}, "[peak] clock_ghz = -1: expected a value of at least 0.01"),
        ({"flops_per_cycle_dp": float("inf")}, "[peak] flops_per_cycle_dp = inf: expected"),
        ({"uarch": "pentium4"}, "[peak] uarch 'pentium4' is not in flops_per_cycle.toml"),
        ({"clock": "turbo"}, "[peak] clock = 'turbo': input should be 'base' or 'max'"),
        ({"clock_kind": "all-core"}, "[peak] clock_kind labels clock_ghz, which is not set"),
    ],
)
def test_bad_overrides_are_errors_not_ignored(overrides: dict, words: str):
    """The overrides and the config's [peak] are checked by one declaration (``PeakTable``),
    with the config file's messages, each naming where the value came from."""
    with pytest.raises(ConfigError, match=re.escape(f"peak overrides: {words}")):
        rpeak(node("zen2"), overrides, config={})
    with pytest.raises(ConfigError, match=re.escape(f"config.toml: {words}")):
        rpeak(node("zen2"), config={"peak": overrides})


def test_peak_must_be_a_table():
    with pytest.raises(ConfigError, match=r"peak = 16: expected a table"):
        rpeak(node("zen2"), config={"peak": 16})


def test_result_serialises_to_json():
    r = rpeak(node("zen2"), config={})
    again = json.loads(json.dumps(r.to_dict()))
    assert again["dp_flops"] == r.dp_flops and again["sources"] == list(r.sources)
    assert dataclasses.replace(r).derivation_for("sp") == r.derivation_sp


# --- the clock: a stable one, with its source; never the current one while another exists ------

# `dmidecode -t processor` of a QEMU guest (an Oracle Cloud VM on a Xeon Platinum 8167M
# @ 2.00GHz), as published: QEMU states 2000 MHz whatever the host runs.
QEMU_DMIDECODE = """\
# dmidecode 3.2
Getting SMBIOS data from sysfs.
SMBIOS 2.8 present.

Handle 0x0400, DMI type 4, 42 bytes
Processor Information
        Socket Designation: CPU 0
        Type: Central Processor
        Family: Other
        Manufacturer: QEMU
        ID: 54 06 05 00 FF FB 8B 0F
        Version: pc-i440fx-2.9
        Voltage: Unknown
        External Clock: Unknown
        Max Speed: 2000 MHz
        Current Speed: 2000 MHz
        Status: Populated, Enabled
        Upgrade: Other
"""

# The same section of an AMD Athlon 64 3000+ desktop (bare metal), as published.
BARE_METAL_DMIDECODE = """\
    Version: AMD Athlon(tm) 64 Processor 3000+
    Voltage: 1.5 V
    External Clock: 200 MHz
    Max Speed: 3700 MHz
    Current Speed: 2000 MHz
    Status: Populated, Enabled
"""


def fake_node(root: Path, model: str, mhz: str = "2450.000", flags: str = "fpu avx2 fma") -> Path:
    cpuinfo = root / "proc" / "cpuinfo"
    cpuinfo.parent.mkdir(parents=True, exist_ok=True)
    cpuinfo.write_text(
        f"processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: {model}\n"
        f"cpu MHz\t\t: {mhz}\nflags\t\t: {flags}\n"
    )
    return root


def clocks_of(root: Path, dmidecode: str | None = None) -> list[dict]:
    from assay.system._context import Context
    from assay.system.clock import clock_candidates

    ctx = Context(
        root=root,
        which=lambda name: "/usr/sbin/dmidecode" if dmidecode and name == "dmidecode" else None,
        run=lambda argv: dmidecode,
    )
    return clock_candidates(ctx) or []


def test_the_model_names_clock_beats_the_current_one_and_is_named(tmp_path: Path):
    root = fake_node(tmp_path, "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz", mhz="2450.000")
    system = node("skylake-sp", cores=2, ghz=None, clocks=clocks_of(root))
    r = rpeak(system, config={})
    assert (r.clock_kind, r.clock_hz) == ("base", 2.4e9)
    assert "× 2.40 GHz (nominal, /proc/cpuinfo model name) ×" in r.derivation
    assert r.clock_source == "nominal, /proc/cpuinfo model name"


def test_the_current_clock_is_never_used_while_a_stable_one_exists():
    clocks = [
        {"hz": 2.45e9, "kind": "current", "source": "/proc/cpuinfo cpu MHz"},
        {"hz": 3.5e9, "kind": "max", "source": "cpufreq cpuinfo_max_freq"},
    ]
    r = rpeak(node("zen3", cores=2, ghz=None, clocks=clocks), config={})
    assert (r.clock_kind, r.clock_hz) == ("max", 3.5e9)
    assert "(max/boost, cpufreq cpuinfo_max_freq)" in r.derivation
    assert any("stands in" in n for n in r.notes)


def test_only_the_current_clock_is_said_loudly(tmp_path: Path):
    root = fake_node(tmp_path, "AMD EPYC", mhz="2596.126", flags="fpu avx2 fma hypervisor")
    clocks = clocks_of(root)
    assert [c["kind"] for c in clocks] == ["current"]
    r = rpeak(node("zen4", cores=2, ghz=None, clocks=clocks), config={})
    assert r.clock_kind == "current" and r.clock_hz == pytest.approx(2.596126e9)
    assert "GHz (CURRENT clock, /proc/cpuinfo cpu MHz: no stable clock found)" in r.derivation
    assert any(n.startswith("Rpeak uses the CURRENT clock") for n in r.notes)


def test_a_hypervisors_smbios_speed_is_not_trusted(tmp_path: Path):
    root = fake_node(tmp_path, "AMD EPYC", mhz="2596.126", flags="fpu avx2 fma hypervisor")
    clocks = clocks_of(root, QEMU_DMIDECODE)
    dmi = [c for c in clocks if c["source"].startswith("dmidecode")]
    assert [(c["kind"], c["hz"], c["trusted"]) for c in dmi] == [
        ("base", 2e9, False),
        ("max", 2e9, False),
    ]
    r = rpeak(node("zen4", cores=2, ghz=None, clocks=clocks), config={})
    assert r.clock_kind == "current"  # QEMU's 2000 MHz is no clock of this host


def test_bare_metal_smbios_current_speed_is_the_nominal_clock(tmp_path: Path):
    root = fake_node(tmp_path, "AMD Athlon(tm) 64 Processor 3000+", mhz="1000.000")
    r = rpeak(
        node("zen3", cores=1, ghz=None, clocks=clocks_of(root, BARE_METAL_DMIDECODE)), config={}
    )
    assert (r.clock_kind, r.clock_hz) == ("base", 2e9)
    assert "(nominal, dmidecode Current Speed (SMBIOS: the speed at boot))" in r.derivation
    r = rpeak(
        node("zen3", cores=1, ghz=None, clocks=clocks_of(root, BARE_METAL_DMIDECODE)),
        {"clock": "max"},
        config={},
    )
    assert (r.clock_kind, r.clock_hz) == ("max", 3.7e9)


def test_the_per_model_table_names_its_source(tmp_path: Path):
    from assay.system.clock import load_clock_table

    root = fake_node(tmp_path, "AMD EPYC 7763 64-Core Processor", mhz="1497.000")
    r = rpeak(node("zen3", cores=64, ghz=None, clocks=clocks_of(root)), config={})
    assert (r.clock_kind, r.clock_hz) == ("base", 2.45e9)
    assert "cpu_clocks.toml (https://www.amd.com/en/products/cpu/amd-epyc-7763)" in r.derivation
    for model, entry in load_clock_table().items():
        assert entry["source"] and 0 < entry["base_ghz"] <= entry.get("max_ghz", 99), model


def test_the_clocks_are_kept_in_the_system_record(tmp_path: Path):
    from assay.system import collect_system
    from assay.system._context import Context

    root = fake_node(tmp_path, "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz")
    ctx = Context(root=root, which=lambda _n: None, run=lambda _a: None)
    system = collect_system(ctx=ctx)
    kinds = [(c["kind"], c["source"]) for c in system.clocks]
    assert kinds == [("base", "/proc/cpuinfo model name"), ("current", "/proc/cpuinfo cpu MHz")]
    assert System.from_dict(json.loads(json.dumps(system.to_dict()))).clocks == system.clocks


# --- a measured rate above Rpeak is flagged ------------------------------------------------------


def test_a_rate_above_rpeak_is_flagged_with_its_clock_source():
    from assay.system.peak import rpeak_flag

    r = rpeak(
        node("zen4", cores=2, ghz=None, clocks=[
            {"hz": 2.45e9, "kind": "current", "source": "/proc/cpuinfo cpu MHz"}
        ]),
        config={},
    )  # fmt: skip
    assert r.dp_flops == pytest.approx(78.4e9)
    flag = rpeak_flag(1.026 * r.dp_flops, r.dp_flops, r.derivation)
    assert flag is not None
    assert flag.startswith(
        "Rpeak too low: clock source CURRENT clock, /proc/cpuinfo cpu MHz: no stable clock found"
    )
    assert "is 102.6% of Rpeak 78.40 GFLOP/s" in flag
    assert rpeak_flag(r.dp_flops, r.dp_flops, r.derivation) is None  # 100% is possible
    assert rpeak_flag(0.9 * r.dp_flops, r.dp_flops, r.derivation) is None
    assert rpeak_flag(1e12, None, "") is None  # no Rpeak: nothing to judge
    assert "clock source not stated" in (rpeak_flag(2.0, 1.0) or "")


def test_the_avx512_frequency_licence_is_noted_where_it_applies():
    r = rpeak(node("cascadelake", cores=28, ghz=2.7), config={})
    assert any(n.startswith("AVX-512 frequency licence") for n in r.notes)
    assert r.dp_flops == pytest.approx(28 * 2.7e9 * 32)  # the nominal clock, as TOP500 states
    at_licence = rpeak(
        node("cascadelake", cores=28, ghz=2.7),
        {"clock_ghz": 1.8, "clock_kind": "AVX-512 all-core"},
        config={},
    )
    assert "(AVX-512 all-core)" in at_licence.derivation
    assert not any("licence" in n for n in at_licence.notes)
    assert not any("licence" in n for n in rpeak(node("zen4"), config={}).notes)
