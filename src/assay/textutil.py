"""Small text helpers more than one stage needs, defined once."""

from __future__ import annotations

import re

_NOT_SLUG = re.compile(r"[^A-Za-z0-9.]+")


def slugify(text: str, *, lower: bool = True, empty: str = "") -> str:
    """``text`` as a name safe in paths and ids: each run of characters other than ASCII
    letters, digits and "." becomes one "-", with none at either end; lower-case unless
    ``lower`` is False; ``empty`` when nothing is left ("Open MPI 4.1" -> "open-mpi-4.1")."""
    slug = _NOT_SLUG.sub("-", text).strip("-")
    return (slug.lower() if lower else slug) or empty


# C0 controls (newline, carriage return, NUL, escape...), DEL and the C1 controls (NEL among
# them): none belongs in a name or an argument, and each can end a line of a script or a file.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def control_character(text: str) -> str | None:
    """The first control character in ``text`` (as ``repr`` shows it, e.g. ``'\\n'``), or
    None. Values that reach a script or a command line are refused when they hold one."""
    m = _CONTROL.search(text)
    return None if m is None else repr(m.group())
