"""The OpenBLAS a probe will load: its version, the kernels it picks by itself, and whether
better kernels compute right here (read once at plan time, never raising).

``read_openblas`` loads ``libopenblas.so.0`` (what ``-lopenblas`` links, and what Debian's
``libblas.so.3``/``liblapack.so.3`` forward to) in a child Python, so that neither its threads
nor its kernels stay in assay's own process, and asks ``openblas_get_config()`` and
``openblas_get_corename()``:

- **detected**: the core OpenBLAS picks by itself (``OPENBLAS_CORETYPE`` unset);
- when that core is below what the CPU's flags allow (``assay.system.blaskernel.advise``), each
  better core, best first, is tried in a child of its own: OpenBLAS must accept the name (it
  runs that core: an unknown name silently falls back on its own detection), and a 256 × 256
  DGEMM of small integers must be exact (Freivalds' check, C·x = A·(B·x), exact in double).
  A core whose instructions the CPU lacks dies of SIGILL, which is a "no", never a crash of
  assay. The first that passes is the one to use; the probe's own result check (DGEMM's exact
  check, HPL's residual) then proves the full run.

The user's own kernel settings (``OPENBLAS_CORETYPE``, ``MKL_ENABLE_INSTRUCTIONS``,
``MKL_DEBUG_CPU_TYPE``, ``BLIS_ARCH_TYPE``) are recorded and never overridden.

**Simulating a fallback** (tests, demos): with ``ASSAY_SIMULATE_OPENBLAS_CORE=Prescott`` assay
treats Prescott as the core OpenBLAS picks by itself: the detection child runs with
``OPENBLAS_CORETYPE=Prescott``, and so does every BLAS job assay does not give a better core —
OpenBLAS really runs its Prescott kernels, as it does on a CPU it does not know. Every sample
says the fallback was simulated.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from assay.system.blaskernel import advise

SIMULATE_VAR = "ASSAY_SIMULATE_OPENBLAS_CORE"
# The variables by which a user chooses a BLAS's kernels (OpenBLAS, MKL, BLIS).
USER_KERNEL_VARS = (
    "OPENBLAS_CORETYPE",
    "MKL_ENABLE_INSTRUCTIONS",
    "MKL_DEBUG_CPU_TYPE",
    "BLIS_ARCH_TYPE",
)
LIBRARY = "libopenblas.so.0"
CHECK_ORDER = 256  # big enough for the blocked kernels (the small-matrix path stops at 100³)
CHILD_TIMEOUT_S = 60.0

# Run in a child: prints the core and config, and with an order, "check ok" or what differed.
_CHILD = r"""
import ctypes, json, sys
lib = ctypes.CDLL(sys.argv[1])
lib.openblas_get_corename.restype = ctypes.c_char_p
lib.openblas_get_config.restype = ctypes.c_char_p
out = {"core": lib.openblas_get_corename().decode(), "config": lib.openblas_get_config().decode()}
if len(sys.argv) > 2:
    n = int(sys.argv[2])
    vals = (-2.0, -1.0, 1.0, 2.0)
    a = (ctypes.c_double * (n * n))(*[vals[(i * 7 + i // n * 3) % 4] for i in range(n * n)])
    b = (ctypes.c_double * (n * n))(*[vals[(i * 5 + i // n) % 4] for i in range(n * n)])
    c = (ctypes.c_double * (n * n))()
    lib.cblas_dgemm.argtypes = [ctypes.c_int] * 6 + [ctypes.c_double, ctypes.c_void_p,
        ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_double, ctypes.c_void_p,
        ctypes.c_int]
    lib.cblas_dgemm(102, 111, 111, n, n, n, 1.0, a, n, b, n, 0.0, c, n)  # col-major, no trans
    x = [1.0 + j % 3 for j in range(n)]
    def mv(m, v):
        y = [0.0] * n
        for j in range(n):
            col, vj = j * n, v[j]
            for i in range(n):
                y[i] += m[col + i] * vj
        return y
    bad = sum(1 for p, q in zip(mv(c, x), mv(a, mv(b, x))) if p != q)
    out["check"] = "ok" if bad == 0 else f"C*x differs from A*(B*x) in {bad} of {n} rows"
print(json.dumps(out))
"""


@dataclass
class OpenBlasFacts:
    """What ``read_openblas`` found; ``note`` says why a field is missing."""

    library: str = ""  # the file asked for (libopenblas.so.0)
    version: str = ""  # "0.3.21"
    config: str = ""  # OpenBLAS's build line, as detected
    detected: str = ""  # the core OpenBLAS picks by itself ("" when unknown)
    simulated: str = ""  # ASSAY_SIMULATE_OPENBLAS_CORE's value when set
    user: dict[str, str] = field(default_factory=dict)  # the user's own kernel variables
    advice: str = ""  # why better cores were (not) tried
    tried: dict[str, str] = field(default_factory=dict)  # core -> "ok" or why not
    note: str = ""

    @property
    def verified(self) -> str | None:
        """The best core that passed its check, if one was tried and passed."""
        return next((core for core, outcome in self.tried.items() if outcome == "ok"), None)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> OpenBlasFacts:
        names = cls.__dataclass_fields__
        return cls(**{k: v for k, v in data.items() if k in names})


def _child(env: Mapping[str, str], *args: str) -> tuple[dict[str, Any] | None, str]:
    """Run the child; (its answer, "") or (None, why it gave none)."""
    try:
        proc = subprocess.run(
            [sys.executable, "-I", "-c", _CHILD, LIBRARY, *args],
            env=dict(env),
            capture_output=True,
            text=True,
            timeout=CHILD_TIMEOUT_S,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    if proc.returncode < 0:
        return None, f"killed by {signal.Signals(-proc.returncode).name}"
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no message"])[-1]
        return None, f"exit {proc.returncode}: {tail[:200]}"
    try:
        return json.loads(proc.stdout.strip().splitlines()[-1]), ""
    except (ValueError, IndexError):
        return None, f"unreadable answer {proc.stdout[:120]!r}"


def read_openblas(
    isa: Iterable[str] | None,
    vendor: str | None,
    environ: Mapping[str, str] | None = None,
) -> OpenBlasFacts | None:
    """The OpenBLAS facts of this machine, or None when there is no OpenBLAS to load."""
    environ = dict(os.environ if environ is None else environ)
    user = {k: environ[k] for k in USER_KERNEL_VARS if k in environ}
    simulated = environ.get(SIMULATE_VAR, "").strip()
    base = {k: v for k, v in environ.items() if k not in USER_KERNEL_VARS}
    base |= {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    detect_env = base | ({"OPENBLAS_CORETYPE": simulated} if simulated else {})
    answer, why = _child(detect_env)
    if answer is None:
        if "cannot open shared object" in why:
            return None  # no OpenBLAS here: nothing to say about its kernels
        return OpenBlasFacts(library=LIBRARY, simulated=simulated, user=user, note=why)
    config = str(answer.get("config", ""))
    words = config.split()
    facts = OpenBlasFacts(
        library=LIBRARY,
        version=words[1] if len(words) > 1 and words[0] == "OpenBLAS" else "",
        config=config,
        detected=str(answer.get("core", "")),
        simulated=simulated,
        user=user,
    )
    advice = advise(isa, vendor, facts.detected)
    facts.advice = advice.reason
    if "OPENBLAS_CORETYPE" in user:
        facts.advice += "; the user's OPENBLAS_CORETYPE is kept"
        return facts
    for core in advice.try_cores:
        facts.tried[core] = try_core(base, core)
        if facts.tried[core] == "ok":
            break
    return facts


def try_core(environ: Mapping[str, str], core: str) -> str:
    """ "ok" when OpenBLAS runs ``core`` and its DGEMM is exact, else why not."""
    answer, why = _child(dict(environ) | {"OPENBLAS_CORETYPE": core}, str(CHECK_ORDER))
    if answer is None:
        return why
    if str(answer.get("core", "")).lower() != core.lower():
        return f"not accepted by this OpenBLAS (it ran {answer.get('core')})"
    if answer.get("check") != "ok":
        return f"wrong result: {answer.get('check')}"
    return "ok"
