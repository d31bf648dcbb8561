"""A seeded mutator over the real tool outputs in tests/fixtures, and the invariant every
parser must keep on whatever it is given: return only possible values, or raise ParseError.

Used by tests/robustness/test_fuzz_parsers.py (a few hundred cases per parser in ``make
test``) and by its soak test (``make soak``: 100,000 cases per parser). Each case is
reproducible from its (seed, case number): ``python tests/mutate.py FORMAT SEED CASE``
prints the mutated text.
"""

from __future__ import annotations

import math
import random
import re
import sys
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"
# fixture directory of each --format (the dash of gpu-burn is not a directory name)
FIXTURE_DIRS = {"gpu-burn": "gpu_burn"}
_NOT_OUTPUT = {".md", ".py"}

_NUMBER = re.compile(rb"\d+(?:\.\d+)?(?:[eE][-+]?\d+)?")
# What a corrupted number can become: not a number, not finite, absurd, negative, zero,
# a Python-only spelling, a numeral past int()'s 4,300-digit limit.
BAD_NUMBERS = [
    b"nan", b"NaN", b"-nan", b"inf", b"-inf", b"Infinity", b"1e300", b"-1e300", b"1e999",
    b"-675.03", b"-1", b"0", b"0.00", b"8_516.13", b"1e-300", b"9" * 5000, b"0x10", b"abc",
    b"\xd9\xa3", b"1,024", b"",
]  # fmt: skip


def fixture_files(fmt: str) -> list[Path]:
    folder = FIXTURES / FIXTURE_DIRS.get(fmt, fmt)
    return sorted(p for p in folder.iterdir() if p.is_file() and p.suffix not in _NOT_OUTPUT)


