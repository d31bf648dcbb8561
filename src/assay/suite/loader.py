"""Reading suites: built-in by name, or a TOML file, with errors that name file, line and key."""

from __future__ import annotations

import re
import tomllib
from importlib import resources
from pathlib import Path

from pydantic import ValidationError

from assay.errors import SuiteError
from assay.inputfile import MAX_TEXT_BYTES, exists, load_toml, read_bounded
from assay.suite.schema import SuiteSpec


def builtin_suites() -> dict[str, str]:
    """Built-in suite name -> its TOML text."""
    folder = resources.files("assay") / "suite" / "builtin"
    return {
        entry.name.removesuffix(".toml"): entry.read_text()
        for entry in folder.iterdir()
        if entry.name.endswith(".toml")
    }


def resolve_suite(name_or_path: str) -> tuple[SuiteSpec, str, str]:
    """(suite, its TOML text, where it came from) for a built-in name or a file path."""
    builtins = builtin_suites()
    if name_or_path in builtins:
        text = builtins[name_or_path]
        return load_suite(text, f"<built-in suite {name_or_path}>"), text, name_or_path
    path = Path(name_or_path)
    if not exists(path):  # a 300-character name: ENAMETOOLONG from Path.exists
        raise SuiteError(
            f"no suite named {name_or_path!r}: not a built-in suite nor a file",
            hint=f"built-in suites: {', '.join(sorted(builtins))}",
        )
    try:
        text = read_bounded(path, MAX_TEXT_BYTES, "suite file").decode()
    except OSError as exc:
        raise SuiteError(f"{path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise SuiteError(f"{path}: not UTF-8 text (at byte {exc.start})") from None
    return load_suite(text, str(path)), text, str(path)


def load_suite(text: str, source: str = "<suite>") -> SuiteSpec:
    try:
        data = load_toml(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib's message already ends with "(at line N, column M)".
        raise SuiteError(f"{source}: TOML syntax error: {exc}") from None
    try:
        return SuiteSpec.model_validate(data)
    except ValidationError as exc:
        raise SuiteError(_describe(exc, text, source)) from None


def _describe(exc: ValidationError, text: str, source: str) -> str:
    lines = []
    for err in exc.errors():
        loc = err["loc"]
        key = ".".join(f"[{p + 1}]" if isinstance(p, int) else str(p) for p in loc)
        key = key.replace(".[", "[")
        line = _line_of(text, loc)
        where = f"{source}:{line}" if line else source
        what = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        lines.append(f"{where}: {key}: {what}")
    return "invalid suite\n  " + "\n  ".join(lines)


def _line_of(text: str, loc: tuple) -> int | None:
    """The line where the innermost named key of ``loc`` is written, within its [[bench]] block."""
    rows = text.splitlines()
    start, end = 0, len(rows)
    if len(loc) >= 2 and loc[0] == "bench" and isinstance(loc[1], int):
        headers = [i for i, r in enumerate(rows) if re.match(r"\s*\[\[\s*bench\s*\]\]", r)]
        if loc[1] < len(headers):
            start = headers[loc[1]]
            end = headers[loc[1] + 1] if loc[1] + 1 < len(headers) else len(rows)
    names = [p for p in loc if isinstance(p, str)]
    for name in reversed(names):
        pattern = re.compile(rf"(^|[\s{{,]){re.escape(name)}\s*=")
        for i in range(start, end):
            if pattern.search(rows[i]):
                return i + 1
    return start + 1 if start else None
