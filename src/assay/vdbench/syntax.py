"""Reading a Vdbench parameter file as Vdbench's scanner does: lines, parameters, values.

Syntax, as Vdb_scan.java reads it:

* a line whose first non-blank character is ``*``, ``#`` or ``/`` is a comment, as is an empty
  line; a line starting with ``eof`` ends the file;
* everything after the first blank outside double quotes is a comment (``specialize()``);
* a line ending in ``,`` continues on the next non-comment line;
* ``include=FILE`` at the start of a line inserts FILE there (guide 1.7.3); a name without a
  directory is taken relative to the including file, else relative to it or, failing that, to
  the current directory (``readIncludeFile()``). Vdbench refuses includes inside included
  files; assay allows them and refuses only a cycle, and holds the whole text, includes
  inserted, to the bound of one parameter file (``MAX_TEXT_BYTES``; a file that includes a
  file that includes a file 2,000 x 1,000 times was read two million times), in at most
  ``MAX_READS`` reads;
* parameters are ``keyword=value`` separated by commas; a value may be a parenthesised list
  ``(a,b,c)``; double quotes protect blanks, commas, ``=`` and ``-`` (``sd=("sd*")``);
* in a list, ``a-b`` is a range: ``(1-64,d)`` doubles, ``(10-100,10)`` steps by 10,
  ``(sd1-sd4)`` counts names (``Var_parms.java``); host names are never ranges;
* a number is ASCII digits with an optional fraction and exponent (Python's ``float()`` would
  take ``inf``, ``nan`` and ``1_0``), finite; a range is counted before it is expanded, and
  one of more than ``MAX_VALUES`` values is refused (``forthreads=(1-1000000,1)``);
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

import math
import re
from collections.abc import Iterable, Iterator

from assay.errors import ParseError
from assay.vdbench.definitions import Param, ParamElement, Seek, Where
from assay.vdbench.keywords import TIME_KEYS, resolve_keyword
from assay.vdbench.lines import SourceLine, cut_comment

# ---------------------------------------------------------------------------- reading


# Values of one list, ranges expanded: each value of a for-loop is a run, so a list is held to
# the jobs of a plan (plan.bounds.MAX_JOBS, a later stage: tests/inputs/test_vdbench.py keeps
# the two equal).
MAX_VALUES = 200_000
# A Vdbench number as Vdbench writes it (Double.parseDouble of digits): ASCII only.
NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?")


def param_statements(lines: list[SourceLine]) -> Iterable[tuple[str, Where]]:
    """Parameters (``keyword=value`` text, place) in order; a trailing comma joins lines."""
    i = 0
    while i < len(lines):
        pieces = [(cut_comment(lines[i].text, lines[i].where), lines[i].where)]
        while pieces[-1][0].endswith(",") and i + 1 < len(lines):
            i += 1
            pieces.append((cut_comment(lines[i].text, lines[i].where), lines[i].where))
        i += 1
        # character offset -> where, so each parameter keeps the line it starts on
        text = ""
        starts: list[tuple[int, Where]] = []
        for piece, where in pieces:
            starts.append((len(text), where))
            text += piece
        yield from _split_params(text, starts)


class _Unbalanced(Exception):
    """A parenthesis without its pair, at ``offset``."""

    def __init__(self, char: str, offset: int) -> None:
        super().__init__(char)
        self.char, self.offset = char, offset


def _top_level_pieces(text: str, *, strict: bool) -> Iterator[tuple[int, str]]:
    """(offset, piece) of ``text`` split at the commas outside quotes and parentheses, as
    Vdbench reads a parameter line and a value list; empty pieces are skipped. ``strict``:
    an unbalanced parenthesis raises ``_Unbalanced`` (a value list only needs the split)."""
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
            if depth < 0 and strict:
                raise _Unbalanced(")", i)
        elif ch == "," and depth == 0:
            if text[begin:i]:
                yield begin, text[begin:i]
            begin = i + 1
    if depth > 0 and strict:
        raise _Unbalanced("(", begin)


def _split_params(text: str, starts: list[tuple[int, Where]]) -> Iterable[tuple[str, Where]]:
    def where_at(offset: int) -> Where:
        current = starts[0][1]
        for start, where in starts:
            if start <= offset:
                current = where
        return current

    try:
        for begin, piece in _top_level_pieces(text, strict=True):
            yield piece, where_at(begin)
    except _Unbalanced as exc:
        w = where_at(exc.offset)
        why = f"unmatched parenthesis '{exc.char}'"
        raise ParseError(why, source=w.file, line=w.line) from None


def _split_items(value: str, where: Where) -> tuple[ParamElement, ...]:
    if not value.startswith("("):
        return (_item(value, listed=False),)
    if not value.endswith(")"):
        raise ParseError(f"text after ')' in {value!r}", source=where.file, line=where.line)
    pieces = _top_level_pieces(value[1:-1], strict=False)
    return tuple(_item(piece, listed=True) for _, piece in pieces)


def _item(text: str, *, listed: bool) -> ParamElement:
    if '"' in text:
        return ParamElement(text.replace('"', ""), quoted=True, listed=listed)
    return ParamElement(text, listed=listed)


def read_param(text: str, where: Where, table: Iterable[str], context: str) -> Param:
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
    name = resolve_keyword(keyword, table)
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
    """A Vdbench number (Vdb_scan.parms_alfa_or_num / not_numeric), or None for text (``inf``
    and ``nan`` too: no Vdbench value is either)."""
    value = _plain(text)
    if value is not None:
        return value
    if len(text) < 2:
        return None
    lower = text.lower()
    # "kb", "mb", ... are the same as "k", "m" (Vdb_scan.not_numeric)
    if lower.endswith("b") and len(lower) > 2:
        tail, front = lower[-2], lower[:-2]
    else:
        tail, front = lower[-1], lower[:-1]
    minutes = keyword in TIME_KEYS
    factor = {
        "k": 1024.0,
        "m": 60.0 if minutes else 1024.0**2,
        "g": 1024.0**3,
        "t": 1024.0**4,
        "h": 3600.0,
    }.get(tail)
    value = _plain(front)
    if factor is None or value is None or not math.isfinite(value * factor):
        return None
    return value * factor


def _plain(text: str) -> float | None:
    """An ASCII number, finite, or None."""
    if len(text) > 64 or not NUMBER.fullmatch(text):
        return None
    value = float(text)
    return value if math.isfinite(value) else None


def _range_size(start: float, end: float, step: float) -> float:
    return (end - start) / step + 1 if end >= start else 1


def _is_range(item: ParamElement) -> bool:
    return item.listed and not item.quoted and "-" in item.text[1:]


def numbers_of(param: Param) -> list[float]:
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
                raise bad_value(param, f"range {item.text!r} needs a step or 'd' after it")
            step_item = items[i + 1]
            out.append(start)
            if step_item.text.lower() == "d":
                value = start
                if start <= end:
                    while value * 2 <= end and value > 0:
                        value *= 2
                        out.append(value)
                else:
                    if end <= 0:  # halving towards 0 never reaches it: it never ended
                        raise bad_value(param, f"range {item.text!r} halves down to {end:g}")
                    while value / 2 >= end:
                        value /= 2
                        out.append(value)
            else:
                step = _num(step_item.text, param)
                if step <= 0:
                    raise bad_value(param, f"range step {step_item.text!r} must be positive")
                if len(out) + _range_size(start, end, step) > MAX_VALUES:  # counted first
                    raise bad_value(param, f"more than {MAX_VALUES} values in one list")
                value = start + step
                while value <= end:
                    out.append(value)
                    value += step
            i += 2
            continue
        out.append(_num(item.text, param))
        i += 1
    if not out:
        raise bad_value(param, "a number is required")
    return out


def _num(text: str, param: Param) -> float:
    value = _number(text, param.name)
    if value is None:
        raise bad_value(param, f"expected a number, found {text!r}")
    return value


def one_number(param: Param) -> float:
    values = numbers_of(param)
    if len(values) != 1:
        raise bad_value(param, "takes one value")
    return values[0]


def name_list(param: Param) -> list[str]:
    """Text values, name ranges (sd1-sd4) expanded (Var_parms.handle_alpha)."""
    out: list[str] = []
    for item in param.items:
        if _is_range(item) and param.name not in ("host", "hd", "system", "lun"):
            first, last = item.text.split("-", 1)
            m1 = re.fullmatch(r"(.*?)([0-9]+)", first)
            m2 = re.fullmatch(r"(.*?)([0-9]+)", last)
            if m1 and m2 and m1[1] == m2[1] and len(m1[2]) <= 18 >= len(m2[2]):
                lo, hi = int(m1[2]), int(m2[2])
                if lo < hi and len(out) + hi - lo + 1 > MAX_VALUES:  # counted first
                    raise bad_value(param, f"more than {MAX_VALUES} names in one list")
                if lo < hi:
                    out += [f"{m1[1]}{n}" for n in range(lo, hi + 1)]
                    continue
            if m1 and m2:
                raise bad_value(param, f"name range {item.text!r} must count up with one prefix")
        out.append(item.text)
    if not out:
        raise bad_value(param, "a value is required")
    return out


def text_of(param: Param) -> str:
    names = [item.text for item in param.items]
    if len(names) != 1 or not names[0]:
        raise bad_value(param, "takes one value")
    return names[0]


def bad_value(param: Param, message: str) -> ParseError:
    return ParseError(
        f"{param.keyword}={param.value}: {message}",
        source=param.where.file,
        line=param.where.line,
    )


def seek_of(text: str, param: Param) -> Seek:
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
        raise bad_value(
            param, f"seekpct is a percentage, 'sequential', 'random' or 'eof': {text!r}"
        )
    if value < 0:
        return "eof"  # WD_entry: "-1: seek=eof, pure sequential"
    if value > 100:
        raise bad_value(param, "seekpct is a percentage (0-100)")
    return value


def seek_items(param: Param) -> Seek:
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
            seek = seek_of(item.text, param)
    return seek


def wildcard_match(pattern: str, name: str) -> bool:
    """common.simple_wildcard: only a trailing '*' is a wildcard."""
    if pattern.endswith("*"):
        return name.startswith(pattern[:-1])
    return pattern == name
