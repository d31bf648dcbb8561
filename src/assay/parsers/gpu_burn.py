"""gpu_burn output (wilicc/gpu-burn, and the ReFrame variant) -> sustained GEMM rate per GPU.

Upstream gpu_burn redraws one progress line, with carriage returns on a terminal (newlines
in a log or a pasted issue), every few seconds::

    90.0%  proc'd: 405 (52045 Gflop/s) - 324 (51946 Gflop/s)   errors: 0 - 0   temps: 69 C - 67 C

one ``N (R Gflop/s)`` per GPU: N is how many GEMMs that GPU has done, R the rate of its last
reporting interval (gpu_burn.cpp keeps R until N moves again). It ends with a verdict::

    Tested 2 GPUs:
            GPU 0: OK
            GPU 1: FAULTY

What is read. A GPU's intervals are the progress lines where its N grew (a repeated R is the
same measurement printed again, and R=0 with N=0 is a GPU that has not finished one GEMM).
Its first interval includes start-up and is left out when another exists. The
sample is the median of the remaining interval rates (min, max, mean in its stats), as
``gpu.sgemm`` when gpu_burn printed "using FLOATS" (its default) and ``gpu.dgemm`` for
"using DOUBLES" (``-d``). A GPU that gpu_burn calls FAULTY, whose error count is not 0
(negative counts are gpu_burn's own counter gone wrong, "(DIED!)" a lost GPU), or that died
(N = -1) gives no rate: its reason is in the warnings and ``meta["failed"]``; an output where
no GPU has a rate is refused, the error naming each GPU's reason. "using Tensor Cores" (``-tc``)
in a GPU's init line adds ``tensor_cores``. Output without
the summary is incomplete; its rates are kept when the last error counts are 0.

The ReFrame variant (ReFrame's hpctestlib gpu_burn) prints one line per GPU and node::

    [nid00001] GPU  0(OK): 3412 GF/s  62 Celsius

read as one ``gpu.burn`` sample per line; its precision is not printed, so none is claimed.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass, field
from typing import Any

from assay.errors import ParseError
from assay.model import Sample, Stats
from assay.parsers.base import ParseResult, last_line_cut, make_sample, require_tool
from assay.parsers.numbers import checked, parse_int, parse_number, parse_rate

TOOL = "gpu_burn"
GFLOPS = 1e9

_PROGRESS = re.compile(r"^\s*(?P<pct>\d{1,3}(?:\.\d+)?)%\s+proc'd:\s*(?P<rest>.*)$")
_PROC = re.compile(r"^(?P<n>-?\d{1,19})\s+\((?P<r>\S{1,40})\s+Gflop/s\)$")
_ERROR = re.compile(r"^(?P<n>-?\d{1,19})(?:\s+\((?P<flag>WARNING|DIED)!\))?$")
_TEMP = re.compile(r"^(?P<t>-?\d{1,4}|--)\s*C$")
_TEMPS = re.compile(r"(?:-?\d{1,4}|--)\s*C(?:\s+-\s+(?:-?\d{1,4}|--)\s*C)*")
# searched, not matched: a redraw may put "Killing processes.. " before it on the same line
_INIT = re.compile(
    r"Initialized device (?P<gpu>\d{1,4}) with .*using (?P<kind>FLOATS|DOUBLES)"
    r"(?P<tc>, using Tensor Cores)?"
)
_NAME = re.compile(r"^\s*GPU (?P<gpu>\d{1,4}): (?P<name>.+?) \(UUID: (?P<uuid>[^)]*)\)\s*$")
_TESTED = re.compile(r"^\s*Tested (?P<n>\d{1,4}) GPUs:\s*$")
_VERDICT = re.compile(r"^\s*GPU (?P<gpu>\d{1,4}): (?P<v>OK|FAULTY)\s*$")
_REFRAME = re.compile(
    r"^\s*(?:\[(?P<host>[^\]]{0,200})\]\s*)?GPU\s+(?P<gpu>\d{1,4})\((?P<v>[^)]{0,20})\):\s+"
    r"(?P<r>\S{1,40})\s+GF/s\s+(?P<t>\S{1,10})\s+Celsius\s*$"
)


@dataclass
class _Gpu:
    index: int
    name: str | None = None
    precision: str | None = None  # "FLOATS" | "DOUBLES"
    done: int = 0  # GEMMs done at the last progress line
    rates: list[float] = field(default_factory=list)  # one per interval where `done` grew
    errors: int | None = None
    error_flag: str | None = None
    died: bool = False
    temps: list[int] = field(default_factory=list)
    verdict: str | None = None


_EXPECTED = "not gpu_burn output: no \"proc'd: N (R Gflop/s)\" line, no 'Tested N GPUs:'"


def looks_like(text: str) -> bool:
    """gpu_burn's progress line, its 'Tested N GPUs:' summary, or ReFrame's GF/s line."""
    head = text[:200_000]
    if "proc'd:" in head and "Gflop/s" in head:
        return True
    lines = head.splitlines()
    if any(_TESTED.match(ln) for ln in lines) and any(_VERDICT.match(ln) for ln in lines):
        return True
    return any(_REFRAME.match(ln) for ln in lines)


def _split(body: str, sep: str) -> list[str]:
    return [part.strip() for part in body.split(sep)]


def _progress(
    rest: str, gpus: dict[int, _Gpu], source: str, line: int, warnings: list[str]
) -> None:
    """One progress line: 'N (R Gflop/s) - ...   errors: E - ...   temps: T C - ...'."""
    proc, _, tail = rest.partition("errors:")
    errs, _, temps = tail.partition("temps:")
    entries = _split(proc, " - ")
    for i, entry in enumerate(entries):
        m = _PROC.match(entry)
        if m is None:
            raise ParseError(
                f"unreadable gpu_burn progress entry {entry[:60]!r}", source=source, line=line
            )
        gpu = gpus.setdefault(i, _Gpu(i))
        n = parse_int(m["n"], source=source, line=line, what="GEMM count", minimum=-1)
        rate = parse_rate(m["r"], source=source, line=line, what="Gflop/s")
        if n == -1:
            gpu.died = True  # gpu_burn's "proc'd: -1": the GPU's process is gone
        elif n > gpu.done:
            if rate <= 0:
                raise ParseError(f"GPU {i}: {n} GEMMs done at 0 Gflop/s", source=source, line=line)
            gpu.done = n
            gpu.rates.append(rate)
        elif n < gpu.done:
            raise ParseError(
                f"GPU {i}: the GEMM count went down ({gpu.done} -> {n}): two outputs mixed?",
                source=source,
                line=line,
            )
    if tail:
        # "0 - -524288000  (WARNING!)- 0": entries end with ")-" or " - "
        parts = [p for p in re.split(r"\s-\s|\)-\s*", errs.strip()) if p.strip()]
        parts = [p.strip() + (")" if p.strip().endswith("!") else "") for p in parts]
        if len(parts) != len(entries):
            raise ParseError(
                f"{len(parts)} error counts for {len(entries)} GPUs", source=source, line=line
            )
        for i, part in enumerate(parts):
            m = _ERROR.match(part)
            if m is None:
                raise ParseError(f"unreadable error count {part[:40]!r}", source=source, line=line)
            gpus[i].errors = parse_int(m["n"], source=source, line=line, minimum=-(2**63))
            gpus[i].error_flag = m["flag"]
    if temps.strip():
        _temps(temps.strip(), gpus, source, line, warnings)


def _temps(text: str, gpus: dict[int, _Gpu], source: str, line: int, warnings: list[str]) -> None:
    """'T C - T C ...'; on a terminal the next message may follow the last 'C' on the same
    line (gpu_burn redraws with '\\r', no newline): that text is not a temperature."""
    m = _TEMPS.match(text)
    if m is None:
        raise ParseError(f"unreadable temperature {text[:40]!r}", source=source, line=line)
    if rest := text[m.end() :].strip():
        warnings.append(f"{source}:{line}: text after the temperatures ignored: {rest[:60]!r}")
    for i, part in enumerate(_split(m[0].strip(), " - ")):
        t = _TEMP.match(part)
        if t is None or i not in gpus:
            raise ParseError(f"unreadable temperature {part[:40]!r}", source=source, line=line)
        if t["t"] != "--":
            gpus[i].temps.append(parse_int(t["t"], source=source, line=line, minimum=-300))


def _failure(gpu: _Gpu) -> str | None:
    if gpu.verdict == "FAULTY":
        return "gpu_burn says FAULTY (wrong results in its comparison)"
    if gpu.died or gpu.error_flag == "DIED":
        return "the GPU's process died during the burn"
    if gpu.errors is not None and gpu.errors < 0:
        return f"error count {gpu.errors}: gpu_burn's counter is not readable"
    if gpu.errors:
        return f"{gpu.errors} wrong elements in gpu_burn's comparison"
    return None


def _rate_sample(gpu: _Gpu, kind: str, name: tuple[str, str] | None, tensor: bool) -> Sample:
    """The GPU's sample: the median of its interval rates, the first (start-up) one left out
    when another exists."""
    rates = gpu.rates[1:] if len(gpu.rates) >= 2 else gpu.rates
    params: dict[str, Any] = {
        "tool": TOOL,
        "gpu": gpu.index,
        "precision": "fp64" if kind == "DOUBLES" else "fp32",
        "intervals": len(rates),
        "warmup_intervals": len(gpu.rates) - len(rates),
        "errors": gpu.errors if gpu.errors is not None else 0,
        "verdict": gpu.verdict or "unknown (no summary)",
    }
    if name is not None:
        params["gpu_name"], params["gpu_uuid"] = name
    if tensor:
        params["tensor_cores"] = True
    if gpu.temps:
        params["temp_max_c"] = max(gpu.temps)
    stats = Stats(
        n=len(rates),
        min=min(rates) * GFLOPS,
        max=max(rates) * GFLOPS,
        mean=statistics.fmean(rates) * GFLOPS,
        median=statistics.median(rates) * GFLOPS,
    )
    metric = "gpu.dgemm" if kind == "DOUBLES" else "gpu.sgemm"
    value = statistics.median(rates) * GFLOPS
    return make_sample(TOOL, metric, value, params, stats, unit="flop/s", better="higher")


def _upstream(text: str, source: str) -> ParseResult:
    result = ParseResult(tool=TOOL)
    gpus: dict[int, _Gpu] = {}
    names: dict[int, tuple[str, str]] = {}
    precision: dict[int, str] = {}
    tensor: set[int] = set()  # "-tc": "using Tensor Cores" in its init line
    tested: int | None = None
    lines = text.splitlines()
    cut = last_line_cut(text)
    for lineno, raw in enumerate(lines, start=1):
        last = cut and lineno == len(lines)
        if m := _PROGRESS.match(raw):
            if last:  # the output ends inside this line: its figures are not all there
                result.complete = False
                result.missing.append(f"the progress line cut at {source}:{lineno}")
                continue
            _progress(m["rest"], gpus, source, lineno, result.warnings)
        elif m := _INIT.search(raw):
            precision[int(m["gpu"])] = m["kind"]
            if m["tc"]:
                tensor.add(int(m["gpu"]))
        elif m := _NAME.match(raw):
            names[int(m["gpu"])] = (m["name"].strip(), m["uuid"])
        elif m := _TESTED.match(raw):
            tested = int(m["n"])
        elif (m := _VERDICT.match(raw)) and tested is not None:
            gpus.setdefault(int(m["gpu"]), _Gpu(int(m["gpu"]))).verdict = m["v"]
    if tested is None:
        result.complete = False
        result.missing.append("the 'Tested N GPUs:' summary with each GPU's OK/FAULTY verdict")
    elif len([g for g in gpus.values() if g.verdict]) != tested:
        result.complete = False
        result.missing.append(f"verdicts: the summary names fewer than its {tested} GPUs")
    kinds = set(precision.values())
    failed: list[dict[str, Any]] = []
    for i in sorted(gpus):
        gpu = gpus[i]
        why = _failure(gpu)
        if why is None and tested is None and gpu.errors is None:
            why = "no error count was printed for it"
        if why is not None:
            failed.append({"gpu": i, "reason": why})
            result.warnings.append(f"GPU {i}: no rate reported: {why}")
            continue
        if not gpu.rates:
            failed.append({"gpu": i, "reason": "no GEMM finished: gpu_burn measured nothing"})
            result.warnings.append(f"GPU {i}: gpu_burn printed no measured Gflop/s for it")
            continue
        kind = precision.get(i) or (kinds.pop() if len(kinds) == 1 else None)
        if kind is None:
            kind = "FLOATS"  # gpu_burn's default; said in a warning since it was not printed
            result.warnings.append(f"GPU {i}: precision not printed; gpu_burn's default FP32")
        result.samples.append(_rate_sample(gpu, kind, names.get(i), i in tensor))
    if failed:
        result.meta["failed"] = failed
    result.meta["gpus"] = len(gpus)
    if not result.samples:
        raise ParseError(_nothing_kept(failed), source=source)
    return result


def _nothing_kept(failed: list[dict[str, Any]]) -> str:
    """The refusal of an output where no GPU has a rate to keep: what each GPU showed."""
    if not failed:
        return "gpu_burn output without any GPU's figures"
    reasons: dict[str, list[str]] = {}
    for f in failed:
        reasons.setdefault(f["reason"], []).append(str(f["gpu"]))
    said = "; ".join(f"GPU {', '.join(gpus)}: {why}" for why, gpus in reasons.items())
    return f"gpu_burn output without a rate to keep for any of its {len(failed)} GPU(s) ({said})"


def _reframe(text: str, source: str) -> ParseResult:
    result = ParseResult(tool=TOOL, meta={"variant": "reframe"})
    failed: list[dict[str, Any]] = []
    seen: set[tuple[str, int]] = set()
    for lineno, raw in enumerate(text.splitlines(), start=1):
        m = _REFRAME.match(raw)
        if m is None:
            continue
        host, gpu = (m["host"] or "").strip(), int(m["gpu"])
        if (host, gpu) in seen:
            raise ParseError(
                f"GPU {gpu} of {host or 'this node'} twice", source=source, line=lineno
            )
        seen.add((host, gpu))
        rate = parse_rate(m["r"], source=source, line=lineno, what="GF/s")
        temp = parse_number(m["t"], source=source, line=lineno, what="temperature", minimum=-300)
        if m["v"] != "OK" or rate <= 0:
            why = f"verdict {m['v']!r}" if m["v"] != "OK" else "0 GF/s"
            failed.append({"host": host, "gpu": gpu, "reason": why})
            result.warnings.append(f"{source}:{lineno}: GPU {gpu} {host}: no rate: {why}")
            continue
        params: dict[str, Any] = {"tool": TOOL, "gpu": gpu, "temp_c": temp, "verdict": "OK"}
        if host:
            params["host"] = host
        result.samples.append(
            make_sample(TOOL, "gpu.burn", rate * GFLOPS, params, unit="flop/s", better="higher")
        )
    if failed:
        result.meta["failed"] = failed
    if not result.samples and not failed:
        raise ParseError("no 'GPU N(OK): X GF/s T Celsius' line", source=source)
    return result


@checked
def parse(text: str, source: str = "<text>") -> ParseResult:
    """Read gpu_burn output, upstream or ReFrame's (see the module docstring)."""
    require_tool(text, tool="gpu-burn", looks_like=looks_like, expected=_EXPECTED, source=source)
    if any(_PROGRESS.match(ln) or _TESTED.match(ln) for ln in text.splitlines()):
        return _upstream(text, source)
    return _reframe(text, source)
