"""Vdbench parameter files (raw I/O: ``hd=``, ``sd=``, ``wd=``, ``rd=``) and their fio equivalent.

``load_vdbench(path)`` reads a parameter file and its ``include=`` files into data classes
(``HostDef``, ``StorageDef``, ``WorkloadDef``, ``RunDef``) that keep the file and line of each
definition. ``translate(config)`` turns every run definition, expanded over its for-loops,
into fio jobs doing the same I/O; what has no fio equivalent is returned as ``Untranslated``
items, never silently dropped.

Sources. "Guide" is the Vdbench 5.04.07 Users Guide (Henk Vandenbergh, Oracle, May 2018), read
in its bilingual copy github.com/sine-io/VdbenchUsersGuide-cn (sections named below). Where the
guide is silent the behaviour is the one of Vdbench's own parameter scanner, Vdbench 5.04.06
source as published in github.com/itfanr/vdbench: ``Vdb/Vdb_scan.java`` (reading, comments,
continuation, values), ``Vdb/HostParms.java``, ``Vdb/SD_entry.java``, ``Vdb/WD_entry.java``,
``Vdb/RD_entry.java`` and ``Vdb/For_loop.java`` (keywords, defaults, for-loops).

Syntax, as Vdb_scan.java reads it:

* a line whose first non-blank character is ``*``, ``#`` or ``/`` is a comment, as is an empty
  line; a line starting with ``eof`` ends the file;
* everything after the first blank outside double quotes is a comment (``specialize()``);
* a line ending in ``,`` continues on the next non-comment line;
* ``include=FILE`` at the start of a line inserts FILE there (guide 1.7.3); a name without a
  directory is taken relative to the including file, else relative to it or, failing that, to
  the current directory (``readIncludeFile()``). Vdbench refuses includes inside included
  files; assay allows them and refuses only a cycle;
* parameters are ``keyword=value`` separated by commas; a value may be a parenthesised list
  ``(a,b,c)``; double quotes protect blanks, commas, ``=`` and ``-`` (``sd=("sd*")``);
* in a list, ``a-b`` is a range: ``(1-64,d)`` doubles, ``(10-100,10)`` steps by 10,
  ``(sd1-sd4)`` counts names (``Var_parms.java``); host names are never ranges;
* numbers take ``k``, ``m``, ``g``, ``t`` (times 1024, 1024**2 ...; ``kb`` etc. too) and ``h``
  (3600); for ``elapsed``, ``interval``, ``warmup`` and ``pause`` an ``m`` means minutes;
* keywords are case-insensitive, at least two characters, and may be abbreviated: Vdbench
  tests ``"seekpct".startsWith(keyword)`` in a fixed order per definition type and takes the
  first match, so ``xf=4k`` is ``xfersize`` and ``openflag=`` is ``openflags``. assay keeps the
  same order, so an ambiguous prefix means what it means to Vdbench.
* definitions come in the order general, HD, SD, WD, RD (guide 1.7); a parameter belongs to
  the last definition started, whatever line it is on; ``xx=default`` sets values for the
  definitions of that type that come after it.

An unknown keyword is a ``ParseError`` naming the file, the line and the keyword.
"""

from __future__ import annotations

import itertools
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal

from assay.errors import ParseError
from assay.storage.fiojob import RW, FioJob, job_file

# ---------------------------------------------------------------------------- data


@dataclass(frozen=True)
class Where:
    """A place in a parameter file: the file as read and a 1-based line number."""

    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Item:
    """One element of a parameter's value. Only unquoted elements of a parenthesised list
    can be ranges (Vdb_scan.parms_split splits at '-' only after a '(')."""

    text: str
    quoted: bool = False
    listed: bool = False  # inside (...)


@dataclass(frozen=True)
class Param:
    """One ``keyword=value`` as written, and the canonical keyword it stands for."""

    keyword: str  # as written, lower case (maybe abbreviated)
    name: str  # canonical keyword ("xfersize" for "xf")
    value: str  # value text as written
    items: tuple[Item, ...]
    where: Where

    def __str__(self) -> str:
        return f"{self.keyword}={self.value}"


@dataclass
class HostDef:
    """``hd=`` (guide 1.12, Host Definition): a host Vdbench starts a slave on."""

    name: str
    where: Where
    system: str | None = None  # host name or address; the label when absent
    user: str | None = None
    shell: str | None = None  # "rsh", "ssh" or "vdbench"
    jvms: int | None = None
    vdbench: str | None = None  # Vdbench's directory on that host
    clients: int | None = None
    params: list[Param] = field(default_factory=list)


@dataclass
class StorageDef:
    """``sd=`` (guide 1.13, Storage Definition): one LUN or file."""

    name: str
    where: Where
    lun: str | None = None  # as written in the file
    target: str | None = None  # the lun after lun_map: what fio opens
    size: int | None = None  # bytes
    threads: int = 8  # SD_entry.java: "int threads = 8"
    hosts: tuple[str, ...] = ("*",)
    openflags: tuple[str, ...] = ()
    offset: int | None = None
    align: int | None = None
    params: list[Param] = field(default_factory=list)


Seek = float | Literal["eof"]


@dataclass
class WorkloadDef:
    """``wd=`` (guide 1.14, Workload Definition)."""

    name: str
    where: Where
    sd_names: tuple[str, ...] = ()
    xfersize: tuple[int, ...] = (4096,)  # WD_entry.java: "xf_table = {4096}"
    rdpct: int = 100  # WD_entry.java: "readpct = 100"
    seekpct: Seek = 100.0  # WD_entry.java: "seekpct = 100" (random)
    hosts: tuple[str, ...] = ("*",)
    openflags: tuple[str, ...] = ()
    params: list[Param] = field(default_factory=list)


@dataclass(frozen=True)
class ForLoop:
    """A ``forxxx=`` list of an RD (guide 1.15): one run per value, first loop outermost."""

    name: str  # "xfersize", "threads", "rdpct", "seekpct", "iorate", "compratio", ...
    values: tuple[float | str, ...]
    where: Where


IoRate = Literal["max", "curve"] | float


@dataclass
class RunDef:
    """``rd=`` (guide 1.15, Run Definition), before its for-loops are expanded."""

    name: str
    where: Where
    wd_names: tuple[str, ...] = ()
    sd_names: tuple[str, ...] | None = None  # rd=...,sd= overrides the WDs' SDs
    iorate: IoRate | None = None
    curve: tuple[float, ...] | None = None
    stopcurve: float | None = None  # ms
    elapsed: float = 30.0  # RD_entry.java: "elapsed = 30"
    interval: float | None = None
    warmup: float = 0.0
    for_loops: list[ForLoop] = field(default_factory=list)
    openflags: tuple[str, ...] = ()
    distribution: str = "exponential"  # RD_entry.java: "0: exponential" is the default
    maxdata: float | None = None  # bytes, or a multiple of the LUN size when < 100
    fwd_names: tuple[str, ...] = ()
    params: list[Param] = field(default_factory=list)


