"""Finding and reading reference sets: the built-in ones shipped with assay, and the user's.

User sets live in ``$ASSAY_REFERENCES`` when set, else in a ``references/`` directory beside the
user's config file (``~/.config/assay/references/``, following ``ASSAY_CONFIG``). A user set
with a built-in's name replaces it. Every problem in a file is an ``AssayError`` naming the
file, the line and the field.
"""

from __future__ import annotations

import bisect
import math
import os
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from assay.config import config_path
from assay.errors import AssayError, NotFoundError
from assay.inputfile import MAX_TEXT_BYTES, exists, load_toml, read_bounded
from assay.model import Stats, current_params
from assay.references.model import ReferenceSet, RefPoint, Tolerance
from assay.references.schema import STAT_COLUMNS, PointSpec, SetSpec, TableSpec, row_params
from assay.units import from_display, metric_info, to_display

BUILTIN_DIR = Path(__file__).parent / "sets"


class ReferenceError(AssayError):
    """A reference file that cannot be read; the message names the file, line and field."""


def user_dir() -> Path:
    env = os.environ.get("ASSAY_REFERENCES")
    if env:
        return Path(env).expanduser()
    return config_path().parent / "references"


def available() -> dict[str, tuple[Path, bool]]:
    """name -> (file, built-in?) for every set; a user's file overrides a built-in of that name."""
    found: dict[str, tuple[Path, bool]] = {}
    for directory, builtin in ((BUILTIN_DIR, True), (user_dir(), False)):
        if directory.is_dir():
            for path in sorted(directory.glob("*.toml")):
                found[path.stem] = (path, builtin)
    return found


def load(name: str) -> ReferenceSet:
    """The reference set called ``name`` (a file stem), or a file path."""
    path = Path(name)
    if path.suffix == ".toml" and exists(path):  # no ENAMETOOLONG from a long name
        return load_file(path, builtin=False)
    sets = available()
    if name not in sets:
        raise NotFoundError(
            f"no reference set {name!r}",
            hint=f"known: {', '.join(sorted(sets)) or 'none'}; add yours in {user_dir()}",
        )
    return load_file(*sets[name])


# -- reading one file ------------------------------------------------------------------------


def load_file(path: Path, builtin: bool = False) -> ReferenceSet:
    try:
        text = read_bounded(path, MAX_TEXT_BYTES, "reference set").decode()  # TOML is UTF-8
    except OSError as exc:
        raise ReferenceError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ReferenceError(f"{path}: not UTF-8 (byte {exc.start}): TOML must be") from None
    try:
        data = load_toml(text)
    except tomllib.TOMLDecodeError as exc:  # its message says "(at line L, column C)"
        raise ReferenceError(f"{path}: not valid TOML: {exc}") from None
    try:
        spec = SetSpec.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        field = ".".join(str(p) for p in loc) or "(file)"
        line = locate(text, loc)
        where = f"{path}:{line}" if line else str(path)
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        msg = err["msg"].removeprefix("Value error, ")
        raise ReferenceError(f"{where}: field {field}: {msg}{more}") from None
    if spec.name and spec.name != path.stem:
        raise ReferenceError(
            f"{path}:{locate(text, ('name',))}: field name: {spec.name!r} differs from the file "
            f"name; call the file {spec.name}.toml"
        )
    return _build(spec, path, text, builtin)


def _tol(spec: Any) -> Tolerance | None:
    return Tolerance(spec.lower, spec.upper) if spec is not None else None


def _build(spec: SetSpec, path: Path, text: str, builtin: bool) -> ReferenceSet:
    where = Locator(text)
    tolerances = {k: Tolerance(v.lower, v.upper) for k, v in spec.tolerance.items()}
    default = tolerances.pop("default", Tolerance())
    ref = ReferenceSet(
        name=path.stem,
        title=spec.title,
        path=path,
        builtin=builtin,
        publisher=spec.publisher,
        url=spec.url,
        date=spec.date,
        system=spec.system,
        source=spec.source,
        notes=list(spec.notes),
        tolerance=default,
        tolerances=tolerances,
        summary=[(s.workload, s.published) for s in spec.summary],
        node=spec.node.model_dump(exclude_defaults=True) if spec.node else {},
    )
    for i, p in enumerate(spec.point):
        line = where(("point", i))
        ref.points.append(_point(p, line, f"{path}:{line}: field point.{i}.stats"))
    for i, t in enumerate(spec.table):
        ref.points.extend(_table_points(t, path, where, i))
    for point in ref.points:
        _check_finite(point, path)
    return ref


def _check_finite(point: RefPoint, path: Path) -> None:
    """A figure finite as written can overflow in canonical units (1e308 GB/s is inf B/s)."""
    stats = point.stats.__dict__.values() if point.stats is not None else ()
    for v in (point.value, point.low, point.high, *stats):
        if isinstance(v, float) and not math.isfinite(v):
            raise ReferenceError(
                f"{path}:{point.line}: {point.metric} {point.published}: not a figure any "
                f"machine measures (it is {v} {metric_info(point.metric).unit})"
            )


