"""Every benchmark, one after the other (`make bench`). Each prints its own figures."""

from __future__ import annotations

import runpy
import sys
from pathlib import Path

HERE = Path(__file__).parent
BENCHES = [
    "startup_and_store.py",
    "p2p_vs_hpcc.py",
    "stream_vs_hpcc.py",
    "fio_overhead.py",
    "outlier_rule.py",
]

if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    wanted = sys.argv[1:] or BENCHES
    for name in wanted:
        print(f"== {name}")
        runpy.run_path(str(HERE / name), run_name="__main__")