@dataclass(frozen=True)
class Untranslated:
    """Something in the parameter file that the fio jobs do not do, and why."""

    item: str
    line: int
    reason: str
    file: str = ""


@dataclass
class VdbenchConfig:
    path: str
    general: list[Param] = field(default_factory=list)
    hosts: list[HostDef] = field(default_factory=list)
    storage: list[StorageDef] = field(default_factory=list)
    workloads: list[WorkloadDef] = field(default_factory=list)
    runs: list[RunDef] = field(default_factory=list)
    skipped: list[Untranslated] = field(default_factory=list)  # fsd/fwd/rg definitions
    files: list[str] = field(default_factory=list)  # every file read, includes too


@dataclass
class TranslatedRun:
    """One Vdbench run (an RD for one combination of its for-loop values) as fio jobs.

    The jobs run together (Vdbench drives all SDs of a run at once); runs run one after the
    other. ``mode == "curve"``: run the jobs uncontrolled first, then at each ``curve``
    percentage of the IOPS measured (Vdbench ``iorate=curve``); the caller sets ``rate_iops``.
    """

    name: str
    rd: str
    jobs: list[FioJob]
    mode: Literal["max", "curve", "rate"]
    curve: list[int] | None
    source_line: int
    source_file: str
    for_values: dict[str, float | str] = field(default_factory=dict)
    iorate: float | None = None  # total requested for mode "rate"
    stopcurve_ms: float | None = None
    interval: float | None = None
    hosts: dict[str, str] = field(default_factory=dict)  # job name -> Vdbench host label

    def job_file(self) -> str:
        return job_file(self.jobs)


@dataclass
class Translation:
    runs: list[TranslatedRun]
    untranslated: list[Untranslated]

    def targets(self) -> list[str]:
        """Every file or device the jobs open, for a safety check before running."""
        names = {job.filename for run in self.runs for job in run.jobs if job.filename}
        return sorted(names)


LunMap = Mapping[str, str] | Callable[[str], str]
# For_loop.for_add_curve: "rtable = {10, 50, 70, 80, 90, 100}" when curve= is not given
DEFAULT_CURVE = (10, 50, 70, 80, 90, 100)
ThreadsAs = Literal["auto", "iodepth", "numjobs"]

# ---------------------------------------------------------------------------- keywords
# Each table lists the canonical keywords of one definition type in the order Vdbench's
# readParms() tests them; "=" marks keywords Vdbench compares exactly, "x*" any keyword that
# starts with x (SD_entry: keyword.startsWith("dedup")); the others accept any prefix.


def _keys(words: str) -> tuple[str, ...]:
    return tuple(words.split())


_HD_KEYS = ("=hd", "=host", "system", "vdbench", "shell", "user", "jvms", "clients", "mount")
_SD_KEYS = _keys(
    "=sd host =hd lun count size threads hitarea offset align kstat instance replay journal "
    "resetlun resetbus openflags range dedup* streams "
)
_WD_KEYS = _keys(
    "=wd =sd skew xfersize readpct rdpct writepct wrpct range hotband seekpct stride priority "
    "iorate rhpct whpct host =hd openflags =user threads streams "
)
# For_loop.checkForLoop(): the forxxx names first, then (since 5.02) the plain names.
_FOR_KEYS = _keys(
    "forxfersize forthreads forrdpct forrhpct forwhpct forseekpct forhitarea forcompratio "
    "forcompression fordepth forwidth forfiles forsizes fortotalsize forwss forworkingsetsize "
    "foroperations xfersize threads rdpct rhpct whpct seekpct hitarea compratio compression "
    "depth width files sizes totalsize wss workingsetsize "
)
_RD_KEYS = (
    *_keys(
        "=rd =wd =sd =fsd iorate =maxdata =maxdataread =maxdatawritten curve stopcurve elapsed "
        "interval warmup =replay pause "
    ),
    *_FOR_KEYS,
    *_keys(
        "distribution startcmd start_cmd endcmd end_cmd =fwd fwdrate operations format openflags "
        "mount "
    ),
)
# General parameters (guide 1.7.4): before any HD/SD; all are Vdbench-run options.
_GENERAL_KEYS = _keys(
    "abort_failed_skew compratio concatenatesds create_anchors data_errors dedupratio "
    "dedupunit dedupsets deduphotsets dedupflipflop endcmd formatsds formatxfersize "
    "fwd_thread_adjust histogram ios_per_jvm journal loop messagescan monitor pattern port "
    "report report_run_totals startcmd showlba timeout validate "
)


def _loop_name(keyword: str) -> str:
    """The loop a for-loop keyword sets (For_loop labels without "for"): forthreads -> threads."""
    base = keyword[3:] if keyword.startswith("for") else keyword
    return "wss" if base == "workingsetsize" else base


_TRANSLATED_LOOPS = ("xfersize", "threads", "rdpct", "seekpct", "iorate")
_TIME_KEYS = ("elapsed", "interval", "warmup", "pause")  # "m" means minutes (Vdb_scan.java)


def _resolve(keyword: str, table: Iterable[str]) -> str | None:
    """The canonical keyword ``keyword`` abbreviates, in Vdbench's order; None if unknown."""
    for entry in table:
        if entry.startswith("="):
            if keyword == entry[1:]:
                return entry[1:]
        elif entry.endswith("*"):
            if keyword.startswith(entry[:-1]):
                return entry[:-1]
        elif entry.startswith(keyword):
            return entry
    return None


# ---------------------------------------------------------------------------- reading


@dataclass(frozen=True)
class _Line:
    text: str
    where: Where


def _read_file(path: Path, shown: str, chain: tuple[Path, ...], out: list[_Line], files: list[str]):
    """Append the parameter lines of ``path`` (comments removed, includes inserted)."""
    try:
        text = path.read_text(errors="replace")
    except OSError as err:
        raise ParseError(
            f"cannot read Vdbench parameter file: {err.strerror}", source=shown
        ) from None
    files.append(shown)
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if line.startswith("eof"):
            break
        if not line or line[0] in "*#/":
            continue
        where = Where(shown, lineno)
        if line.startswith("include="):
            _include(line, path, where, chain, out, files)
            continue
        out.append(_Line(line, where))


