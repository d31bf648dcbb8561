"""The C harness (native/probe.h, native/jsonl.h) is also C++: the CUDA probes (C++ under nvcc)
use it instead of a copy of their own.

Compiled here with g++ -Werror as C++17 (the standard nvcc builds the probes with) and run:
the option table built with probe.h's typed rows, a JSON line and its statistics, and
probe_die_now's _Exit. tests/probes/test_native_probes.py holds the harness's tests as C; the CUDA
probes themselves are compiled by tests/probes/test_gpu.py.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

NATIVE = Path(__file__).resolve().parents[2] / "src" / "assay" / "native"
CXXFLAGS = ["-std=c++17", "-O2", "-Wall", "-Wextra", "-Wpedantic", "-Werror"]

CXX_HARNESS = r"""
#include "jsonl.h"
#include "probe.h"
#include <vector>

static void usage(void) { puts("usage"); }
static void atexit_ran(void) { fputs("atexit ran\n", stderr); }

int main(int argc, char **argv)
{
    long long count = 7, bytes = 64;
    double seconds = 1.5;
    int mode = 0, flag = 0;
    const char *list = nullptr;
    static const char *const modes[] = {"one", "two", nullptr};
    const probe_option opts[] = {
        probe_opt_int("--count", &count, 1, 100),
        probe_opt_size("--bytes", &bytes, 0, 1LL << 40),
        probe_opt_real("--seconds", &seconds, 0.0, 10.0),
        probe_opt_choice("--mode", &mode, modes),
        probe_opt_text("--list", &list),
        probe_opt_flag("--flag", &flag),
        PROBE_END,
    };
    probe_init("cxx");
    probe_options_or_exit(argc, argv, opts, usage);
    std::vector<double> x{4.0, 1.0, 3.0, 2.0};
    jl_stats st;
    if (jl_compute_stats(x.data(), (long)x.size(), &st))
        return PROBE_RUNTIME;
    jl_begin("cxx.metric", st.mean);
    jl_param_long("count", count);
    jl_param_long("bytes", bytes);
    jl_param_double("seconds", seconds);
    jl_param_long("mode", mode);
    jl_param_bool("flag", flag);
    jl_param_str("list", list ? list : "");
    jl_end(&st, JL_SUMMARY);
    if (flag) {
        atexit(atexit_ran);
        probe_die_now(PROBE_INVALID, "stopped after %d line", 1);
    }
    return PROBE_OK;
}
"""


@pytest.fixture(scope="module")
def cxx_harness(tmp_path_factory: pytest.TempPathFactory) -> Path:
    gxx = shutil.which("g++")
    if gxx is None:
        pytest.fail("g++ not found (apt-get install g++): the harness must be checked as C++")
    src = tmp_path_factory.mktemp("cxx") / "harness.cpp"
    src.write_text(CXX_HARNESS)
    out = src.with_suffix("")
    cmd = [gxx, *CXXFLAGS, f"-I{NATIVE}", str(src), "-o", str(out), "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return out


def _run(exe: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(exe), *args], capture_output=True, text=True, timeout=30)


def test_probe_h_and_jsonl_h_compile_and_work_as_cplusplus(cxx_harness: Path):
    proc = _run(cxx_harness, "--count", "9", "--bytes", "2M", "--seconds", "0.5",
                "--mode", "two", "--list", "a,b")  # fmt: skip
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    obj = json.loads(proc.stdout)
    assert obj["value"] == 2.5 and isinstance(obj["value"], float)
    assert obj["params"] == {"count": 9, "bytes": 2 << 20, "seconds": 0.5, "mode": 1,
                             "flag": False, "list": "a,b"}  # fmt: skip
    # JL_SUMMARY: the six fields, in this order, no percentiles
    assert list(obj["stats"]) == ["n", "min", "max", "mean", "median", "stddev"]
    assert (obj["stats"]["n"], obj["stats"]["median"]) == (4, 2.5)
    bad = _run(cxx_harness, "--count", "10k")
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr == "cxx: --count: expected an integer from 1 to 100, got '10k'\n"
    assert _run(cxx_harness, "--list").stderr == "cxx: --list needs a value (see --help)\n"


def test_probe_die_now_keeps_the_printed_line_and_skips_atexit(cxx_harness: Path):
    """_Exit, not exit (another thread may be inside CUDA), after flushing what was printed."""
    proc = _run(cxx_harness, "--flag")
    assert proc.returncode == 3
    assert json.loads(proc.stdout)["params"]["flag"] is True
    assert proc.stderr == "cxx: stopped after 1 line\n"  # no "atexit ran"


def _code(path: Path) -> str:
    """The file without its comments: what it does, not what it says."""
    return re.sub(r"/\*.*?\*/|//[^\n]*", "", path.read_text(), flags=re.S)


CUDA_SOURCES = sorted(NATIVE.glob("*.cu"))


def test_cuda_probe_h_keeps_only_what_is_cuda_s_own():
    header = _code(NATIVE / "cuda_probe.h")
    assert '#include "probe.h"' in header and '#include "jsonl.h"' in header
    # no JSON writer, no statistics, no exit codes, no options loop of its own
    for copied in ("%.17g", "stdout", "sqrt", "sort", "median", "EXIT_", "argv", "class "):
        assert copied not in header, f"cuda_probe.h has {copied!r}: use jsonl.h/probe.h"
    assert len(header.splitlines()) < 130


@pytest.mark.parametrize("source", CUDA_SOURCES, ids=lambda p: p.name)
def test_each_cuda_probe_writes_through_the_c_harness(source: Path):
    code = _code(source)
    assert '#include "cuda_probe.h"' in code
    for used in ("probe_init(", "probe_options_or_exit(", "jl_begin(", "jl_end("):
        assert used in code, f"{source.name} does not call {used}"
    for own in (r'"metric"', r"%\.17g", r"EXIT_", r"\bcp_die\b", r"\bexit\("):
        assert not re.search(own, code), f"{source.name} has {own!r}: probe.h/jsonl.h do that"


def test_there_are_three_cuda_probes():
    assert [p.name for p in CUDA_SOURCES] == ["gpuburn.cu", "gpumem.cu", "ncclbench.cu"]
