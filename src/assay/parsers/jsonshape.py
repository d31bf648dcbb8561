"""The shape of a JSON document a parser reads: each field the type the tool writes, or a
ParseError naming the field (never a TypeError deep in a parser, nor a value of the wrong
type stored, to crash a report later). Numbers: ``numbers.json_number``/``json_int``."""

from __future__ import annotations

from typing import Any

from assay.errors import ParseError


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def json_text(value: Any, *, source: str, what: str) -> str:
    """A string field."""
    if not isinstance(value, str):
        raise ParseError(f"{what} is {_shown(value)}, not a string", source=source)
    return value


def json_object(value: Any, *, source: str, what: str) -> dict[str, Any]:
    """An object field."""
    if not isinstance(value, dict):
        raise ParseError(f"{what} is {_shown(value)}, not an object", source=source)
    return value


def json_list(value: Any, *, source: str, what: str) -> list[Any]:
    """A list field."""
    if not isinstance(value, list):
        raise ParseError(f"{what} is {_shown(value)}, not a list", source=source)
    return value


def json_text_map(value: Any, *, source: str, what: str) -> dict[str, str]:
    """An object whose every value is a string (fio's job options)."""
    for key, item in json_object(value, source=source, what=what).items():
        json_text(item, source=source, what=f"{what} {key!r}")
    return value


def json_scalar(value: Any, *, source: str, what: str) -> Any:
    """A string, a number, true/false or null, or a list of those: what a stored sample's
    params hold (no object, no list of lists)."""
    if value is None or isinstance(value, str | bool | int | float):
        return value
    if isinstance(value, list) and all(
        v is None or isinstance(v, str | bool | int | float) for v in value
    ):
        return value
    raise ParseError(
        f"{what} is {_shown(value)}: not a value a sample's params hold", source=source
    )