def _include(line: str, including: Path, where: Where, chain: tuple[Path, ...], out, files) -> None:
    name = _cut_comment(line, where)[len("include=") :]
    if not name:
        raise ParseError("'include=' without a file name", source=where.file, line=where.line)
    given = Path(name)
    tried: list[Path] = []
    if given.is_absolute():
        tried.append(given)
    else:
        # relative to the including file first (Vdb_scan.readIncludeFile), then to the
        # current directory, Vdbench's own fall-back
        tried.append(including.parent / given)
        tried.append(Path.cwd() / given)
    found = next((p for p in tried if p.is_file()), None)
    if found is None:
        raise ParseError(
            f"include={name}: file not found",
            source=where.file,
            line=where.line,
            hint="looked for " + ", ".join(str(p) for p in tried),
        )
    resolved = found.resolve()
    if resolved in chain:
        raise ParseError(f"include={name} includes itself", source=where.file, line=where.line)
    shown = str(found) if given.is_absolute() else os.path.normpath(str(found))
    _read_file(found, shown, (*chain, resolved), out, files)


def _cut_comment(text: str, where: Where) -> str:
    """The text before the first blank outside double quotes (Vdb_scan.specialize)."""
    quoted = False
    for i, ch in enumerate(text):
        if ch == '"':
            quoted = not quoted
        elif ch in " \t" and not quoted:
            return text[:i]
    if quoted:
        raise ParseError("unterminated double quote", source=where.file, line=where.line)
    return text


def _statements(lines: list[_Line]) -> Iterable[tuple[str, Where]]:
    """Parameters (``keyword=value`` text, place) in order; a trailing comma joins lines."""
    i = 0
    while i < len(lines):
        pieces = [(_cut_comment(lines[i].text, lines[i].where), lines[i].where)]
        while pieces[-1][0].endswith(",") and i + 1 < len(lines):
            i += 1
            pieces.append((_cut_comment(lines[i].text, lines[i].where), lines[i].where))
        i += 1
        # character offset -> where, so each parameter keeps the line it starts on
        text = ""
        starts: list[tuple[int, Where]] = []
        for piece, where in pieces:
            starts.append((len(text), where))
            text += piece
        yield from _split_params(text, starts)


def _split_params(text: str, starts: list[tuple[int, Where]]) -> Iterable[tuple[str, Where]]:
    def where_at(offset: int) -> Where:
        current = starts[0][1]
        for start, where in starts:
            if start <= offset:
                current = where
        return current

    depth = 0
    quoted = False
    begin = 0
    for i, ch in enumerate(text + ","):
        if ch == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                w = where_at(i)
                raise ParseError("unmatched parenthesis ')'", source=w.file, line=w.line)
        elif ch == "," and depth == 0:
            piece = text[begin:i]
            if piece:
                yield piece, where_at(begin)
            begin = i + 1
    if depth > 0:
        w = where_at(begin)
        raise ParseError("unmatched parenthesis '('", source=w.file, line=w.line)


def _split_items(value: str, where: Where) -> tuple[Item, ...]:
    if not value.startswith("("):
        return (_item(value, listed=False),)
    if not value.endswith(")"):
        raise ParseError(f"text after ')' in {value!r}", source=where.file, line=where.line)
    inner = value[1:-1]
    items: list[Item] = []
    depth = 0
    quoted = False
    begin = 0
    for i, ch in enumerate(inner + ","):
        if ch == '"':
            quoted = not quoted
        elif quoted:
            continue
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            piece = inner[begin:i]
            if piece:
                items.append(_item(piece, listed=True))
            begin = i + 1
    return tuple(items)


def _item(text: str, *, listed: bool) -> Item:
    if '"' in text:
        return Item(text.replace('"', ""), quoted=True, listed=listed)
    return Item(text, listed=listed)


def _param(text: str, where: Where, table: Iterable[str], context: str) -> Param:
    if "=" not in text:
        raise ParseError(
            f"expecting 'keyword=value', found {text!r}", source=where.file, line=where.line
        )
    keyword, value = text.split("=", 1)
    keyword = keyword.strip().lower()
    if len(keyword) < 2:
        # Vdb_scan.parms_split: "Keyword must contain a minimum of 2 characters"
        raise ParseError(
            f"keyword {keyword!r} is too short: Vdbench keywords have two characters or more",
            source=where.file,
            line=where.line,
        )
    name = _resolve(keyword, table)
    if name is None:
        raise ParseError(
            f"unknown keyword {keyword!r} in {context}",
            source=where.file,
            line=where.line,
            hint=f"'{keyword}=' is not one of the parameters (or an abbreviation of one) "
            f"allowed in {context}; see the Vdbench guide, sections 1.7.4 to 1.7.11",
        )
    return Param(keyword, name, value, _split_items(value, where), where)


# ---------------------------------------------------------------------------- values


def _number(text: str, keyword: str) -> float | None:
    """A Vdbench number (Vdb_scan.parms_alfa_or_num / not_numeric), or None for text."""
    try:
        return float(text)
    except ValueError:
        pass
    if len(text) < 2:
        return None
    lower = text.lower()
    # "kb", "mb", ... are the same as "k", "m" (Vdb_scan.not_numeric)
    if lower.endswith("b") and len(lower) > 2:
        tail, front = lower[-2], lower[:-2]
    else:
        tail, front = lower[-1], lower[:-1]
    minutes = keyword in _TIME_KEYS
    factor = {
        "k": 1024.0,
        "m": 60.0 if minutes else 1024.0**2,
        "g": 1024.0**3,
        "t": 1024.0**4,
        "h": 3600.0,
    }.get(tail)
    if factor is None:
        return None
    try:
        return float(front) * factor
    except ValueError:
        return None


def _is_range(item: Item) -> bool:
    return item.listed and not item.quoted and "-" in item.text[1:]


def _numbers(param: Param) -> list[float]:
    """All values of a numeric parameter, ranges expanded (Var_parms.handle_num)."""
    out: list[float] = []
    items = list(param.items)
    i = 0
    while i < len(items):
        item = items[i]
        if _is_range(item):
            first, last = item.text.split("-", 1)
            start, end = _num(first, param), _num(last, param)
            if i + 1 >= len(items):
                raise _bad(param, f"range {item.text!r} needs a step or 'd' after it")
            step_item = items[i + 1]
            out.append(start)
            if step_item.text.lower() == "d":
                value = start
                if start <= end:
                    while value * 2 <= end and value > 0:
                        value *= 2
                        out.append(value)
                else:
                    while value / 2 >= end:
                        value /= 2
                        out.append(value)
            else:
                step = _num(step_item.text, param)
                if step <= 0:
                    raise _bad(param, f"range step {step_item.text!r} must be positive")
                value = start + step
                while value <= end:
                    out.append(value)
                    value += step
            i += 2
            continue
        out.append(_num(item.text, param))
        i += 1
    if not out:
        raise _bad(param, "a number is required")
    return out


