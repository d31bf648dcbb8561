"""Reading numbers as tools print them, and refusing values no measurement can have.

Every parser reads its numbers through these functions, so one rule holds for all of them:
a value is finite and physically possible (sizes and counts are integers ≥ 0, times > 0,
rates ≥ 0) or the parser raises ``ParseError`` naming the file and line. ``check_result``
re-checks every sample a parser returns (a backstop for values derived after reading), and
``sweep_rows`` reports rows repeated or lost in the middle of a size sweep.

Python's ``float()`` accepts ``nan``, ``inf``, ``1_000`` and 5,000-digit numerals, and
``int()`` refuses a numeral over 4,300 digits with a ValueError that is not a parse error:
tokens are therefore matched against what C's printf can print before they are converted.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Callable, Iterable
from typing import Any

from assay.errors import ParseError

# What printf's %d/%f/%e/%g print (no "_", no nan/inf), at most 64 characters: a real
# tool's number is never longer, and the cap keeps int()/float() away from huge numerals.
# re.ASCII: \d would match every Unicode digit ("٣"), which float() reads as 3.
# "\d+(?:\.\d*)?", not "\d+\.?\d*": the same numbers, but one way to split a run of digits,
# so a failed match is linear in the token (the 64-character cap guards it anyway).
_NUMBER = re.compile(r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d{1,3})?", re.ASCII)
_INTEGER = re.compile(r"[-+]?\d{1,19}", re.ASCII)
MAX_TOKEN = 64
# An integer size or count above 2**63 is beyond every counter the tools keep.
MAX_INT = 2**63 - 1

# Bounds on canonical SI values (units.py): far above any machine that exists, so only a
# corrupted value fails them. 1e8 s is three years; 1e17 B/s is 100 PB/s; 1e20 flop/s is
# 100 Eflop/s; 1e16 op/s, ten thousand times the largest message rate or IOPS published.
_UNIT_MAX = {"s": 1e8, "B/s": 1e17, "flop/s": 1e20, "op/s": 1e16, "B": float(MAX_INT)}
_ANY_MAX = 1e21  # any other number a parser keeps (params, stats of other units)
# Parameters that a tool may print as -1 for "none" (nccl-tests' root of a rootless op).
_MAY_BE_NEGATIVE = frozenset({"root"})
# Parameters that count something (bytes, iterations, ranks): a whole number or nothing.
_WHOLE = frozenset({"size", "iterations", "ranks", "block_size", "transfer_size", "n"})


def _where(source: str, line: int | None) -> dict[str, Any]:
    return {"source": source, "line": line}


def parse_number(
    token: str, *, source: str, line: int | None, what: str = "number", minimum: float = -math.inf
) -> float:
    """A finite number as printf prints it, ≥ ``minimum``; anything else is a ParseError."""
    t = token.strip()
    if len(t) > MAX_TOKEN or not _NUMBER.fullmatch(t):
        shown = t if len(t) <= 40 else t[:40] + "..."
        wanted = "a number" if what == "number" else f"a number ({what})"
        raise ParseError(f"expected {wanted}, found {shown!r}", **_where(source, line))
    value = float(t)
    if not math.isfinite(value) or abs(value) > _ANY_MAX:
        raise ParseError(f"{what} {t!r} is out of any possible range", **_where(source, line))
    if value < minimum:
        raise ParseError(f"{what} {t!r} is below {minimum:g}", **_where(source, line))
    return value


def parse_time(token: str, *, source: str, line: int | None, what: str = "time") -> float:
    """A duration or latency: finite and > 0 (a tool never measures a time of zero)."""
    value = parse_number(token, source=source, line=line, what=what)
    if not value > 0:
        raise ParseError(f"{what} {token.strip()!r} is not > 0", **_where(source, line))
    return value


def parse_rate(token: str, *, source: str, line: int | None, what: str = "rate") -> float:
    """A bandwidth, message rate, FLOP rate or percentage: finite and ≥ 0."""
    return parse_number(token, source=source, line=line, what=what, minimum=0.0)


def parse_int(
    token: str, *, source: str, line: int | None, what: str = "count", minimum: int = 0
) -> int:
    """An integer size or count as printf's %d prints it (no exponent, no fraction), ≥ minimum.
    A tool that prints a size as ``8.00`` or ``1e+06`` is read with ``to_int`` instead."""
    t = token.strip()
    if not _INTEGER.fullmatch(t):
        shown = t if len(t) <= 40 else t[:40] + "..."
        raise ParseError(
            f"expected a whole number ({what}), found {shown!r}", **_where(source, line)
        )
    value = int(t)
    if value < minimum or value > MAX_INT:
        raise ParseError(f"{what} {t} is out of range (≥ {minimum})", **_where(source, line))
    return value


def to_int(
    value: float, *, source: str, line: int | None, what: str = "size", minimum: int = 0
) -> int:
    """A number already read (a size column printed as a float) that must be a whole count."""
    if not math.isfinite(value) or not float(value).is_integer():
        raise ParseError(f"{what} {value!r} is not a whole number", **_where(source, line))
    if value < minimum or value > MAX_INT:
        raise ParseError(f"{what} {value:g} is out of range (≥ {minimum})", **_where(source, line))
    return int(value)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def load_json(text: str, *, source: str) -> Any:
    """JSON as a tool wrote it; NaN/Infinity (which json.loads accepts) and numerals too long
    for int() are parse errors naming the line, like any other malformed JSON."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        raise ParseError(f"malformed JSON: {exc.msg}", source=source, line=exc.lineno) from None
    except (ValueError, RecursionError) as exc:
        raise ParseError(f"malformed JSON: {str(exc)[:120]}", source=source) from None


