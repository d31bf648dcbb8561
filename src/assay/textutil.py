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