def _num(text: str, param: Param) -> float:
    value = _number(text, param.name)
    if value is None:
        raise _bad(param, f"expected a number, found {text!r}")
    return value


def _one(param: Param) -> float:
    values = _numbers(param)
    if len(values) != 1:
        raise _bad(param, "takes one value")
    return values[0]


def _names(param: Param) -> list[str]:
    """Text values, name ranges (sd1-sd4) expanded (Var_parms.handle_alpha)."""
    out: list[str] = []
    for item in param.items:
        if _is_range(item) and param.name not in ("host", "hd", "system", "lun"):
            first, last = item.text.split("-", 1)
            m1 = re.fullmatch(r"(.*?)(\d+)", first)
            m2 = re.fullmatch(r"(.*?)(\d+)", last)
            if m1 and m2 and m1[1] == m2[1] and int(m1[2]) < int(m2[2]):
                out += [f"{m1[1]}{n}" for n in range(int(m1[2]), int(m2[2]) + 1)]
                continue
            if m1 and m2:
                raise _bad(param, f"name range {item.text!r} must count up with one prefix")
        out.append(item.text)
    if not out:
        raise _bad(param, "a value is required")
    return out


def _text(param: Param) -> str:
    names = [item.text for item in param.items]
    if len(names) != 1 or not names[0]:
        raise _bad(param, "takes one value")
    return names[0]


def _bad(param: Param, message: str) -> ParseError:
    return ParseError(
        f"{param.keyword}={param.value}: {message}",
        source=param.where.file,
        line=param.where.line,
    )


def _seek(text: str, param: Param) -> Seek:
    """WD_entry.parseSeekpct: seq(uential) 0, random 100, eof, or a percentage."""
    lower = text.lower()
    if lower == "eof":
        return "eof"
    if lower and "sequential".startswith(lower):
        return 0.0
    if lower and "random".startswith(lower):
        return 100.0
    value = _number(text, "seekpct")
    if value is None:
        raise _bad(param, f"seekpct is a percentage, 'sequential', 'random' or 'eof': {text!r}")
    if value < 0:
        return "eof"  # WD_entry: "-1: seek=eof, pure sequential"
    if value > 100:
        raise _bad(param, "seekpct is a percentage (0-100)")
    return value


def _seek_items(param: Param) -> Seek:
    """WD_entry.parseSeekpct: ``seekpct=(poisson,n)`` is random with a Poisson midpoint n
    (not translated, named by translate()); otherwise the last value counts."""
    seek: Seek = 100.0
    poisson = False
    for item in param.items:
        lower = item.text.lower()
        if lower and "poisson".startswith(lower):
            seek, poisson = 100.0, True
        elif poisson and _number(item.text, "seekpct") is not None:
            continue  # the midpoint
        else:
            seek = _seek(item.text, param)
    return seek


def _wildcard(pattern: str, name: str) -> bool:
    """common.simple_wildcard: only a trailing '*' is a wildcard."""
    if pattern.endswith("*"):
        return name.startswith(pattern[:-1])
    return pattern == name


# ---------------------------------------------------------------------------- loading


def load_vdbench(path: str | os.PathLike[str], lun_map: LunMap | None = None) -> VdbenchConfig:
    """Read a Vdbench parameter file and its includes.

    ``lun_map`` remaps the ``lun=`` paths to what fio should open: a function, or a mapping
    of exact paths or directory prefixes (the longest matching prefix wins), e.g.
    ``{"/mnt/vdb1": "/scratch/vdb1"}``.
    """
    p = Path(path)
    if not p.is_file():
        raise ParseError("Vdbench parameter file not found", source=str(path))
    lines: list[_Line] = []
    config = VdbenchConfig(path=str(path))
    _read_file(p, str(path), (p.resolve(),), lines, config.files)
    _Builder(config, lun_map).run(_statements(lines))
    if not config.runs and not config.skipped:
        raise ParseError("no run definition (rd=) found", source=str(path))
    return config


def _map_lun(lun: str, lun_map: LunMap | None) -> str:
    if lun_map is None:
        return lun
    if callable(lun_map):
        return lun_map(lun)
    if lun in lun_map:
        return lun_map[lun]
    best = ""
    for prefix in lun_map:
        stem = prefix.rstrip("/")
        if (lun.startswith(stem + "/") or lun == stem) and len(stem) > len(best):
            best = stem
    if best:
        target = lun_map[best] if best in lun_map else lun_map[best + "/"]
        return target.rstrip("/") + lun[len(best) :]
    return lun


# Definition keywords that start a new definition in each phase (Vdbench's readParms()
# loops: HostParms stops at rg/sd/fsd/wd/fwd/rd, SD_entry at wd/rd/fwd, WD_entry at rd/fwd;
# assay also lets fsd/fwd/rg start their own, skipped, definition after SDs and WDs);
# anywhere else the same keyword is a parameter (rd=...,wd=, wd=...,sd=, sd=...,hd=).
_STARTS: dict[str, frozenset[str]] = {
    "general": frozenset({"hd", "host", "rg", "sd", "fsd", "wd", "fwd", "rd"}),
    "hd": frozenset({"hd", "host", "rg", "sd", "fsd", "wd", "fwd", "rd"}),
    "rg": frozenset({"rg", "sd"}),
    "sd": frozenset({"sd", "rg", "fsd", "wd", "fwd", "rd"}),
    "fsd": frozenset({"fsd", "fwd", "rd"}),
    "wd": frozenset({"wd", "fsd", "fwd", "rd"}),
    "fwd": frozenset({"fwd", "rd"}),
    "rd": frozenset({"rd"}),
}
_KIND = {"host": "hd"}
_TABLES = {"hd": _HD_KEYS, "sd": _SD_KEYS, "wd": _WD_KEYS, "rd": _RD_KEYS}
_SKIPPED = {
    "fsd": "file system definitions (fsd=) are not translated to fio: only raw I/O (sd=) is",
    "fwd": "file system workloads (fwd=) are not translated to fio: only raw I/O (wd=) is",
    "rg": "replay groups (rg=) are not translated",
}