def _point(p: PointSpec, line: int | None, where: str) -> RefPoint:
    low = from_display(p.low, p.unit) if p.low is not None else None
    high = from_display(p.high, p.unit) if p.high is not None else None
    if p.value is not None:
        value = from_display(p.value, p.unit)
    else:
        value = (low + high) / 2 if low is not None and high is not None else (low or high)
    stats, dropped = _stats(p.stats or {}, p.unit, where)
    shown = p.published or (
        f"{'~' if p.approx else ''}{_num(p.value)} {p.unit}"
        if p.value is not None
        else f"{_num(p.low)}-{_num(p.high)} {p.unit}"
        if p.low is not None and p.high is not None
        else f"over {_num(p.low)} {p.unit}"
        if p.low is not None
        else f"under {_num(p.high)} {p.unit}"
    )
    return RefPoint(
        metric=p.metric, params=current_params(p.metric, dict(p.params)), value=value,
        unit=p.unit, published=shown,
        probe=p.probe, system=p.system,
        approx=p.approx, low=low, high=high, stat=p.stat, pick=p.pick, stats=stats,
        label=p.label, section=p.section, method=p.method, note=_join(p.note, dropped),
        tolerance=_tol(p.tolerance), line=line,
    )  # fmt: skip


def _table_points(t: TableSpec, path: Path, where: Locator, index: int) -> list[RefPoint]:
    out = []
    for r, row in enumerate(t.rows):
        line = where(("table", index, "rows", r))
        if len(row) != len(t.columns):
            raise ReferenceError(
                f"{path}:{line}: field table.{index}.rows.{r}: {len(row)} values for "
                f"{len(t.columns)} columns {t.columns}"
            )
        cells = dict(zip(t.columns, row, strict=True))
        shown = cells[t.value]
        if not shown > 0:
            raise ReferenceError(
                f"{path}:{line}: field table.{index}.rows.{r}: {t.value} must be positive, "
                f"got {shown}"
            )
        value = from_display(shown, t.unit)
        for col, cell in cells.items():
            if col.startswith("also:"):
                _check_also(value, cell, col[5:], f"{path}:{line}: field table.{index}.rows.{r}")
        raw = {c: v for c, v in cells.items() if c in STAT_COLUMNS and c != t.value}
        if t.value in STAT_COLUMNS:
            raw[t.value] = shown
        stats, dropped = _stats(raw, t.unit, f"{path}:{line}: field table.{index}.rows.{r}")
        out.append(
            RefPoint(
                metric=t.metric,
                params=current_params(t.metric, {**t.params, **row_params(t, row)}),
                value=value,
                unit=t.unit,
                published=f"{_num(shown)} {t.unit}",
                stat=t.stat,
                pick=t.pick,
                probe=t.probe,
                system=t.system,
                stats=stats,
                label=t.label,
                section=t.section,
                method=t.method,
                note=_join(t.note, dropped),
                tolerance=_tol(t.tolerance),
                line=line,
            )
        )
    return out


def _check_also(value: float, printed: float, unit: str, where: str) -> None:
    """A page printing one figure in two units (OSU bandwidth in MB/s and Gb/s): they must agree
    to the precision printed, else the transcription (or the page) is wrong and we say so."""
    expected = to_display(value, unit)
    # half a unit in the last printed digit, at least 0.005 (pages print two decimals)
    decimals = max(len(repr(printed).split(".")[1]) if "." in repr(printed) else 0, 2)
    if abs(expected - printed) > 0.5 * 10**-decimals + 1e-9 and not math.isclose(
        expected, printed, rel_tol=5e-3
    ):
        raise ReferenceError(f"{where}: {printed} {unit} disagrees with {expected:.4g} {unit}")


def _stats(raw: dict[str, float], unit: str, where: str) -> tuple[Stats | None, str]:
    """Published statistics in canonical units. A statistic that cannot be true (a mean below the
    minimum, as the HC page prints from 256 bytes on) is dropped and the drop is noted: an
    impossible figure is never used as if it were fine. A count or a spread that no set of
    measurements has (``n = 0``, ``n = 2.5``, min above max, a spread over one measurement)
    is refused: ``where`` names the file and the entry."""
    if not raw:
        return None, ""
    n = raw.get("n", 1)
    if not float(n).is_integer() or n < 1:
        raise ReferenceError(f"{where}: stats n = {_num(n)}: a statistic is over a whole number "
                             "of measurements, at least one")  # fmt: skip
    conv = {k: from_display(v, unit) for k, v in raw.items() if k != "n"}
    _check_spread(conv, int(n), raw, unit, where)
    lo, hi = conv.get("min"), conv.get("max")
    dropped = []
    for key in ("mean", "median", "p99"):
        v = conv.get(key)
        if v is None:
            continue
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            dropped.append(
                f"published {key} {_num(raw[key])} {unit} lies outside min..max "
                f"{_num(raw.get('min'))}..{_num(raw.get('max'))} {unit}: not used"
            )
            del conv[key]
    return Stats(n=int(n), **conv), "; ".join(dropped)


