"""A suite as TOML text that ``assay run FILE.toml`` reads back to the same suite: what a run
keeps as ``suite.toml`` when its suite was made or changed by assay (a Vdbench file, an
all-pairs run), with why in comments."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from assay.suite.schema import SuiteSpec

_BARE = re.compile(r"^[A-Za-z0-9_-]+$")


def _key(name: str) -> str:
    return name if _BARE.match(name) else json.dumps(name)


def _value(value: Any) -> str:
    """A TOML value: JSON's string escapes are TOML's basic-string escapes."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value) if isinstance(value, float) else str(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, Mapping):
        inner = ", ".join(f"{_key(k)} = {_value(v)}" for k, v in value.items() if v is not None)
        return "{ " + inner + " }" if inner else "{}"
    raise TypeError(f"no TOML for {type(value).__name__}")


def _is_table_list(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, Mapping) for v in value)


def _table(lines: list[str], header: str, mapping: Mapping[str, Any], path: str) -> None:
    """``[header]`` (or ``[[header]]``) with its plain keys, then its arrays of tables."""
    lines.append(header)
    nested = []
    for k, v in mapping.items():
        if v is None:
            continue
        if _is_table_list(v):
            nested.append((k, v))
        else:
            lines.append(f"{_key(k)} = {_value(v)}")
    for k, items in nested:
        for item in items:
            lines.append("")
            _table(lines, f"[[{path}.{_key(k)}]]", item, f"{path}.{_key(k)}")


def suite_toml(spec: SuiteSpec, comments: list[str] | None = None) -> str:
    """The suite as TOML, ``comments`` (lines) first."""
    lines = [f"# {line}" for line in (comments or [])]
    if lines:
        lines.append("")
    lines += [f"name = {_value(spec.name)}", f"description = {_value(spec.description)}"]
    lines.append(f"repeat = {spec.repeat}")
    for bench in spec.bench:
        lines.append("")
        lines.append("[[bench]]")
        data = bench.model_dump(exclude_none=True, exclude_defaults=True)
        data["probe"] = bench.probe
        params = data.pop("params", {})
        for k, v in data.items():
            lines.append(f"{_key(k)} = {_value(v)}")
        lines.append("")
        _table(lines, "[bench.params]", params, "bench.params")
    return "\n".join(lines) + "\n"