class _Builder:
    """Vdbench's readParms() loops as one state machine over the parameter stream.

    A definition's params are collected (its type's defaults first, then its own) and turned
    into the data class when the next definition starts: Vdbench clones the default when it
    meets "xx=name", so a later "xx=default" does not change definitions already made.
    """

    def __init__(self, config: VdbenchConfig, lun_map: LunMap | None) -> None:
        self.config = config
        self.lun_map = lun_map
        self.phase = "general"
        self.current: HostDef | StorageDef | WorkloadDef | RunDef | None = None
        self.is_default = False
        self.defaults: dict[str, list[Param]] = {"hd": [], "sd": [], "wd": [], "rd": []}
        self.pending: list[Param] = []

    def run(self, statements: Iterable[tuple[str, Where]]) -> None:
        for text, where in statements:
            keyword = text.split("=", 1)[0].strip().lower()
            if keyword in _STARTS[self.phase]:
                self._start(_KIND.get(keyword, keyword), text, where)
            else:
                self._add(text, where)
        self._finish()

    def _start(self, kind: str, text: str, where: Where) -> None:
        self._finish()
        self.phase = kind
        self.is_default = False
        if kind in _SKIPPED:
            self.config.skipped.append(Untranslated(text, where.line, _SKIPPED[kind], where.file))
            return
        param = _param(text, where, _TABLES[kind], f"{kind}=")
        name = _text(param)
        if name == "default":
            self.is_default = True
            return
        self.pending = [*self.defaults[kind], param]
        self.current = _new(kind, name, where)

    def _add(self, text: str, where: Where) -> None:
        if self.phase in _SKIPPED:
            return  # parameters of an fsd/fwd/rg definition: named with it, not checked
        if self.phase == "general":
            self.config.general.append(_param(text, where, _GENERAL_KEYS, "the general parameters"))
            return
        name = "default" if self.is_default or self.current is None else self.current.name
        param = _param(text, where, _TABLES[self.phase], f"{self.phase}={name}")
        if self.is_default:
            if param.name == "lun":
                raise _bad(param, "lun= is not allowed for sd=default (SD_entry.java)")
            self.defaults[self.phase].append(param)
        else:
            self.pending.append(param)

    def _finish(self) -> None:
        current, self.current = self.current, None
        params, self.pending = self.pending, []
        if isinstance(current, HostDef):
            _apply_host(current, params)
            self.config.hosts.append(current)
        elif isinstance(current, StorageDef):
            _apply_storage(current, params, self.lun_map)
            self.config.storage.append(current)
        elif isinstance(current, WorkloadDef):
            _apply_workload(current, params)
            self.config.workloads.append(current)
        elif isinstance(current, RunDef):
            _apply_run(current, params)
            self.config.runs.append(current)


def _new(kind: str, name: str, where: Where) -> HostDef | StorageDef | WorkloadDef | RunDef:
    if kind == "hd":
        return HostDef(name, where)
    if kind == "sd":
        return StorageDef(name, where)
    if kind == "wd":
        return WorkloadDef(name, where)
    return RunDef(name, where)


def _apply_host(host: HostDef, params: list[Param]) -> None:
    for p in params:
        if p.name in ("hd", "host"):
            continue
        host.params.append(p)
        if p.name == "system":
            host.system = _text(p)
        elif p.name == "user":
            host.user = _text(p)
        elif p.name == "shell":
            host.shell = _text(p)
        elif p.name == "vdbench":
            host.vdbench = _text(p)
        elif p.name == "jvms":
            host.jvms = int(_one(p))
        elif p.name == "clients":
            host.clients = int(_one(p))


def _apply_storage(sd: StorageDef, params: list[Param], lun_map: LunMap | None) -> None:
    for p in params:
        if p.name == "sd":
            continue
        sd.params.append(p)
        if p.name == "lun":
            sd.lun = _text(p)
            sd.target = _map_lun(sd.lun, lun_map)
        elif p.name == "size":
            values = _numbers(p)
            size = values[0] / (values[1] if len(values) > 1 else 1)  # size=(total,count)
            sd.size = int(size)
        elif p.name == "threads":
            values = _numbers(p)
            sd.threads = int(values[0]) // max(1, int(values[1]) if len(values) > 1 else 1)
        elif p.name in ("host", "hd"):
            sd.hosts = tuple(_names(p))
        elif p.name == "openflags":
            sd.openflags = tuple(item.text.lower() for item in p.items)
        elif p.name == "offset":
            sd.offset = int(_one(p))
        elif p.name == "align":
            sd.align = int(_one(p))
    if sd.lun is None:
        raise ParseError(f"sd={sd.name} has no lun=", source=sd.where.file, line=sd.where.line)


def _apply_workload(wd: WorkloadDef, params: list[Param]) -> None:
    for p in params:
        if p.name == "wd":
            continue
        wd.params.append(p)
        if p.name == "sd":
            wd.sd_names = tuple(_names(p))
        elif p.name == "xfersize":
            wd.xfersize = tuple(int(v) for v in _numbers(p))
            _check_xfersize(wd.xfersize, p)
        elif p.name in ("readpct", "rdpct"):
            wd.rdpct = int(_one(p))  # WD_entry: "wd.readpct = (int) prm.numerics[0]"
        elif p.name in ("writepct", "wrpct"):
            wd.rdpct = 100 - int(_one(p))
        elif p.name == "seekpct":
            wd.seekpct = _seek_items(p)
        elif p.name in ("host", "hd"):
            wd.hosts = tuple(_names(p))
        elif p.name == "openflags":
            wd.openflags = tuple(item.text.lower() for item in p.items)
        if p.name in ("readpct", "rdpct", "writepct", "wrpct") and not 0 <= wd.rdpct <= 100:
            raise _bad(p, "read percentage must be 0-100")
    if not wd.sd_names:
        raise ParseError(f"wd={wd.name} has no sd=", source=wd.where.file, line=wd.where.line)


def _check_xfersize(sizes: tuple[int, ...], p: Param) -> None:
    """WD_entry.parseXfersize: one size, (size,pct,...) pairs adding to 100, or (min,max,align)."""
    if len(sizes) == 3:
        if sizes[0] >= sizes[1]:
            raise _bad(p, "xfersize=(min,max,align) needs min < max")
        if sizes[2] == 0 or sizes[2] % 512:
            raise _bad(p, "xfersize=(min,max,align): align must be a non-zero multiple of 512")
    elif len(sizes) > 1:
        if len(sizes) % 2:
            raise _bad(p, "an xfersize distribution is pairs: (size,percent,size,percent,...)")
        if round(sum(sizes[1::2])) != 100:
            raise _bad(p, "xfersize distribution percentages must add up to 100")


