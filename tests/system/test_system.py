"""The system inventory: collectors on fake /sys + /proc trees, and on this machine."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path

import pytest

import assay.system as system_pkg
from assay.model import MpiInfo, System
from assay.system import (
    Context,
    collect_system,
    missing_tools,
    requirements_report,
    run_command,
)
from assay.system._context import Runner, Which, parse_size
from assay.system.cpulist import parse_cpulist
from assay.system.uarch import arm_uarch, x86_uarch

GiB = 2**30
MiB = 2**20


def write(root: Path, path: str, text: str) -> None:
    target = root / path.lstrip("/")
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text + "\n")


def no_programs(ctx_root: Path) -> Context:
    """A context on a fake tree that finds no program on PATH."""
    return Context(root=ctx_root, which=lambda _name: None, run=lambda _argv: None)


def fake_programs(outputs: dict[str, str | None]) -> tuple[Which, Runner]:
    """``which``/``run`` stand-ins: ``outputs`` maps a program name to what it prints."""

    def which(name: str) -> str | None:
        return f"/opt/bin/{name}" if name in outputs else None

    def run(argv: Sequence[str]) -> str | None:
        return outputs.get(Path(argv[0]).name)

    return which, run


# --- a 2-socket AMD node: 8 cores per socket, SMT2, 4 CCX (L3) per socket ---------------------

SOCKETS, CORES_PER_SOCKET, CCX_CORES = 2, 8, 2
N_CORES = SOCKETS * CORES_PER_SOCKET  # 16
N_CPUS = 2 * N_CORES  # 32: cpu c and c + 16 are SMT siblings, the Linux numbering


def build_epyc_tree(root: Path) -> None:
    cpu_dir = "/sys/devices/system/cpu"
    cpuinfo = []
    for cpu in range(N_CPUS):
        core_index = cpu % N_CORES
        package, core = divmod(core_index, CORES_PER_SOCKET)
        ccx_first = core_index - core_index % CCX_CORES
        ccx = f"{ccx_first}-{ccx_first + 1},{ccx_first + 16}-{ccx_first + 17}"
        siblings = f"{core_index},{core_index + 16}"
        here = f"{cpu_dir}/cpu{cpu}"
        write(root, f"{here}/topology/physical_package_id", str(package))
        write(root, f"{here}/topology/core_id", str(core))
        caches = [
            (1, "Data", "32K", siblings),
            (1, "Instruction", "32K", siblings),
            (2, "Unified", "512K", siblings),
            (3, "Unified", "32768K", ccx),
        ]
        for index, (level, kind, size, shared) in enumerate(caches):
            write(root, f"{here}/cache/index{index}/level", str(level))
            write(root, f"{here}/cache/index{index}/type", kind)
            write(root, f"{here}/cache/index{index}/size", size)
            write(root, f"{here}/cache/index{index}/shared_cpu_list", shared)
        write(root, f"{here}/cpufreq/cpuinfo_max_freq", "3700000")
        cpuinfo.append(
            f"processor\t: {cpu}\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n"
            f"model name\t: AMD EPYC 7543 32-Core Processor\nstepping\t: 1\n"
            f"cpu MHz\t\t: 1500.000\nphysical id\t: {package}\ncore id\t\t: {core}\n"
            "flags\t\t: fpu sse sse2 sse4_1 sse4_2 sse4a avx avx2 fma avx512_fp16 x2apic\n"
        )
    # An offline CPU keeps its directory but has no topology and is not in "online".
    (root / cpu_dir.lstrip("/") / f"cpu{N_CPUS}").mkdir()
    write(root, f"{cpu_dir}/online", f"0-{N_CPUS - 1}")
    write(root, f"{cpu_dir}/cpu0/acpi_cppc/nominal_freq", "2800")
    write(root, "/proc/cpuinfo", "\n".join(cpuinfo))
    write(root, "/proc/meminfo", "MemTotal:       134217728 kB\nMemFree:        1000 kB")
    for node in range(SOCKETS):
        first = node * CORES_PER_SOCKET
        cpus = f"{first}-{first + 7},{first + 16}-{first + 23}"
        write(root, f"/sys/devices/system/node/node{node}/cpulist", cpus)
        write(
            root,
            f"/sys/devices/system/node/node{node}/meminfo",
            f"Node {node} MemTotal:       67108864 kB\nNode {node} MemFree:  10 kB",
        )
    write(root, "/etc/os-release", 'NAME="Rocky Linux"\nPRETTY_NAME="Rocky Linux 9.3 (Blue Onyx)"')
    write(root, "/sys/class/infiniband/mlx5_0/fw_ver", "20.39.1002")
    write(root, "/sys/class/infiniband/mlx5_0/ports/1/rate", "200 Gb/sec (4X HDR)")
    write(root, "/sys/class/infiniband/mlx5_0/ports/1/link_layer", "InfiniBand")
    write(root, "/sys/class/infiniband/mlx5_0/ports/1/state", "4: ACTIVE")
    write(root, "/sys/class/net/lo/speed", "-1")
    write(root, "/sys/class/net/eth0/speed", "25000")
    write(root, "/sys/class/net/eth0/operstate", "up")
    write(root, "/sys/class/net/eth0/mtu", "9000")
    (root / "sys/class/net/eth0/device").mkdir()
    write(root, "/sys/class/net/docker0/speed", "-1")


@pytest.fixture
def epyc(tmp_path: Path) -> System:
    build_epyc_tree(tmp_path)
    return collect_system(ctx=no_programs(tmp_path))


def test_fake_epyc_topology(epyc: System) -> None:
    assert epyc.sockets == 2
    assert epyc.cores == 16
    assert epyc.threads == 32


def test_fake_epyc_l3_domains_are_the_eight_ccx(epyc: System) -> None:
    assert epyc.l3_domains is not None
    assert len(epyc.l3_domains) == 8
    assert epyc.l3_domains[0] == [0, 1, 16, 17]
    assert epyc.l3_domains[7] == [14, 15, 30, 31]
    # Each CPU sits in exactly one domain.
    assert sorted(c for d in epyc.l3_domains for c in d) == list(range(32))
    assert epyc.l3_bytes == 8 * 32 * MiB


def test_fake_epyc_numa_and_memory(epyc: System) -> None:
    assert epyc.memory_bytes == 128 * GiB
    assert epyc.numa_nodes == [
        {"id": 0, "cpus": [*range(0, 8), *range(16, 24)], "memory_bytes": 64 * GiB},
        {"id": 1, "cpus": [*range(8, 16), *range(24, 32)], "memory_bytes": 64 * GiB},
    ]


def test_fake_epyc_cpu_identity_isa_and_clocks(epyc: System) -> None:
    assert epyc.vendor == "AMD"
    assert epyc.cpu_model == "AMD EPYC 7543 32-Core Processor"
    assert epyc.microarchitecture == "zen3"
    assert epyc.isa == ["sse4_2", "avx", "avx2", "fma"]  # table order, no look-alikes
    assert epyc.freq_max_hz == 3.7e9
    assert epyc.freq_base_hz == 2.8e9
    assert any("ACPI CPPC" in n for n in epyc.notes)
    assert epyc.os == "Rocky Linux 9.3 (Blue Onyx)"


def test_fake_epyc_nics(epyc: System) -> None:
    rdma = [n for n in epyc.nics if n["kind"] == "rdma"]
    assert rdma == [
        {
            "name": "mlx5_0",
            "kind": "rdma",
            "fw_ver": "20.39.1002",
            "ports": [
                {
                    "port": 1,
                    "rate": "200 Gb/sec (4X HDR)",
                    "rate_gbps": 200.0,
                    "link_layer": "InfiniBand",
                    "state": "ACTIVE",
                }
            ],
        }
    ]
    net = {n["name"]: n for n in epyc.nics if n["kind"] == "net"}
    assert set(net) == {"eth0", "docker0"}  # lo skipped
    assert net["eth0"]["speed_mbps"] == 25000
    assert net["eth0"]["mtu"] == 9000
    assert net["eth0"]["virtual"] is False
    assert net["docker0"]["speed_mbps"] is None
    assert net["docker0"]["virtual"] is True


def test_fake_epyc_roundtrips_through_json(epyc: System) -> None:
    assert System.from_dict(json.loads(json.dumps(epyc.to_dict()))) == epyc


def test_missing_tree_gives_unknowns_and_reasons(tmp_path: Path) -> None:
    system = collect_system(ctx=no_programs(tmp_path))
    for name in ("cpu_model", "vendor", "microarchitecture", "sockets", "cores", "threads"):
        assert getattr(system, name) is None, name
    for name in ("l3_bytes", "l3_domains", "numa_nodes", "memory_bytes", "isa", "os"):
        assert getattr(system, name) is None, name
    assert system.freq_max_hz is None and system.freq_base_hz is None
    assert system.gpus == [] and system.nics == [] and system.tools == {}
    text = "\n".join(system.notes)
    for reason in ("/proc/cpuinfo", "/proc/meminfo", "cache", "/sys/devices/system/node"):
        assert reason in text, reason


def test_a_raising_collector_costs_one_fact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    build_epyc_tree(tmp_path)

    def broken(_ctx: Context) -> int:
        raise RuntimeError("sysfs exploded")

    table = tuple(
        (field, broken if field == "sockets" else fn) for field, fn in system_pkg.COLLECTORS
    )
    monkeypatch.setattr(system_pkg, "COLLECTORS", table)
    system = collect_system(ctx=no_programs(tmp_path))
    assert system.sockets is None
    assert system.cores == 16
    assert any("sockets" in n and "sysfs exploded" in n for n in system.notes)


def test_mpis_are_stored_as_given(tmp_path: Path) -> None:
    mpis = [MpiInfo(name="openmpi", version="4.1.4"), MpiInfo(name="mpich", version="4.0.2")]
    system = collect_system(mpis, ctx=no_programs(tmp_path))
    assert system.mpis == mpis


def test_no_l3_uses_the_last_level_cache(tmp_path: Path) -> None:
    # An Arm part with a cluster-shared L2 as its last level, and no model name.
    for cpu in range(4):
        here = f"/sys/devices/system/cpu/cpu{cpu}/cache"
        write(tmp_path, f"{here}/index0/level", "1")
        write(tmp_path, f"{here}/index0/type", "Data")
        write(tmp_path, f"{here}/index0/size", "64K")
        write(tmp_path, f"{here}/index0/shared_cpu_list", str(cpu))
        write(tmp_path, f"{here}/index1/level", "2")
        write(tmp_path, f"{here}/index1/type", "Unified")
        write(tmp_path, f"{here}/index1/size", "8M")
        write(tmp_path, f"{here}/index1/shared_cpu_list", "0-1" if cpu < 2 else "2-3")
    write(
        tmp_path,
        "/proc/cpuinfo",
        "processor\t: 0\nFeatures\t: fp asimd sve sve2\nCPU implementer\t: 0x46\nCPU part\t: 0x001",
    )
    system = collect_system(ctx=no_programs(tmp_path))
    assert system.l3_domains == [[0, 1], [2, 3]]
    assert system.l3_bytes == 16 * MiB
    assert any("no L3" in n for n in system.notes)
    assert system.microarchitecture == "a64fx"
    assert system.vendor == "Fujitsu"
    assert system.cpu_model == "Fujitsu a64fx"
    assert system.isa == ["sve", "sve2", "asimd"]


@pytest.mark.parametrize(
    ("model_line", "mhz", "expected_hz", "note"),
    [
        ("Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz", "1000.0", 2.4e9, "model name"),
        ("Intel(R) Xeon(R) Processor", "2599.998", 2599.998e6, "current"),
    ],
)
def test_base_frequency_fallbacks(
    tmp_path: Path, model_line: str, mhz: str, expected_hz: float, note: str
) -> None:
    write(
        tmp_path, "/proc/cpuinfo", f"processor\t: 0\nmodel name\t: {model_line}\ncpu MHz\t: {mhz}"
    )
    system = collect_system(ctx=no_programs(tmp_path))
    assert system.freq_base_hz == pytest.approx(expected_hz)
    assert any("freq_base_hz" in n and note in n for n in system.notes)


def test_base_frequency_prefers_sysfs(tmp_path: Path) -> None:
    write(tmp_path, "/sys/devices/system/cpu/cpu0/cpufreq/base_frequency", "2100000")
    write(tmp_path, "/proc/cpuinfo", "processor\t: 0\nmodel name\t: Xeon CPU @ 2.40GHz")
    system = collect_system(ctx=no_programs(tmp_path))
    assert system.freq_base_hz == 2.1e9
    assert not any("freq_base_hz" in n for n in system.notes)


@pytest.mark.parametrize(
    ("vendor_id", "family", "model", "stepping", "expected"),
    [
        ("GenuineIntel", 6, 0x3F, 2, "haswell"),
        ("GenuineIntel", 6, 0x4F, 1, "broadwell"),
        ("GenuineIntel", 6, 0x55, 4, "skylake-sp"),
        ("GenuineIntel", 6, 0x55, 7, "cascadelake"),
        ("GenuineIntel", 6, 0x6A, 6, "icelake-sp"),
        ("GenuineIntel", 6, 0x8F, 8, "sapphirerapids"),
        ("GenuineIntel", 6, 0xA7, 1, None),  # a desktop part: not in the table
        ("AuthenticAMD", 0x17, 0x31, 0, "zen2"),
        ("AuthenticAMD", 0x19, 0x01, 1, "zen3"),
        ("AuthenticAMD", 0x19, 0x11, 1, "zen4"),
        ("AuthenticAMD", 0x19, 0xA0, 1, "zen4"),
        ("AuthenticAMD", 0x1A, 0x02, 0, "zen5"),
        ("CentaurHauls", 6, 0x0F, 0, None),
    ],
)
def test_x86_uarch_table(
    vendor_id: str, family: int, model: int, stepping: int, expected: str | None
) -> None:
    assert x86_uarch(vendor_id, family, model, stepping) == expected


def test_arm_uarch_table() -> None:
    assert arm_uarch(0x41, 0xD4F) == "neoverse-v2"
    assert arm_uarch(0x41, 0xFFF) is None


def test_parse_cpulist_and_size() -> None:
    assert parse_cpulist("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert parse_cpulist("0-6:2") == [0, 2, 4, 6]
    assert parse_cpulist("") == []
    with pytest.raises(ValueError):
        parse_cpulist("zero")
    assert parse_size("32768K") == 32 * MiB
    assert parse_size("1M") == MiB
    assert parse_size("512") == 512
    assert parse_size("lots") is None


def test_gpus_compilers_and_tools_from_programs(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("SLURM_CONF", raising=False)
    which, run = fake_programs(
        {
            "nvidia-smi": "NVIDIA H100 80GB HBM3, 81559, 550.54.15, 1980\n"
            "NVIDIA H100 80GB HBM3, 81559, 550.54.15, [N/A]\n",
            "nvcc": "nvcc: NVIDIA (R) Cuda compiler driver\n"
            "Cuda compilation tools, release 12.4, V12.4.131\n",
            "gcc": "gcc (GCC) 13.2.0\nCopyright (C) 2023\n",
            "fio": "fio-3.36\n",
            "sinfo": "slurm 23.11.4\n",
            "hpcc": None,  # present, no version flag: recorded by path
        }
    )
    system = collect_system(ctx=Context(root=tmp_path, which=which, run=run))
    assert system.gpus == [
        {
            "name": "NVIDIA H100 80GB HBM3",
            "memory_bytes": 81559 * MiB,
            "driver_version": "550.54.15",
            "clock_max_hz": 1980e6,
        },
        {
            "name": "NVIDIA H100 80GB HBM3",
            "memory_bytes": 81559 * MiB,
            "driver_version": "550.54.15",
            "clock_max_hz": None,
        },
    ]
    assert system.compilers == {
        "gcc": "gcc (GCC) 13.2.0",
        "nvcc": "Cuda compilation tools, release 12.4, V12.4.131",
    }
    assert system.tools == {
        "fio": "fio-3.36",
        "hpcc": "/opt/bin/hpcc",
        "slurm": "slurm 23.11.4",
        "nvidia-smi": "/opt/bin/nvidia-smi",
    }


def test_slurm_is_not_asked_its_version_when_slurm_conf_names_no_file(
    tmp_path: Path, monkeypatch
) -> None:
    """Every Slurm command, --version included, retries a missing SLURM_CONF for 60 s: each
    assay start waited the 5 s command timeout for it (5 s of `assay check`'s 6.2 s refusal)."""
    monkeypatch.setenv("SLURM_CONF", str(tmp_path / "missing.conf"))
    which, run = fake_programs({"sinfo": "slurm 23.11.4\n", "fio": "fio-3.36\n"})
    ran: list[str] = []
    system = collect_system(
        ctx=Context(root=tmp_path, which=which, run=lambda argv: ran.append(argv[0]) or run(argv))
    )
    assert "/opt/bin/sinfo" not in ran and "/opt/bin/fio" in ran
    assert system.tools["slurm"] == "/opt/bin/sinfo"  # there, version unknown
    assert any(f"SLURM_CONF={tmp_path / 'missing.conf'} names no file" in n for n in system.notes)


def test_nvidia_smi_that_fails_is_a_note_not_an_error(tmp_path: Path) -> None:
    which, run = fake_programs({"nvidia-smi": None})
    system = collect_system(ctx=Context(root=tmp_path, which=which, run=run))
    assert system.gpus == []
    assert any("nvidia-smi" in n for n in system.notes)


def test_run_command_never_raises() -> None:
    assert run_command(["/nonexistent/assay-no-such-tool"]) is None
    assert run_command(["false"]) is None
    assert run_command(["sleep", "5"], timeout=0.1) is None
    assert run_command(["echo", "hi"]) == "hi\n"


def test_requirements_on_a_bare_system() -> None:
    rows = requirements_report(System())
    assert [r.what for r in rows] == [
        "C compiler",
        "OpenMP",
        "MPI",
        "hwloc",
        "numactl",
        "CBLAS",
        "hpcc",
        "fio",
        "perftest",
        "RDMA device",
        "Slurm",
        "GPU",
        "CUDA compiler",
    ]
    assert not any(r.found for r in rows)
    detail = {r.what: r.detail for r in rows}
    assert "build-essential" in detail["C compiler"]
    assert "openmpi-bin libopenmpi-dev" in detail["MPI"] and "libmpich-dev" in detail["MPI"]
    assert "libopenblas-dev" in detail["CBLAS"]
    assert "perftest" in detail["perftest"]
    assert "slurm-wlm" in detail["Slurm"]
    assert detail["RDMA device"] == "no RDMA device: RDMA probes will be skipped"
    assert missing_tools(System()) == [r.what for r in rows]


def test_requirements_on_an_equipped_system() -> None:
    system = System(
        compilers={"gcc": "gcc 12"},
        mpis=[MpiInfo(name="openmpi", version="4.1.4")],
        tools={
            "hwloc": "hwloc-info 2.9.0",
            "numactl": "/usr/bin/numactl",
            "cblas": "/usr/include/cblas.h",
            "hpcc": "/usr/bin/hpcc",
            "fio": "fio-3.33",
            "ib_send_lat": "/usr/bin/ib_send_lat",
            "slurm": "slurm 23.02",
        },
        nics=[{"name": "mlx5_0", "kind": "rdma", "ports": []}],
        gpus=[{"name": "NVIDIA A100"}],
        cuda={"nvcc": "/usr/local/cuda/bin/nvcc", "nvcc_version": "13.0.88"},
    )
    assert missing_tools(system) == []
    detail = {r.what: r.detail for r in requirements_report(system)}
    assert detail["MPI"] == "OpenMPI 4.1.4"
    assert detail["RDMA device"] == "mlx5_0"


def test_this_machine() -> None:
    system = collect_system()
    assert system.hostname
    assert system.cpu_model
    assert system.architecture
    assert system.threads == os.cpu_count()
    assert system.memory_bytes and system.memory_bytes > 0
    assert system.l3_bytes and system.l3_bytes > 0
    assert system.l3_domains and sorted(c for d in system.l3_domains for c in d)
    assert system.numa_nodes and len(system.numa_nodes) >= 1
    assert system.os
    assert system.kernel == os.uname().release
    assert system.isa is not None
    assert System.from_dict(json.loads(json.dumps(system.to_dict()))) == system


def test_doctor_prints_readable_tables_never_python_dicts(assay_home) -> None:
    """NICs and GPUs are tables of their fields; sizes and clocks have units."""
    from conftest import run_cli

    proc = run_cli("doctor", home=assay_home, check=True)
    assert "{'" not in proc.stdout and "'name':" not in proc.stdout, proc.stdout
    assert "Network interfaces" in proc.stdout
    assert "Memory" in proc.stdout and " GiB" in proc.stdout


def test_doctor_says_what_the_run_report_says_in_the_same_words(assay_home) -> None:
    """The doctor's System table is the run report's (its labels, its formats), never the
    record's field names."""
    from assay.report.system import system_table
    from conftest import run_cli

    text = " ".join(run_cli("doctor", home=assay_home, check=True).stdout.split())
    fields = ("cpu_model", "l3_bytes", "freq_max_hz", "memory_bytes", "numa_nodes", "mbps",
              "nvcc_version", "cuda_version")  # fmt: skip
    for field in fields:
        assert field not in text.split("note:")[0], field  # notes may name a field
    for label, _ in system_table(collect_system(), []).rows:
        assert label in text, label


def test_doctor_folds_virtual_interfaces_into_one_line(assay_home) -> None:
    """64 veths of a namespace cluster are one row, named as a host list, not 64 rows."""
    import subprocess

    from conftest import run_cli

    if os.geteuid() != 0:
        pytest.skip("creating veth pairs needs root")
    names = [f"asyvt{i}" for i in range(1, 9)]
    try:
        for name in names:
            peer = name.replace("vt", "pv")
            argv = ["ip", "link", "add", name, "type", "veth", "peer", "name", peer]
            subprocess.run(argv, check=True, capture_output=True)
        text = run_cli("doctor", home=assay_home, check=True).stdout
    finally:
        for name in names:
            subprocess.run(["ip", "link", "del", name], capture_output=True, check=False)
    rows = [line for line in text.splitlines() if "asy" in line]
    assert len(rows) == 1, rows
    assert "asypv[1-8],asyvt[1-8]" in rows[0], rows[0]
    assert "virtual" in rows[0]


def test_fabric_limits_are_read_as_the_kernel_states_them() -> None:
    """The neighbour table, port range, backlog and open-file limit of this machine, read
    beside the kernel's own files and the process's limit."""
    import resource

    fabric = collect_system().fabric
    for n in (1, 2, 3):
        want = Path(f"/proc/sys/net/ipv4/neigh/default/gc_thresh{n}").read_text()
        assert fabric[f"neigh_gc_thresh{n}"] == int(want)
    low, high = map(int, Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split())
    assert fabric["ephemeral_ports"] == high - low + 1
    assert fabric["somaxconn"] == int(Path("/proc/sys/net/core/somaxconn").read_text())
    assert fabric["nofile"] == resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def test_a_gpu_and_a_nic_are_shown_in_words_with_units() -> None:
    """The inventory keeps SI base units under field names; the doctor's tables say them as
    the report does (an H100's record as the collector makes it)."""
    from rich.console import Console

    from assay.cli.system import records_table

    gpu = {"index": 0, "name": "NVIDIA H100 80GB HBM3", "pci_bus_id": "00000000:19:00.0",
           "memory_bytes": 85520809984, "driver_version": "580.159.04",
           "clock_max_hz": 1.98e9, "memory_clock_max_hz": 2.619e9, "power_limit_w": 700.0,
           "compute_cap": "9.0"}  # fmt: skip
    nic = {"name": "ib0", "kind": "net", "speed_mbps": 200000, "state": "up", "mtu": 2044,
           "virtual": False}  # fmt: skip
    console = Console(width=400, record=True)
    for title, record in (("GPUs", gpu), ("Network interfaces", nic)):
        console.print(records_table(title, [record]))
    text = console.export_text()
    for said in ("memory", "79.6 GiB", "SM clock, max", "1,980 MHz", "2,619 MHz", "700 W",
                 "compute capability", "PCI bus", "200,000 Mb/s", "2,044 B", "driver"):  # fmt: skip
        assert said in text, said
    assert "_" not in "".join(text.split("00000000:19:00.0")), text