def json_number(
    value: Any, *, source: str, what: str, minimum: float = -math.inf, positive: bool = False
) -> float:
    """A number from a JSON document: int or float (not bool, not a string), finite, in range."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ParseError(f"{what} is {value!r}, not a number", source=source)
    if isinstance(value, int) and abs(value) > MAX_INT:
        raise ParseError(f"{what} {value} is out of range", source=source)
    out = float(value)
    if not math.isfinite(out) or abs(out) > _ANY_MAX or out < minimum or (positive and out <= 0):
        bound = "> 0" if positive else f"≥ {minimum:g}"
        raise ParseError(f"{what} {out!r} is out of range ({bound})", source=source)
    return out


def json_int(value: Any, *, source: str, what: str, minimum: int = 0) -> int:
    """A whole count from a JSON document (fio writes some as floats such as 4096.0)."""
    number = json_number(value, source=source, what=what, minimum=minimum)
    return to_int(number, source=source, line=None, what=what, minimum=minimum)


def sweep_rows(
    rows: list[tuple[int, int, Any]], *, table: str, source: str
) -> tuple[list[tuple[int, int, Any]], list[str]]:
    """Check a table swept over message sizes: ``rows`` are (line, size, values) in file order.

    A row printed twice (same size, same values) is kept once with a warning. A size that
    repeats with other values, or goes down, means two outputs were mixed: the table cannot
    be trusted and that is a ParseError. A step that skips sizes of a regular sweep (×2 between
    every other pair, ×8 here) is a gap: the rows lost in the middle are named in a warning.
    """
    kept: list[tuple[int, int, Any]] = []
    warnings: list[str] = []
    for row in rows:
        line, size, values = row
        if kept and size <= kept[-1][1]:
            prev_line, prev_size, prev_values = kept[-1]
            if size == prev_size and values == prev_values:
                warnings.append(
                    f"{source}:{line}: the {table} row for size {size} repeats line "
                    f"{prev_line}; kept once"
                )
                continue
            raise ParseError(
                f"size {size} after size {prev_size} (line {prev_line}) in the {table} table: "
                "rows out of order or repeated with other values (two outputs mixed?)",
                source=source,
                line=line,
            )
        kept.append(row)
    warnings.extend(_gaps(kept, table=table, source=source))
    return kept, warnings


def _gaps(rows: list[tuple[int, int, Any]], *, table: str, source: str) -> list[str]:
    steps = [(a, b) for a, b in itertools.pairwise(rows) if a[1] > 0]
    ratios = [b[1] / a[1] for a, b in steps]
    whole = [r for r in ratios if r.is_integer() and r >= 2]
    if len(ratios) < 3 or not whole:
        return []
    ratio = max(set(whole), key=whole.count)
    if whole.count(ratio) * 2 < len(ratios):
        return []  # not a regular geometric sweep (a user's list of sizes): no gap to tell
    out = []
    for (a_line, a_size, _), (b_line, b_size, _) in steps:
        k = math.log(b_size / a_size, ratio)
        if round(k) >= 2 and math.isclose(k, round(k)):
            lost = round(k) - 1
            out.append(
                f"{source}:{b_line}: {lost} row(s) of the {table} table missing between size "
                f"{a_size} (line {a_line}) and size {b_size}: lost in the middle of the output"
            )
    return out


def _possible(value: Any, unit: str | None, positive: bool) -> bool:
    """The common case, decided without formatting anything: not a number, or a finite one
    within bounds (the backstop checks every number of every parse)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return True
    return (
        math.isfinite(value)
        and abs(value) <= _UNIT_MAX.get(unit or "", _ANY_MAX)
        and (value > 0 if positive else value >= 0)
    )


