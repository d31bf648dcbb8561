"""HPL (xhpl) text output: one ``compute.hpl`` sample per test that passed its residual check.

xhpl prints, for every test, a result line and then its scaled-residual check
(HPL's ``testing/ptest/HPL_pdtest.c``)::

    T/V                N    NB     P     Q               Time                 Gflops
    --------------------------------------------------------------------------------
    WR11C2R4       10000   192     2     2              11.28             5.9128e+01
    HPL_pdgesv() start time Mon Jul 13 10:20:51 2020           <- HPL 2.1 and later
    HPL_pdgesv() end time   Mon Jul 13 10:21:02 2020
    --------------------------------------------------------------------------------
    ||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=   3.05009519e-03 ...... PASSED

and at the end (``testing/ptest/HPL_pddriver.c``) the counts: ``Finished N tests with the
following results:`` / ``N tests completed and passed residual checks,`` / ``... failed ...``
/ ``... skipped ...`` (or ``... completed without checking,`` when the threshold is <= 0).

HPL's "Gflops" is ``1e9`` flop/s: HPL_pdtest.c computes it as
``(N / 1e9) * (N / time) * (2/3 N + 3/2)``, i.e. flop count / time / 1e9.

A rate is only ever returned for a test whose residual check PASSED. A FAILED test goes to
``meta["failed"]`` with a warning; a test run with checking switched off (threshold <= 0)
goes to ``meta["unchecked"]``; a result line whose check never came (the output was cut)
makes the result incomplete. HPL 1.0 printed three residual lines per test (against
``||A||_1 * N``, ``||A||_1 * ||x||_1`` and ``||A||_oo * ||x||_oo``); such a test passes only
when all of them passed, and its ``residual`` is the largest of the three.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from assay.errors import ParseError
from assay.model import Sample
from assay.parsers.base import ParseResult, parse_number, require_text
from assay.parsers.numbers import checked, parse_int

TOOL = "hpl"
METRIC = "compute.hpl"
GFLOPS = 1e9  # HPL's Gflops: flop count / seconds / 1e9 (HPL_pdtest.c)

# "W" + R|C (process mapping) + depth + bcast + rfact + ndiv + pfact + nbmin (HPL_pdtest.c);
# vendor builds (Intel, NVIDIA, AMD) keep the "W" prefix but not always the rest.
_RESULT = re.compile(
    r"^(?P<tv>W[RC][A-Z0-9]{1,14})\s+(?P<n>\d+)\s+(?P<nb>\d+)\s+(?P<p>\d+)\s+(?P<q>\d+)"
    r"\s+(?P<time>\S+)\s+(?P<gflops>\S+)(?P<rest>\s+.*)?$"
)
# "||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+||b||_oo)*N)=   1.72533487e-02 ...... PASSED": read after
# the formula's last "=". One pattern spanning the formula (".*=") backtracked quadratically on
# a long line of "=" (a 64,000-character line took 34 s); this is linear in the line.
_RESIDUAL_HEAD = "||Ax-b||_oo"
_RESIDUAL_TAIL = re.compile(r"\s*(?P<value>\S+)\s+\.+\s+(?P<verdict>PASSED|FAILED)\s*$")


def _residual(line: str) -> re.Match[str] | None:
    """The value and verdict of an HPL residual line, or None when ``line`` is not one."""
    if not line.startswith(_RESIDUAL_HEAD):
        return None
    formula, equals, tail = line.rpartition("=")
    if not equals or not formula[len(_RESIDUAL_HEAD) :].lstrip().startswith("/"):
        return None
    return _RESIDUAL_TAIL.match(tail)


_NOT_A_NUMBER = {"nan", "-nan", "+nan", "inf", "-inf", "+inf", "infinity", "-infinity"}


def number_or_nan(token: str, *, source: str, line: int | None) -> float:
    """A number as HPL and HPCC print it, ``nan``/``-nan``/``inf`` included (a failed
    residual's norms): those come back as floats, for the caller to refuse."""
    if token.strip().lower() in _NOT_A_NUMBER:
        return float(token.strip().lower().replace("infinity", "inf"))
    return parse_number(token, source=source, line=line)


# "when" taken whole and stripped in code (a lazy group before "\s*$" is quadratic in a run
# of blanks inside it)
_PDGESV_TIME = re.compile(r"^HPL_pdgesv\(\) (?P<which>start|end) time\s+(?P<when>.+)$")
_VERSION = re.compile(r"^HPLinpack\s+(?P<version>\S+)\s+--")
_EPS = re.compile(r"relative machine precision \(eps\) is taken to be\s+(?P<eps>\S+)")
_THRESHOLD = re.compile(r"Computational tests pass if scaled residuals are less than\s+(?P<t>\S+)")
# The counts HPL_pddriver.c prints; the trailing commas tell them from PTRANS's in HPCC output.
_FINISHED = re.compile(r"^Finished\s+(?P<k>\d+)\s+tests with the following results:")
_COUNTS = {
    "passed": re.compile(r"^\s*(?P<k>\d+)\s+tests completed and passed residual checks,"),
    "failed": re.compile(r"^\s*(?P<k>\d+)\s+tests completed and failed residual checks,"),
    "skipped": re.compile(r"^\s*(?P<k>\d+)\s+tests skipped because of illegal input values\."),
    "unchecked": re.compile(r"^\s*(?P<k>\d+)\s+tests completed without checking,"),
}


@dataclass
class HplCase:
    """One xhpl result line and the residual check(s) that followed it."""

    variant: str  # HPL's T/V column, e.g. WR11C2R4
    n: int
    nb: int
    p: int
    q: int
    time_s: float
    gflops: float
    line: int
    residuals: list[float] = field(default_factory=list)
    verdicts: list[bool] = field(default_factory=list)
    start: str | None = None
    end: str | None = None
    run: int = 1  # the xhpl run of the file it belongs to (several runs pasted or appended)

    @property
    def checked(self) -> bool:
        return bool(self.verdicts)

    @property
    def passed(self) -> bool:
        return self.checked and all(self.verdicts)

    @property
    def residual(self) -> float | None:
        """The largest scaled residual; None when none was printed or one is not a number."""
        if not self.residuals or not all(math.isfinite(r) for r in self.residuals):
            return None
        return max(self.residuals)

    def label(self) -> str:
        return f"{self.variant} N={self.n} NB={self.nb} P={self.p} Q={self.q} (line {self.line})"

    def record(self) -> dict[str, Any]:
        rec: dict[str, Any] = {
            "variant": self.variant,
            "N": self.n,
            "NB": self.nb,
            "P": self.p,
            "Q": self.q,
            "time_s": self.time_s,
            "gflops": self.gflops,
            "residual": self.residual,
            "line": self.line,
        }
        if self.start:
            rec["start"] = self.start
        if self.end:
            rec["end"] = self.end
        return rec


@dataclass
class HplOutput:
    """Everything read from an xhpl output, before it is turned into samples."""

    tests: list[HplCase] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=dict)
    n_summaries: int = 0
    version: str | None = None
    eps: float | None = None
    threshold: float | None = None
    extra_columns: bool = False
    runs: int = 0  # xhpl runs in the text: a banner, or results after a run's closing counts
    run_lines: dict[int, int] = field(default_factory=dict)  # run -> the line it starts on
    run_counts: dict[int, dict[str, int]] = field(default_factory=dict)  # run -> its counts

    def new_run(self, lineno: int) -> None:
        self.runs += 1
        self.run_lines[self.runs] = lineno