def _truncate(data: bytes, rng: random.Random) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def _delete_line(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    del lines[rng.randrange(len(lines))]
    return b"\n".join(lines)


def _duplicate_line(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    lines[i:i] = [lines[i]] * rng.choice((1, 1, 2))
    return b"\n".join(lines)


def _flip_bytes(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if b:
            b[rng.randrange(len(b))] = rng.randrange(256)
    return bytes(b)


def _bad_number(data: bytes, rng: random.Random) -> bytes:
    found = list(_NUMBER.finditer(data))
    if not found:
        return data
    m = rng.choice(found)
    return data[: m.start()] + rng.choice(BAD_NUMBERS) + data[m.end() :]


def _non_utf8(data: bytes, rng: random.Random) -> bytes:
    i = rng.randrange(len(data) + 1)
    return (
        data[:i] + rng.choice((b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x00", b"\xfe\xff")) + data[i:]
    )


def _crlf(data: bytes, rng: random.Random) -> bytes:
    return data.replace(b"\n", rng.choice((b"\r\n", b"\r")))


def _long_line(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    i = rng.randrange(len(lines))
    # a filler, or a character of the line itself: a pattern that backtracks over its own
    # separators ("=" in HPL's residual line, "." in its dots) grows quadratically with them
    own = [bytes([c]) for c in set(lines[i]) if 32 < c < 127]
    fill = rng.choice((b"x", b" 1", b"9", b"-", *(own[:1] if not own else [rng.choice(own)])))
    lines[i] = lines[i] + fill * rng.choice((5_000, 100_000))
    return b"\n".join(lines)


_TOKEN = re.compile(rb'-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|"[^"\\\n]{0,80}"')
_RETYPED = [b'"%s"', b"[%s]", b"{}", b"true", b"null", b"[]", b'{"x": %s}', b"[[%s]]"]


def _type_change(data: bytes, rng: random.Random) -> bytes:
    """A number or a string of a JSON document (or a table) becomes another type: quoted,
    a list, an object, true, null (an edited or corrupted export)."""
    # values only: a key retyped is a syntax error, which truncation covers already
    found = [m for m in _TOKEN.finditer(data) if data[m.end() : m.end() + 4].lstrip()[:1] != b":"]
    if not found:
        return data
    m = rng.choice(found)
    token = m.group()
    inner = token.strip(b'"') if token.startswith(b'"') else token
    new = rng.choice(_RETYPED)
    if token.startswith(b'"') and new == b'"%s"':
        new = b"%s" if inner.replace(b".", b"").isdigit() else b"7"  # a string becomes a number
    new = new.replace(b"%s", inner if b"%s" in new else b"")
    return data[: m.start()] + new + data[m.end() :]


_STAT_KEY = re.compile(rb'"(?:min|max|mean|median|p99|p999|iops_min|iops_max|iops_mean|bw_min|'
                       rb'bw_max|bw_mean)"\s*:\s*(-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)')  # fmt: skip


def _impossible_stats(data: bytes, rng: random.Random) -> bytes:
    """Statistics that no measurement gives: a JSON min/max/mean/percentile moved far out of
    the others' range, or two numbers of one table row swapped (a min and max column)."""
    keyed = list(_STAT_KEY.finditer(data))
    if keyed and rng.random() < 0.5:
        m = rng.choice(keyed)
        new = rng.choice((b"999999999", b"0.000001", b"1e12"))
        return data[: m.start(1)] + new + data[m.end(1) :]
    lines = data.split(b"\n")
    rows = [i for i, ln in enumerate(lines) if len(_NUMBER.findall(ln)) >= 3]
    if not rows:
        return data
    i = rng.choice(rows)
    spans = [m.span() for m in _NUMBER.finditer(lines[i])]
    a, b = sorted(rng.sample(range(len(spans)), 2))
    (s1, e1), (s2, e2) = spans[a], spans[b]
    ln = lines[i]
    lines[i] = ln[:s1] + ln[s2:e2] + ln[e1:s2] + ln[s1:e1] + ln[e2:]
    return b"\n".join(lines)


def _swap_lines(data: bytes, rng: random.Random) -> bytes:
    lines = data.split(b"\n")
    i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
    lines[i], lines[j] = lines[j], lines[i]
    return b"\n".join(lines)


MUTATIONS: dict[str, Callable[[bytes, random.Random], bytes]] = {
    "truncate": _truncate,
    "delete_line": _delete_line,
    "duplicate_line": _duplicate_line,
    "flip_bytes": _flip_bytes,
    "bad_number": _bad_number,
    "non_utf8": _non_utf8,
    "crlf": _crlf,
    "long_line": _long_line,
    "swap_lines": _swap_lines,
    "type_change": _type_change,
    "impossible_stats": _impossible_stats,
}
# number corruption is what the parsers' values depend on: drawn more often
_WEIGHTS = {name: 3 if name == "bad_number" else 1 for name in MUTATIONS}


def mutated(fmt: str, seed: int, case: int) -> tuple[str, str, str]:
    """(text, fixture name, mutations applied) of case ``case`` of ``seed``: 1 to 3
    mutations of one real fixture, decoded as ``assay import`` decodes a file."""
    rng = random.Random(f"{fmt}:{seed}:{case}")
    files = fixture_files(fmt)
    path = rng.choice(files)
    data = path.read_bytes()
    names = rng.choices(list(_WEIGHTS), weights=list(_WEIGHTS.values()), k=rng.choice((1, 1, 2, 3)))
    for name in names:
        data = MUTATIONS[name](data, rng)
    return data.decode("utf-8", errors="replace"), path.name, "+".join(names)


# percentiles read off a histogram (fio: each at the middle of its bin) may pass min or max by
# half a bin, 1/128 of the value; a mean or median only by float rounding
PERCENTILE_SLACK, MEAN_SLACK = 1 / 64, 1e-9


def impossible_stats(stats) -> list[str]:
    """Statistics no set of measurements has (written apart from the parsers' own check)."""
    d = stats.to_dict()
    lo, hi = d.get("min"), d.get("max")
    out = []
    if lo is not None and hi is not None and lo > hi:
        out.append(f"min {lo!r} > max {hi!r}")
    for key in ("mean", "median", "p99", "p999"):
        v = d.get(key)
        slack = PERCENTILE_SLACK if key.startswith("p") else MEAN_SLACK
        if v is None:
            continue
        if lo is not None and v < lo * (1 - slack):
            out.append(f"{key} {v!r} < min {lo!r}")
        if hi is not None and v > hi * (1 + slack):
            out.append(f"{key} {v!r} > max {hi!r}")
    p99, p999 = d.get("p99"), d.get("p999")
    if p99 is not None and p999 is not None and p99 > p999 * (1 + PERCENTILE_SLACK):
        out.append(f"p99 {p99!r} > p999 {p999!r}")
    return out


def impossible(result) -> list[str]:
    """Values no tool measures, checked independently of the parsers' own checks."""
    out = []
    for s in result.samples:
        texts = [("probe", s.probe), ("metric", s.metric), ("unit", s.unit), ("better", s.better)]
        out += [f"{where} {v!r} is not a string" for where, v in texts if not isinstance(v, str)]
        numbers = [("value", s.value)]
        if s.stats is not None:
            numbers += [(f"stats.{k}", v) for k, v in s.stats.to_dict().items()]
        typed = [
            (w, v) for w, v in numbers if isinstance(v, (int, float)) and not isinstance(v, bool)
        ]
        out += [f"{s.metric} {w}={v!r} is not a number" for w, v in numbers if (w, v) not in typed]
        if s.stats is not None and len(typed) == len(numbers):
            out += [f"{s.metric} stats: {p}" for p in impossible_stats(s.stats)]
        out += [
            f"{s.metric} params.{k}={v!r} is not a flat value"
            for k, v in s.params.items()
            if isinstance(v, dict)
            or (isinstance(v, list) and any(isinstance(x, (list, dict)) for x in v))
        ]
        numbers = typed + [
            (f"params.{k}", v)
            for k, v in s.params.items()
            if isinstance(v, (int, float)) and not isinstance(v, bool)
        ]
        for where, v in numbers:
            if (
                not math.isfinite(v)
                or abs(v) > 1e21
                or (v < 0 and not (where == "params.root" and v == -1))
            ):
                out.append(f"{s.metric} {where}={v!r}")
            elif s.unit == "s" and where in ("value", "stats.min", "stats.mean") and v <= 0:
                out.append(f"{s.metric} {where}={v!r} (a time of zero)")
        for key in ("size", "iterations", "ranks", "block_size", "transfer_size", "n"):
            v = s.params.get(key)
            if isinstance(v, float) and not v.is_integer():
                out.append(f"{s.metric} params.{key}={v!r} is not whole")
    return out


# A parse of one mutated output (at most ~100,000 characters longer than a real one) takes
# milliseconds; seconds mean a quadratic pattern (HPL's residual line took 34 s at 64,000).
SLOW_S = 5.0


@dataclass
class Tally:
    fmt: str
    cases: int = 0
    parsed: int = 0
    refused: int = 0  # ParseError: the typed, expected refusal
    crashes: list[str] = field(default_factory=list)
    impossible: list[str] = field(default_factory=list)
    slow: list[str] = field(default_factory=list)  # cases over SLOW_S: a super-linear parser
    wall_s: float = 0.0

    def line(self) -> str:
        return (
            f"{self.fmt}: {self.cases} cases, {self.parsed} parsed, {self.refused} refused "
            f"(ParseError), {len(self.crashes)} crashes, {len(self.impossible)} impossible "
            f"values, {len(self.slow)} over {SLOW_S:g} s, {self.wall_s:.1f} s"
        )


def run(fmt: str, cases: int, seed: int = 0, start: int = 0) -> Tally:
    """Parse ``cases`` mutated fixtures of ``fmt``; crashes and impossible values are tallied
    with the (seed, case) that reproduces them."""
    from assay.errors import ParseError
    from assay.parsers import parse_text

    tally = Tally(fmt)
    began = time.perf_counter()
    for case in range(start, start + cases):
        text, name, how = mutated(fmt, seed, case)
        tally.cases += 1
        where = f"case {seed}:{case} ({name}, {how})"
        started = time.perf_counter()
        try:
            result = parse_text(text, fmt, source=name)
        except ParseError:
            tally.refused += 1
            continue
        except Exception as exc:  # a crash is what this harness looks for
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            tally.crashes.append(
                f"{where}: {type(exc).__name__}: {str(exc)[:100]} "
                f"at {Path(frame.filename).name}:{frame.lineno}"
            )
            continue
        finally:
            took = time.perf_counter() - started
            if took > SLOW_S:
                tally.slow.append(f"{where}: {took:.1f} s for {len(text)} characters")
        tally.parsed += 1
        bad = impossible(result)
        if bad:
            tally.impossible.append(f"{where}: {bad[0]}")
    tally.wall_s = time.perf_counter() - began
    return tally


if __name__ == "__main__":
    fmt_arg, seed_arg, case_arg = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    sys.stdout.write(mutated(fmt_arg, seed_arg, case_arg)[0])
