"""Running a toolchain's own commands to identify it (version texts): never raises."""

from __future__ import annotations

import subprocess


def run_text(argv: list[str], timeout: float = 10.0) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout + proc.stderr


def first_line(argv: list[str]) -> str:
    lines = run_text(argv).splitlines()
    return lines[0] if lines else "unknown"