def looks_like(text: str) -> bool:
    """xhpl output: its banner or a result line with its residual check (not HPCC's file)."""
    if "HPC Challenge Benchmark" in text or "Begin of Summary section." in text:
        return False  # HPCC embeds HPL; hpcc.py reads that file whole
    if "HPLinpack" in text and "High-Performance Linpack benchmark" in text:
        return True
    return "||Ax-b||_oo" in text and any(_RESULT.match(ln.strip()) for ln in text.splitlines())


def read_tests(text: str, *, source: str = "<text>", first_line: int = 1) -> HplOutput:
    """Read result lines, residual checks and counts. ``first_line`` numbers an excerpt.

    Lines are read stripped, so that a pasted block (indented, after a shell prompt) reads as
    xhpl wrote it. Each "HPLinpack" banner starts a run, and so does a result line after a
    run's closing counts (outputs pasted one after another, the banner cut)."""
    out = HplOutput()
    current: HplCase | None = None
    in_counts = closed = False
    for offset, raw in enumerate(text.splitlines()):
        lineno = first_line + offset
        line = raw.strip()
        if m := _RESULT.match(line):
            if not out.runs or closed:
                out.new_run(lineno)
                closed = False
            current = _case(m, source, lineno, out.runs)
            out.extra_columns = out.extra_columns or bool(m["rest"] and m["rest"].strip())
            out.tests.append(current)
            continue
        if m := _residual(line):
            if current is None:
                raise ParseError(
                    "residual check with no result line before it", source=source, line=lineno
                )
            current.residuals.append(number_or_nan(m["value"], source=source, line=lineno))
            current.verdicts.append(m["verdict"] == "PASSED")
            continue
        if m := _PDGESV_TIME.match(line):
            if current is not None:
                setattr(current, m["which"], m["when"].rstrip())
            continue
        if m := _FINISHED.match(line):
            if not out.runs:
                out.new_run(lineno)
            out.n_summaries += 1
            _count(out, "finished", parse_int(m["k"], source=source, line=lineno, what="count"))
            current = None  # nothing after the summary belongs to the last test
            in_counts = closed = True
            continue
        if in_counts:
            # only the lines right after "Finished": HPCC's PTRANS prints look-alikes
            counted = next(((n, m) for n, rx in _COUNTS.items() if (m := rx.match(line))), None)
            if counted:
                name, m = counted
                _count(out, name, parse_int(m["k"], source=source, line=lineno, what="count"))
                continue
            in_counts = False
        if m := _VERSION.match(line):
            out.version = out.version or m["version"]
            if not out.runs or closed or (out.tests and out.tests[-1].run == out.runs):
                out.new_run(lineno)
                closed = False
        elif m := _EPS.search(line):
            out.eps = parse_number(m["eps"], source=source, line=lineno)
        elif m := _THRESHOLD.search(line):
            out.threshold = parse_number(m["t"], source=source, line=lineno)
    return out