def _check_spread(
    conv: dict[str, float], n: int, raw: dict[str, float], unit: str, where: str
) -> None:
    """A spread no ``n`` measurements can have: min above max, a negative stddev, any spread
    over one measurement, or a stddev above the largest ``n`` values within min..max can
    have, (max - min) / 2 * sqrt(n / (n - 1)) (1 % over it allowed: printed figures are
    rounded)."""
    lo, hi, sd = conv.get("min"), conv.get("max"), conv.get("stddev")
    why = ""
    if lo is not None and hi is not None and lo > hi:
        why = f"min {_num(raw['min'])} is above max {_num(raw['max'])} {unit}"
    elif sd is not None and sd < 0:
        why = f"stddev {_num(raw['stddev'])} {unit} is negative"
    elif n == 1 and ((lo is not None and hi is not None and lo != hi) or (sd or 0) > 0):
        why = "one measurement has no spread (min = max, stddev 0)"
    elif n > 1 and sd is not None and lo is not None and hi is not None:
        most = (hi - lo) / 2 * math.sqrt(n / (n - 1))
        if sd > most * 1.01 + abs(hi) * 1e-3:
            why = (f"stddev {_num(raw['stddev'])} {unit} is more than {n} values within "
                   f"{_num(raw['min'])}..{_num(raw['max'])} {unit} can have")  # fmt: skip
    if why:
        raise ReferenceError(f"{where}: stats n = {n}: {why}")


def _num(v: float | None) -> str:
    if v is None:
        return "?"
    text = repr(float(v))  # the shortest text that reads back as v: 11290.92, not 11290.9
    return text.removesuffix(".0")


def _join(*parts: str) -> str:
    return "; ".join(p for p in parts if p)


# -- where a field is in the file -------------------------------------------------------------

_HEADER = re.compile(r"^\s*\[\[?\s*([A-Za-z0-9_.\"-]+)\s*\]\]?\s*(#.*)?$")


class Locator:
    """Lines of validation errors' locations (``("point", 3, "unit")``) in one file's text,
    found by reading the file as TOML is written: the N-th ``[[point]]`` header, then the key in
    its block; a list index inside a multi-line array counts its lines. The headers are found
    once: a line asked for each of a set's points read the whole file each time (a 1.15 MB set
    took 155 s, where a HealthCheckProgram has 60)."""

    def __init__(self, text: str) -> None:
        self.lines = text.splitlines()
        self.starts: list[int] = []  # the line of every header, in order
        self.arrays: dict[str, list[int]] = {}  # [[name]] -> its headers' lines
        self.tables: dict[str, int] = {}  # [name] -> its header's line (the first)
        for i, line in enumerate(self.lines):
            header = _header(line)
            if header is None:
                continue
            self.starts.append(i)
            name, array = header
            if array:
                self.arrays.setdefault(name, []).append(i)
            else:
                self.tables.setdefault(name, i)
        self._elements: dict[int, list[int]] = {}

    def _end(self, start: int) -> int:
        """The line of the next header after ``start`` (the end of its block)."""
        k = bisect.bisect_right(self.starts, start)
        return self.starts[k] if k < len(self.starts) else len(self.lines)

    def __call__(self, loc: tuple[Any, ...]) -> int | None:
        """The 1-based line of ``loc``; None when it cannot be told."""
        start, end = 0, len(self.lines)
        rest = list(loc)
        if rest and isinstance(rest[0], str) and len(rest) > 1 and isinstance(rest[1], int):
            headers = self.arrays.get(rest[0], [])
            if rest[1] >= len(headers):
                return None
            start = headers[rest[1]]
            end, rest = self._end(start), rest[2:]
            if not rest:
                return start + 1
        elif rest and isinstance(rest[0], str):
            header = self.tables.get(rest[0])
            if header is not None:  # a [table] such as [tolerance]
                start, end, rest = header, self._end(header), rest[1:]
                if not rest:
                    return start + 1
            else:
                end = self.starts[0] if self.starts else len(self.lines)
        key = str(rest[0])
        pattern = re.compile(rf"^\s*\"?{re.escape(key)}\"?\s*=")
        found = next((i for i in range(start, end) if pattern.match(self.lines[i])), None)
        if found is None:
            return start + 1 if start or loc else None
        if len(rest) > 1 and isinstance(rest[1], int):  # an element of a multi-line array
            elements = self._array_elements(found, end)
            if rest[1] < len(elements):
                return elements[rest[1]] + 1
        return found + 1

    def _array_elements(self, found: int, end: int) -> list[int]:
        if found not in self._elements:
            lines = self.lines
            self._elements[found] = [
                i for i in range(found + 1, end) if lines[i].lstrip().startswith("[")
            ]
        return self._elements[found]


def locate(text: str, loc: tuple[Any, ...]) -> int | None:
    """The line of one location (``Locator`` for many in one file)."""
    return Locator(text)(loc)


def _header(line: str) -> tuple[str, bool] | None:
    m = _HEADER.match(line)
    if not m or "=" in line.split("#", 1)[0]:
        return None
    return m.group(1).strip('"'), line.lstrip().startswith("[[")