def _apply_run(rd: RunDef, params: list[Param]) -> None:
    pending_rates: list[float] | None = None
    for p in params:
        if p.name == "rd":
            continue
        rd.params.append(p)
        n = p.name
        if n == "wd":
            rd.wd_names = tuple(_names(p))
        elif n == "sd":
            rd.sd_names = tuple(_names(p))
        elif n == "fwd":
            rd.fwd_names = tuple(_names(p))
        elif n == "iorate":
            words = [item.text.lower() for item in p.items]
            if words == ["curve"]:
                rd.iorate = "curve"
            elif words == ["max"]:
                rd.iorate = "max"
            else:
                rates = _numbers(p)
                rd.iorate = rates[0]
                # RD_entry: several rates become a 'foriorate' loop, added last
                pending_rates = rates if len(rates) > 1 else None
        elif n == "curve":
            rd.curve = tuple(_numbers(p))
        elif n == "stopcurve":
            rd.stopcurve = _one(p)
        elif n == "elapsed":
            rd.elapsed = _one(p)
        elif n == "interval":
            rd.interval = _one(p)
        elif n == "warmup":
            rd.warmup = _one(p)
        elif n == "maxdata":
            rd.maxdata = _one(p)
        elif n == "openflags":
            rd.openflags = tuple(item.text.lower() for item in p.items)
        elif n == "distribution":
            # RD_entry.useDistribution: exponential (default), uniform or deterministic
            word = p.items[0].text.lower() if p.items else ""
            rd.distribution = next(
                (
                    d
                    for d in ("exponential", "uniform", "deterministic")
                    if word and d.startswith(word)
                ),
                word,
            )
        elif n in _FOR_KEYS:
            loop = _loop_name(n)
            if loop == "seekpct":
                values: tuple[float | str, ...] = tuple(_seek(i.text, p) for i in p.items)
            elif loop == "operations":
                values = tuple(item.text for item in p.items)
            else:
                values = tuple(_numbers(p))
            # For_loop(): a loop of the same type replaces the earlier one, at the end
            rd.for_loops = [f for f in rd.for_loops if f.name != loop]
            rd.for_loops.append(ForLoop(loop, values, p.where))
    if pending_rates is not None:
        rd.for_loops = [f for f in rd.for_loops if f.name != "iorate"]
        rd.for_loops.append(ForLoop("iorate", tuple(pending_rates), rd.where))


# ---------------------------------------------------------------------------- translating


def translate(
    config: VdbenchConfig,
    *,
    threads_as: ThreadsAs = "auto",
    elapsed: float | None = None,
    warmup: float | None = None,
    size: int | None = None,
) -> Translation:
    """fio jobs doing the I/O of each run definition, for each combination of its for-loops.

    Decisions (each says where Vdbench defines the behaviour):

    * One fio job per (host, workload, SD): Vdbench drives every SD of a workload at once,
      from every host the SD is defined for (``sd=...,host=``; guide 1.13).
    * ``threads`` is "the maximum number of concurrent outstanding I/Os" of an SD (guide
      1.13); all threads of an SD share one I/O stream, so a sequential SD stays one
      sequential stream. ``threads_as="iodepth"`` keeps exactly that: one fio job with
      ``ioengine=libaio`` and ``iodepth=threads``. ``"numjobs"`` uses ``numjobs=threads``
      synchronous ``psync`` jobs (Vdbench's own model: one blocking thread per outstanding
      I/O), but each fio clone has its own sequential stream. ``"auto"`` (default) picks
      iodepth when the I/O is direct (O_DIRECT makes libaio really asynchronous) and numjobs
      for buffered I/O, where libaio would block and iodepth would mean nothing. Either way
      the concurrency, the Little's-law N, is ``threads``.
    * ``rdpct`` -> ``rw`` (read/write/rw, rand* when random) and ``rwmixread``;
      ``seekpct`` 0 sequential, 100 random, n in between ``percentage_random=n``, ``eof``
      sequential until the end of the SD, then stop (no ``time_based``).
    * ``xfersize`` -> ``bs``; a distribution -> ``bssplit``; (min,max,align) -> ``bsrange``.
    * ``elapsed`` includes Vdbench's ``warmup`` (the warm-up intervals are only left out of
      the averages), so ``ramp_time = warmup`` and ``runtime = elapsed - warmup``: the same
      wall time and the same measured window. ``elapsed``/``warmup`` here override every RD,
      like Vdbench's ``-e``/``-w`` execution parameters.
    * ``openflags=o_direct`` (or ``directio``) -> ``direct=1``, ``o_sync`` -> ``sync=sync``,
      ``o_dsync`` -> ``sync=dsync``; RD flags win over WD and SD flags (SD_entry.openOneSd).
    * ``iorate=N`` is the total for the run: ``rate_iops = N / (jobs x numjobs)`` per fio
      job, with Poisson arrivals (Vdbench's default ``distribution=exponential``),
      ``linear`` for ``deterministic``. ``iorate=curve``: mode "curve" and the percentages
      (default 10,50,70,80,90,100, For_loop.for_add_curve). ``maxdata`` -> ``io_size``.
    * ``size`` overrides every SD's ``size=`` (for a small local run).
    """
    out: list[TranslatedRun] = []
    notes = _Notes()
    _note_static(config, notes)
    hosts = [h.name for h in config.hosts] or ["localhost"]
    for rd in config.runs:
        if rd.fwd_names:
            notes.add(
                f"rd={rd.name},fwd=...", rd.where, "file system runs (fwd=) are not translated"
            )
            continue
        wds = _workloads_for(rd, config)
        combos = _combinations(rd)
        for values in combos:
            out.append(
                _translate_run(
                    rd, wds, values, len(combos) > 1, config, hosts, threads_as,
                    elapsed, warmup, size, notes,
                )
            )  # fmt: skip
    return Translation(runs=out, untranslated=notes.items)


class _Notes:
    def __init__(self) -> None:
        self.items: list[Untranslated] = []
        self._seen: set[tuple[str, str, int]] = set()

    def add(self, item: str, where: Where, reason: str) -> None:
        key = (item, where.file, where.line)
        if key not in self._seen:
            self._seen.add(key)
            self.items.append(Untranslated(item, where.line, reason, where.file))