def _case(m: re.Match[str], source: str, lineno: int, run: int) -> HplCase:
    """One result line ("WR11C2R4  10000  192  2  2  11.28  5.9128e+01")."""
    return HplCase(
        variant=m["tv"],
        n=parse_int(m["n"], source=source, line=lineno, what="N"),
        nb=parse_int(m["nb"], source=source, line=lineno, what="NB"),
        p=parse_int(m["p"], source=source, line=lineno, what="P"),
        q=parse_int(m["q"], source=source, line=lineno, what="Q"),
        time_s=parse_number(m["time"], source=source, line=lineno),
        gflops=parse_number(m["gflops"], source=source, line=lineno),
        line=lineno,
        run=run,
    )


def _count(out: HplOutput, name: str, k: int) -> None:
    """Add to HPL's closing counts, the file's and its run's."""
    out.counts[name] = out.counts.get(name, 0) + k
    per_run = out.run_counts.setdefault(out.runs, {})
    per_run[name] = per_run.get(name, 0) + k


def sample_params(test: HplCase) -> dict[str, Any]:
    """The params of a ``compute.hpl`` sample for one passed test."""
    return {
        "N": test.n,
        "NB": test.nb,
        "P": test.p,
        "Q": test.q,
        "variant": test.variant,
        "time_s": test.time_s,
        "residual": test.residual,
        "residual_passed": test.passed,
    }


