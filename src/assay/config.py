"""User configuration and locations: ``ASSAY_HOME`` and ``~/.config/assay/config.toml``."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from assay.errors import ConfigError


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


def load_config(path: Path | None = None) -> dict[str, Any]:
    """The user's config, or {} when there is none. A malformed file is an error, not ignored."""
    path = path or config_path()
    try:
        if not path.exists():
            return {}
        text = path.read_text()
    except OSError as exc:  # another user's home (a check run as a service user): say so
        raise ConfigError(
            f"{path}: cannot read the config: {exc.strerror or exc}",
            hint="set ASSAY_CONFIG to a config this user can read",
        ) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from None
