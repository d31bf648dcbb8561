"""User configuration and locations: ``ASSAY_HOME`` and ``~/.config/assay/config.toml``.

A file that is not UTF-8 TOML is a ``ConfigError`` naming it (exit 2), never a traceback.
Each table is declared by its owner (``assay.config.schema``: the mechanism), who checks it
when it reads it; the whole file, every owner's table at once and no section nobody declared,
is checked against the schema the edges assemble (``assay.run.configfile.load_config``).
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from assay.errors import ConfigError
from assay.inputfile import InputTooLarge, load_toml, read_bounded


def assay_home() -> Path:
    """Where runs, the index and the build cache live (``$ASSAY_HOME``)."""
    env = os.environ.get("ASSAY_HOME")
    if env:
        return Path(env).expanduser()
    data = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data) / "assay"


def config_path() -> Path:
    env = os.environ.get("ASSAY_CONFIG")
    if env:
        return Path(env).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "assay" / "config.toml"


# A config is a few dozen lines; more than this is not a config (or /dev/zero).
MAX_CONFIG_BYTES = 1 << 20


def read_config(path: Path | None = None) -> dict[str, Any]:
    """The user's config as TOML, or {} when there is none; each owner checks its own table as
    it reads it (``assay.run.configfile.load_config`` checks the whole file). A malformed file
    is an error, not ignored."""
    path = path or config_path()
    try:
        if not path.exists():
            return {}
        # the user's own file: a device is read to the bound, a FIFO without its wait in open
        data = read_bounded(path, MAX_CONFIG_BYTES, "config", regular=False)
    except InputTooLarge:
        raise ConfigError(
            f"{path}: larger than {MAX_CONFIG_BYTES} bytes: not a config file"
        ) from None
    except OSError as exc:  # another user's home (a check run as a service user): say so
        raise ConfigError(
            f"{path}: cannot read the config: {exc.strerror or exc}",
            hint="set ASSAY_CONFIG to a config this user can read",
        ) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(
            f"{path}: not UTF-8 text (byte {exc.start}: {data[exc.start : exc.start + 1]!r})"
        ) from None
    try:
        parsed = load_toml(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    return parsed