_SD_UNTRANSLATED = {
    "count": "count=(start,n) repeats an SD over numbered LUNs; expand it by hand",
    "hitarea": "cache hit area (rhpct/whpct) has no fio equivalent",
    "kstat": "Solaris kstat reporting only",
    "instance": "Solaris kstat reporting only",
    "replay": "I/O trace replay is not translated",
    "journal": "data validation journal has no fio equivalent",
    "resetlun": "SCSI resets are not issued",
    "resetbus": "SCSI resets are not issued",
    "range": "an SD range= (percent of the LUN) is not translated",
    "dedup": "data deduplication patterns are not generated",
    "streams": "streams are not translated",
}
_WD_UNTRANSLATED = {
    "skew": "skew between workloads sharing SDs is not reproduced: each WD gets full threads",
    "range": "a WD range= (percent of the SD) is not translated",
    "hotband": "hot bands are not translated",
    "stride": "seek strides are not translated",
    "priority": "workload priorities are not translated",
    "iorate": "a WD-level iorate= (with priority=) is not translated; the RD rate is used",
    "rhpct": "cache read hits (rhpct) have no fio equivalent",
    "whpct": "cache write hits (whpct) have no fio equivalent",
    "user": "user-written workload classes are not translated",
    "threads": "WD threads= (with concatenatesds=yes) is not translated; SD threads are used",
    "streams": "streams are not translated",
}
_RD_UNTRANSLATED = {
    "interval": None,  # kept as data: the engine's reporting interval
    "pause": "a pause after the run is not inserted",
    "startcmd": "commands around runs are not executed",
    "start_cmd": "commands around runs are not executed",
    "endcmd": "commands around runs are not executed",
    "end_cmd": "commands around runs are not executed",
    "format": "SD formatting runs are not translated: fill with a write run instead",
    "mount": "mount commands are not executed",
    "replay": "I/O trace replay is not translated",
    "maxdataread": "maxdataread= is not translated (maxdata= is)",
    "maxdatawritten": "maxdatawritten= is not translated (maxdata= is)",
    "fwdrate": "file system runs are not translated",
    "operations": "file system runs are not translated",
    "fsd": "file system runs are not translated",
}


def _note_static(config: VdbenchConfig, notes: _Notes) -> None:
    """What cannot be translated, definition by definition (named, never dropped)."""
    for p in config.general:
        notes.add(str(p), p.where, "Vdbench general parameter: no effect on the fio jobs")
    notes.items.extend(config.skipped)
    for host in config.hosts:
        remote = host.system or host.shell or host.user or host.name != "localhost"
        if remote:
            detail = ", ".join(
                f"{k}={v}"
                for k, v in (("system", host.system), ("shell", host.shell), ("user", host.user))
                if v
            )
            notes.add(
                f"hd={host.name}" + (f" ({detail})" if detail else ""),
                host.where,
                "remote Vdbench host (started with rsh/ssh): the jobs are run locally or with "
                "fio's client/server mode; TranslatedRun.hosts names each job's host",
            )
        for p in host.params:
            if p.name == "jvms":
                notes.add(
                    str(p), p.where, "Vdbench JVM count per host: fio runs one process per job"
                )
            elif p.name in ("clients", "mount", "vdbench"):
                notes.add(str(p), p.where, f"hd {p.name}= has no fio equivalent")
    for sd in config.storage:
        for p in sd.params:
            if p.name in _SD_UNTRANSLATED:
                notes.add(f"sd={sd.name},{p}", p.where, _SD_UNTRANSLATED[p.name])
            elif p.name == "openflags":
                _note_flags(sd.openflags, p, notes)
    for wd in config.workloads:
        for p in wd.params:
            if p.name in _WD_UNTRANSLATED:
                notes.add(f"wd={wd.name},{p}", p.where, _WD_UNTRANSLATED[p.name])
            elif p.name == "seekpct" and any(
                "poisson".startswith(i.text.lower()) for i in p.items if i.text
            ):
                notes.add(f"wd={wd.name},{p}", p.where, "poisson seek distances are not translated")
            elif p.name == "openflags":
                _note_flags(wd.openflags, p, notes)
            elif (
                p.name == "xfersize" and len(wd.xfersize) == 3 and wd.xfersize[2] != wd.xfersize[0]
            ):
                notes.add(
                    f"wd={wd.name},{p}",
                    p.where,
                    "fio's bsrange sizes are multiples of the minimum, not of Vdbench's align",
                )
    for rd in config.runs:
        for p in rd.params:
            reason = _RD_UNTRANSLATED.get(p.name)
            if reason:
                notes.add(f"rd={rd.name},{p}", p.where, reason)
            elif p.name == "distribution" and (
                rd.distribution not in ("exponential", "deterministic") or len(p.items) > 1
            ):
                notes.add(
                    f"rd={rd.name},{p}",
                    p.where,
                    "only exponential or deterministic arrivals, no variable (burst) rates",
                )
            elif p.name == "openflags":
                _note_flags(rd.openflags, p, notes)
        for loop in rd.for_loops:
            if loop.name not in _TRANSLATED_LOOPS:
                notes.add(
                    f"rd={rd.name},for{loop.name}",
                    loop.where,
                    f"for{loop.name}= changes nothing fio does here (runs repeat unchanged)",
                )


_FLAGS = {"o_direct": "direct", "directio": "direct", "o_sync": "sync", "o_dsync": "dsync"}


def _note_flags(flags: tuple[str, ...], p: Param, notes: _Notes) -> None:
    for flag in flags:
        if flag not in _FLAGS:
            notes.add(f"openflags={flag}", p.where, "only o_direct, directio, o_sync, o_dsync")


def _workloads_for(rd: RunDef, config: VdbenchConfig) -> list[WorkloadDef]:
    if not rd.wd_names:
        raise ParseError(f"rd={rd.name} has no wd=", source=rd.where.file, line=rd.where.line)
    found: list[WorkloadDef] = []
    for name in rd.wd_names:
        matches = [wd for wd in config.workloads if _wildcard(name, wd.name)]
        if not matches:
            raise ParseError(
                f"could not find wd={name} for rd={rd.name}",
                source=rd.where.file,
                line=rd.where.line,
            )
        found += [wd for wd in matches if wd not in found]
    return found


def _combinations(rd: RunDef) -> list[dict[str, float | str]]:
    """For_loop.for_get: nested loops, the first defined outermost."""
    loops = rd.for_loops
    if not loops:
        return [{}]
    return [
        {loop.name: value for loop, value in zip(loops, combo, strict=True)}
        for combo in itertools.product(*(loop.values for loop in loops))
    ]


