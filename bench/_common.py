"""Helpers shared by the benchmarks: run assay and read back a run, in a scratch ASSAY_HOME."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def scratch_home() -> Path:
    return Path(tempfile.mkdtemp(prefix="assay-bench-"))


def assay(*args: str, home: Path, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "ASSAY_HOME": str(home)}
    proc = subprocess.run(
        [sys.executable, "-m", "assay", *args], capture_output=True, text=True, env=env, check=False
    )
    if check and proc.returncode != 0:
        raise SystemExit(f"assay {' '.join(args)} failed:\n{proc.stderr}")
    return proc


def latest_samples(home: Path) -> list[dict]:
    return json.loads(assay("report", "-f", "json", home=home).stdout)["samples"]


def write_suite(home: Path, text: str) -> Path:
    path = home / "bench-suite.toml"
    path.write_text(text)
    return path