def _check_number(value: Any, *, where: str, unit: str | None, positive: bool) -> str | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value):
        return f"{where} is {value!r}"
    limit = _UNIT_MAX.get(unit or "", _ANY_MAX)
    if abs(value) > limit:
        return f"{where} {value:g} {unit or ''} is beyond any machine".rstrip()
    if positive and value <= 0:
        return f"{where} {value:g} is not > 0"
    if value < 0:
        return f"{where} {value:g} is negative"
    return None


# Percentiles read off a histogram can lie outside the measured min and max: fio reports each at
# the middle of its bin (64 bins per power of two, stat.c plat_idx_to_val), up to 1/128 of the
# value away. Means and medians are computed from the values themselves: only float rounding.
_BIN_SLACK = 1 / 64
_FLOAT_SLACK = 1e-9


def stats_problems(stats: Any, where: str) -> list[str]:
    """What no set of measurements can give: min above max, a mean, median or percentile
    outside [min, max], percentiles out of order, a standard deviation wider than the range."""
    lo, hi = stats.min, stats.max
    out: list[str] = []
    if lo is not None and hi is not None and lo > hi:
        out.append(f"{where} min {lo:g} is above max {hi:g}")
        return out

    def below(v: float, bound: float, slack: float) -> bool:
        return v < bound - slack * abs(bound)

    def above(v: float, bound: float, slack: float) -> bool:
        return v > bound + slack * abs(bound)

    for key, slack in (("mean", _FLOAT_SLACK), ("median", _FLOAT_SLACK), ("p99", _BIN_SLACK),
                       ("p999", _BIN_SLACK)):  # fmt: skip
        v = getattr(stats, key)
        if v is None:
            continue
        if lo is not None and below(v, lo, slack):
            out.append(f"{where} {key} {v:g} is below min {lo:g}")
        elif hi is not None and above(v, hi, slack):
            out.append(f"{where} {key} {v:g} is above max {hi:g}")
    ordered = [(k, getattr(stats, k)) for k in ("median", "p99", "p999")]
    ordered = [(k, v) for k, v in ordered if v is not None]
    for (k1, v1), (k2, v2) in itertools.pairwise(ordered):
        if above(v1, v2, _BIN_SLACK):
            out.append(f"{where} {k1} {v1:g} is above {k2} {v2:g}")
    sd = stats.stddev
    known = sd is not None and lo is not None and hi is not None
    if known and sd > (hi - lo) + _FLOAT_SLACK * abs(hi):  # a sample's stddev is at most its range
        out.append(f"{where} stddev {sd:g} is wider than the range {lo:g}..{hi:g}")
    return out


def impossible_values(samples: Iterable[Any]) -> list[str]:
    """What is impossible in these samples: not finite, negative, a time ≤ 0, beyond any
    machine, statistics that no set of measurements gives (``stats_problems``). Empty when
    every value could have been measured."""
    problems = []
    for s in samples:
        name = f"{s.metric} ({s.probe})"
        time = s.unit == "s"
        found = [_checked(s.value, name, "value", s.unit, time)]
        if s.stats is not None:
            for key, v in s.stats.to_dict().items():
                if key == "n":
                    found.append(_checked(v, name, "n", None, False))
                else:
                    found.append(_checked(v, name, key, s.unit, time and key != "stddev"))
            if not any(found):  # the numbers are possible one by one: are they together?
                problems.extend(stats_problems(s.stats, f"{name} stats:"))
        for key, v in s.params.items():
            if key in _MAY_BE_NEGATIVE and isinstance(v, int) and v >= -1:
                continue
            if key in _WHOLE and isinstance(v, float) and math.isfinite(v) and not v.is_integer():
                found.append(f"{name} {key} {v!r} is not a whole number")
                continue
            found.append(_checked(v, name, key, None, False))
        problems.extend(p for p in found if p)
    return problems


def _checked(value: Any, name: str, key: str, unit: str | None, positive: bool) -> str | None:
    if _possible(value, unit, positive):
        return None
    return _check_number(value, where=f"{name} {key}", unit=unit, positive=positive)


def check_result(result: Any, *, source: str) -> Any:
    """The backstop every parse() passes through: an impossible value is a ParseError."""
    problems = impossible_values(result.samples)
    if problems:
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise ParseError(f"impossible value: {problems[0]}{more}", source=source)
    return result


def checked(parse: Callable[..., Any]) -> Callable[..., Any]:
    """Decorate a parser's ``parse(text, source=...)`` with ``check_result``."""

    def wrapper(text: str, source: str = "<text>", *args: Any, **kwargs: Any) -> Any:
        return check_result(parse(text, source, *args, **kwargs), source=source)

    wrapper.__doc__ = parse.__doc__
    wrapper.__name__ = parse.__name__
    wrapper.__wrapped__ = parse  # type: ignore[attr-defined]
    return wrapper