def _translate_run(
    rd: RunDef,
    wds: list[WorkloadDef],
    values: dict[str, float | str],
    many: bool,
    config: VdbenchConfig,
    hosts: list[str],
    threads_as: ThreadsAs,
    elapsed: float | None,
    warmup: float | None,
    size: int | None,
    notes: _Notes,
) -> TranslatedRun:
    streams: list[tuple[str, WorkloadDef, StorageDef]] = []
    for wd in wds:
        sd_names = rd.sd_names if rd.sd_names is not None else wd.sd_names
        wd_hosts = [h for h in hosts if any(_wildcard(p, h) for p in wd.hosts)]
        for sd_name in sd_names:
            sds = [sd for sd in config.storage if _wildcard(sd_name, sd.name)]
            if not sds:
                raise ParseError(
                    f"could not find sd={sd_name} for wd={wd.name}, rd={rd.name}",
                    source=rd.where.file,
                    line=rd.where.line,
                )
            for sd in sds:
                for host in wd_hosts:
                    if any(_wildcard(p, host) for p in sd.hosts):
                        streams.append((host, wd, sd))
    if not streams:
        raise ParseError(
            f"rd={rd.name}: no SD is defined on the hosts of its workloads",
            source=rd.where.file,
            line=rd.where.line,
        )
    per_sd: dict[str, int] = {}
    for _, _, sd in streams:
        per_sd[sd.name] = per_sd.get(sd.name, 0) + 1
    wd_per_sd: dict[str, set[str]] = {}
    for _, wd, sd in streams:
        wd_per_sd.setdefault(sd.name, set()).add(wd.name)
    for sd_name, wd_names in wd_per_sd.items():
        if len(wd_names) > 1:
            notes.add(
                f"rd={rd.name}: sd={sd_name} shared by wd={','.join(sorted(wd_names))}",
                rd.where,
                "Vdbench splits an SD's threads between its workloads by skew; "
                "each fio job gets the SD's full thread count",
            )

    total_elapsed = elapsed if elapsed is not None else rd.elapsed
    ramp = warmup if warmup is not None else rd.warmup
    runtime = total_elapsed - ramp if total_elapsed > ramp else total_elapsed

    iorate: IoRate | None = rd.iorate
    if "iorate" in values:
        iorate = float(values["iorate"])
    if iorate is None:
        raise ParseError(
            f"rd={rd.name} has no iorate= (Vdbench: 'iorate= parameter is missing')",
            source=rd.where.file,
            line=rd.where.line,
        )
    mode: Literal["max", "curve", "rate"] = (
        "curve" if iorate == "curve" else "max" if iorate == "max" else "rate"
    )
    rate_process: Literal["linear", "poisson"] = (
        "linear" if rd.distribution.startswith("det") else "poisson"
    )

    jobs: list[FioJob] = []
    job_hosts: dict[str, str] = {}
    for host, wd, sd in streams:
        name = f"{wd.name}.{sd.name}" if per_sd[sd.name] == 1 else f"{host}.{wd.name}.{sd.name}"
        job = _job(name, rd, wd, sd, values, threads_as, runtime, ramp, size)
        if mode == "curve":
            job = replace(job, rate_process=rate_process)
        jobs.append(job)
        job_hosts[name] = host
    if mode == "rate":
        n = sum(job.numjobs for job in jobs)
        per_job = max(1, round(float(iorate) / n))
        jobs = [replace(job, rate_iops=per_job, rate_process=rate_process) for job in jobs]

    label = rd.name
    if many:
        label += " (" + " ".join(f"{k}={_show(k, v)}" for k, v in values.items()) + ")"
    return TranslatedRun(
        name=label,
        rd=rd.name,
        jobs=jobs,
        mode=mode,
        curve=[int(p) for p in (rd.curve or DEFAULT_CURVE)] if mode == "curve" else None,
        source_line=rd.where.line,
        source_file=rd.where.file,
        for_values=dict(values),
        iorate=float(iorate) if mode == "rate" else None,
        stopcurve_ms=rd.stopcurve,
        interval=rd.interval,
        hosts=job_hosts,
    )


def _show(name: str, value: float | str) -> str:
    if isinstance(value, str):
        return value
    if name == "xfersize" and value >= 1024 and value % 1024 == 0:
        return f"{int(value) // 1024}k"
    return f"{value:g}"


def _job(
    name: str,
    rd: RunDef,
    wd: WorkloadDef,
    sd: StorageDef,
    values: dict[str, float | str],
    threads_as: ThreadsAs,
    runtime: float,
    ramp: float,
    size: int | None,
) -> FioJob:
    rdpct = int(values.get("rdpct", wd.rdpct))
    seek: Seek = values.get("seekpct", wd.seekpct)  # type: ignore[assignment]
    xfer = (int(values["xfersize"]),) if "xfersize" in values else wd.xfersize
    threads = int(values.get("threads", sd.threads))
    threads = max(threads, 1)  # For_loop.useForOverrides: "minimum of 1"

    flags = rd.openflags or wd.openflags or sd.openflags
    direct = any(_FLAGS.get(f) == "direct" for f in flags)
    extra: dict[str, str] = {}
    for flag in flags:
        if _FLAGS.get(flag) in ("sync", "dsync"):
            extra["sync"] = _FLAGS[flag]

    random = seek != "eof" and float(seek) > 0
    if rdpct >= 100:
        rw: RW = "randread" if random else "read"
        mix = None
    elif rdpct <= 0:
        rw = "randwrite" if random else "write"
        mix = None
    else:
        rw = "randrw" if random else "rw"
        mix = rdpct
    if random and float(seek) < 100:
        extra["percentage_random"] = f"{float(seek):g}"

    if len(xfer) == 1:
        bs = xfer[0]
    elif len(xfer) == 3:
        bs = xfer[0]
        extra["bsrange"] = f"{xfer[0]}-{xfer[1]}"
    else:
        bs = xfer[0]
        extra["bssplit"] = ":".join(
            f"{s}/{int(p)}" for s, p in zip(xfer[::2], xfer[1::2], strict=True)
        )

    # one reporting group per job: fio's group_reporting then merges only this job's numjobs
    # clones, so each SD keeps its own figures (fio HOWTO, "new_group")
    extra["new_group"] = "1"
    if sd.offset:
        extra["offset"] = str(sd.offset)
    if sd.align:
        extra["blockalign"] = str(sd.align)

    time_based = seek != "eof"
    if rd.maxdata is not None:
        lun_size = size if size is not None else sd.size
        total = rd.maxdata if rd.maxdata >= 100 or lun_size is None else rd.maxdata * lun_size
        extra["io_size"] = str(math.ceil(total))
        time_based = False

    use_iodepth = threads_as == "iodepth" or (threads_as == "auto" and direct)
    return FioJob(
        name=name,
        rw=rw,
        bs=bs,
        size=size if size is not None else sd.size,
        filename=sd.target,
        iodepth=threads if use_iodepth else 1,
        numjobs=1 if use_iodepth else threads,
        rwmixread=mix,
        direct=direct,
        ioengine="libaio" if use_iodepth else "psync",
        runtime=runtime,
        ramp_time=ramp or None,
        time_based=time_based,
        extra=extra,
    )


__all__ = [
    "ForLoop",
    "HostDef",
    "Item",
    "Param",
    "RunDef",
    "StorageDef",
    "TranslatedRun",
    "Translation",
    "Untranslated",
    "VdbenchConfig",
    "Where",
    "WorkloadDef",
    "load_vdbench",
    "translate",
]
