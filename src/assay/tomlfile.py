"""TOML text read as one way: ``tomllib.loads`` with its one other failure made a
``TOMLDecodeError``. An integer over Python's 4,300-digit limit is a plain ``ValueError`` from
tomllib (``int()`` refuses it), which every reader that caught ``TOMLDecodeError`` let through
as a traceback (a suite, the config, a reference set, a ``--set`` value)."""

from __future__ import annotations

import tomllib
from typing import Any

TOMLDecodeError = tomllib.TOMLDecodeError


def loads(text: str) -> dict[str, Any]:
    """``tomllib.loads``; any failure a ``TOMLDecodeError`` saying why."""
    try:
        return tomllib.loads(text)
    except TOMLDecodeError:
        raise
    except ValueError as exc:  # int() of a numeral over 4,300 digits
        why = str(exc).split(":", 1)[0]
        raise TOMLDecodeError(f"a number too long to read ({why})") from None
