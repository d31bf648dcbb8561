"""A reference set written from a stored run's figures (``assay references add --from RUN``).

The file is ordinary reference TOML, so a user can edit it (add tolerances, drop figures) and it
is read back by the same loader; values are written in each metric's display unit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from assay.model import Stats
from assay.textutil import toml_string
from assay.units import to_display


@dataclass(frozen=True)
class RunFigure:
    metric: str
    probe: str
    params: dict[str, Any]  # identity params only: what was measured, not how the run went
    value: float  # canonical
    unit: str  # display unit to write it in
    stats: Stats | None = None


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return repr(v)
    if isinstance(v, float):
        return repr(float(f"{v:.10g}"))  # 0.064966944548, not 0.06496694454799999
    # not JSON's quoting: JSON leaves DEL raw and writes U+1F600 as a surrogate pair, both
    # invalid in TOML
    return toml_string(v)


def _inline(d: dict[str, Any]) -> str:
    return "{ " + ", ".join(f"{toml_string(k)} = {_toml_value(v)}" for k, v in d.items()) + " }"


def _node_lines(node: dict[str, Any]) -> list[str]:
    """The ``[node]`` table: words and counts as keys, MPIs as an array, links inline."""
    lines = ["", "[node]"]
    for key, value in node.items():
        if isinstance(value, list):
            lines.append(f"{key} = [{', '.join(toml_string(str(v)) for v in value)}]")
        elif isinstance(value, dict):
            lines.append(f"{key} = {_inline(value)}")
        else:
            lines.append(f"{key} = {_toml_value(value)}")
    return lines


def to_toml(
    name: str,
    title: str,
    *,
    system: str,
    source: str,
    date: str,
    figures: list[RunFigure],
    node: dict[str, Any] | None = None,
) -> str:
    lines = [
        f"# Written by 'assay references add' from {source}; edit freely.",
        f"name = {_toml_value(name)}",
        f"title = {_toml_value(title)}",
        'publisher = "assay"',
        f"date = {_toml_value(date)}",
        f"system = {_toml_value(system)}",
        f"source = {_toml_value(source)}",
        "",
        "[tolerance]",
        "default = { lower = -0.05, upper = 0.05 }",
    ]
    if node:
        lines += _node_lines(node)
    for f in figures:
        value = to_display(f.value, f.unit)
        lines += [
            "",
            "[[point]]",
            f"metric = {_toml_value(f.metric)}",
            f"probe = {_toml_value(f.probe)}",
        ]
        if f.params:
            lines.append(f"params = {_inline(f.params)}")
        lines += [f"value = {_toml_value(value)}", f"unit = {_toml_value(f.unit)}"]
        if f.stats is not None:
            stats = {
                k: (v if k == "n" else to_display(v, f.unit))
                for k, v in f.stats.to_dict().items()
                if k in ("n", "min", "max", "mean", "median", "stddev")
            }
            lines.append(f"stats = {_inline(stats)}")
    return "\n".join(lines) + "\n"