def build_result(out: HplOutput, *, source: str, probe: str = TOOL) -> ParseResult:
    """Samples for passed tests; failed, unchecked and truncated tests go to meta/missing."""
    result = ParseResult(tool=probe)
    if out.version:
        result.meta["version"] = out.version
    if out.eps is not None:
        result.meta["eps"] = out.eps
    if out.threshold is not None:
        result.meta["threshold"] = out.threshold
    if out.extra_columns:
        result.warnings.append("result lines had columns after Gflops (vendor build); ignored")

    unchecked_run = out.counts.get("unchecked", 0) > 0
    failed: list[dict[str, Any]] = []
    unchecked: list[dict[str, Any]] = []
    for test in out.tests:
        if test.passed:
            result.samples.append(
                Sample.make(probe, METRIC, times(test.gflops, GFLOPS), sample_params(test))
            )
        elif test.checked:
            failed.append(test.record())
            result.warnings.append(
                f"{test.label()}: residual check FAILED (scaled residual {test.residual}); "
                "its rate is not reported"
            )
        elif unchecked_run:
            unchecked.append(test.record())
        else:
            result.complete = False
            result.missing.append(f"residual check for {test.label()}")
    if failed:
        result.meta["failed"] = failed
    if unchecked:
        result.meta["unchecked"] = unchecked
        result.warnings.append(
            f"{len(unchecked)} test(s) ran without a residual check (threshold <= 0); "
            "their rates are not reported"
        )

    runs = sorted({t.run for t in out.tests})
    if len(runs) > 1:
        for sample, test in zip(result.samples, [t for t in out.tests if t.passed], strict=True):
            sample.params["run"] = test.run
        result.warnings.append(
            f"the text holds {len(runs)} xhpl runs (pasted or appended one after another); "
            f"each is kept apart as params.run {runs[0]}..{runs[-1]}"
        )
    if out.n_summaries:
        result.meta["summary"] = dict(out.counts)
    for run in runs:
        _check_counts(out, run, last=run == runs[-1], multi=len(runs) > 1, result=result)

    if not out.tests:
        if out.n_summaries:
            result.warnings.append("HPL finished without a single result line")
        else:
            raise ParseError("no HPL result line (T/V N NB P Q Time Gflops) found", source=source)
    return result


def _check_counts(
    out: HplOutput, run: int, *, last: bool, multi: bool, result: ParseResult
) -> None:
    """HPL's closing counts of one run against the checks read; a run without them was cut."""
    tests = [t for t in out.tests if t.run == run]
    counts = out.run_counts.get(run)
    where = f"run {run} (line {out.run_lines.get(run, tests[0].line)}): " if multi else ""
    if counts is None:
        if last:
            result.complete = False
            result.missing.append(
                f"{where}HPL's closing counts ('Finished N tests with the following ...')"
            )
        else:
            result.warnings.append(f"{where}no closing counts (the text was cut); tests kept")
        return
    n_passed = sum(t.passed for t in tests)
    n_failed = sum(t.checked and not t.passed for t in tests)
    if counts.get("passed", 0) != n_passed or counts.get("failed", 0) != n_failed:
        result.warnings.append(
            f"{where}HPL's counts ({counts.get('passed', 0)} passed, "
            f"{counts.get('failed', 0)} failed) disagree with the checks read "
            f"({n_passed} passed, {n_failed} failed)"
        )


@checked
def parse(text: str, source: str = "<text>") -> ParseResult:
    """Parse xhpl output (HPL 1.0a to 2.3, and vendor builds that keep its format)."""
    require_text(text, "HPL output", source=source)
    return build_result(read_tests(text, source=source), source=source)


def times(value: float, factor: float) -> float:
    """``value * factor`` in decimal, so that 8239.8 MB/s is 8239800000 B/s, not 8239799999.99."""
    if not math.isfinite(value):
        return value * factor
    return float(Decimal(repr(value)) * Decimal(repr(factor)))
