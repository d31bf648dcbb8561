"""Micro-architecture names from CPU identification numbers.

The tables cover the server parts HPC nodes are built from; desktop and laptop parts are left
out on purpose (the long tail of client model numbers adds little), so they map to None,
"unknown", rather than to a guess. Sources: Intel SDM vol. 4 table 2-1 / the Linux kernel's
``arch/x86/include/asm/intel-family.h``, AMD's Processor Programming References, and Arm's
MIDR part numbers (``arch/arm64/include/asm/cputype.h``).

Under a hypervisor the family/model a guest sees may be whatever the VM was configured to
show, so a name derived here describes the virtual CPU.
"""

from __future__ import annotations

# Intel family 6: model -> name. Model 0x55 is three generations told apart by stepping
# (see _INTEL_0x55_BY_STEPPING).
INTEL_FAMILY6: dict[int, str] = {
    0x2D: "sandybridge",  # Sandy Bridge-EP (Xeon E5 v1)
    0x3E: "ivybridge",  # Ivy Bridge-EP (Xeon E5/E7 v2)
    0x3F: "haswell",  # Haswell-EP (Xeon E5/E7 v3)
    0x4F: "broadwell",  # Broadwell-EP (Xeon E5/E7 v4)
    0x56: "broadwell",  # Broadwell-DE (Xeon D-1500)
    0x57: "knl",  # Knights Landing (Xeon Phi x200)
    0x85: "knm",  # Knights Mill
    0x55: "skylake-sp",  # Skylake-SP / Cascade Lake / Cooper Lake: refined by stepping
    0x6A: "icelake-sp",  # Ice Lake-SP (3rd gen Xeon Scalable)
    0x6C: "icelake-sp",  # Ice Lake-D
    0x8F: "sapphirerapids",  # 4th gen Xeon Scalable
    0xCF: "emeraldrapids",  # 5th gen Xeon Scalable
    0xAD: "graniterapids",  # Xeon 6 P-core
    0xAE: "graniterapids",  # Granite Rapids-D
    0xAF: "sierraforest",  # Xeon 6 E-core
}

# Model 0x55, by stepping: 0-4 Skylake-SP, 5-7 Cascade Lake, 10-11 Cooper Lake.
_INTEL_0x55_BY_STEPPING: tuple[tuple[int, int, str], ...] = (
    (0, 4, "skylake-sp"),
    (5, 7, "cascadelake"),
    (10, 11, "cooperlake"),
)

# AMD: (family, first model, last model, name). AMD reuses a family across generations and
# splits it by model ranges, e.g. family 0x19 holds both Zen 3 (Milan 0x01) and Zen 4
# (Genoa 0x11, Bergamo 0xA0).
AMD_MODEL_RANGES: tuple[tuple[int, int, int, str], ...] = (
    (0x17, 0x00, 0x2F, "zen"),  # Naples, Zen+ parts included
    (0x17, 0x30, 0xFF, "zen2"),  # Rome 0x31, Matisse 0x71
    (0x18, 0x00, 0xFF, "zen"),  # Hygon Dhyana, a licensed Zen
    (0x19, 0x00, 0x0F, "zen3"),  # Milan 0x01
    (0x19, 0x10, 0x1F, "zen4"),  # Genoa 0x11
    (0x19, 0x20, 0x5F, "zen3"),  # Vermeer, Cezanne
    (0x19, 0x60, 0xAF, "zen4"),  # Raphael, Phoenix, Bergamo/Siena 0xA0-0xAF
    (0x1A, 0x00, 0xFF, "zen5"),  # Turin, Granite Ridge
)

# Arm: (implementer, part) from /proc/cpuinfo "CPU implementer" / "CPU part".
ARM_PARTS: dict[tuple[int, int], str] = {
    (0x41, 0xD0C): "neoverse-n1",  # also Ampere Altra, AWS Graviton2
    (0x41, 0xD40): "neoverse-v1",  # AWS Graviton3
    (0x41, 0xD49): "neoverse-n2",
    (0x41, 0xD4F): "neoverse-v2",  # NVIDIA Grace, AWS Graviton4
    (0x41, 0xD84): "neoverse-v3",
    (0x41, 0xD8E): "neoverse-n3",
    (0x43, 0x0AF): "thunderx2",  # Cavium ThunderX2
    (0x46, 0x001): "a64fx",  # Fujitsu A64FX (Fugaku)
    (0x48, 0xD01): "tsv110",  # HiSilicon Kunpeng 920
    (0xC0, 0xAC3): "ampere1",  # AmpereOne
}

ARM_IMPLEMENTERS: dict[int, str] = {
    0x41: "ARM",
    0x42: "Broadcom",
    0x43: "Cavium",
    0x46: "Fujitsu",
    0x48: "HiSilicon",
    0x4E: "NVIDIA",
    0x51: "Qualcomm",
    0x61: "Apple",
    0xC0: "Ampere",
}

X86_VENDORS: dict[str, str] = {
    "GenuineIntel": "Intel",
    "AuthenticAMD": "AMD",
    "HygonGenuine": "Hygon",
}


def x86_uarch(vendor_id: str, family: int, model: int, stepping: int | None = None) -> str | None:
    """The micro-architecture of an x86 CPU, or None when the table does not know it."""
    if vendor_id == "GenuineIntel":
        if family != 6:
            return None
        if model == 0x55 and stepping is not None:
            for low, high, name in _INTEL_0x55_BY_STEPPING:
                if low <= stepping <= high:
                    return name
        return INTEL_FAMILY6.get(model)
    if vendor_id in ("AuthenticAMD", "HygonGenuine"):
        for fam, low, high, name in AMD_MODEL_RANGES:
            if fam == family and low <= model <= high:
                return name
    return None


def arm_uarch(implementer: int, part: int) -> str | None:
    return ARM_PARTS.get((implementer, part))
