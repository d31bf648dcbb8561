"""assay's p2p and collectives probes against HPCC's ping-pong, side by side in one run.

HPCC reports ping-pong latency for 8-byte messages and bandwidth for 2,000,000-byte
messages (min/avg/max over process pairs; with 2 processes there is one pair). assay's p2p
gives the same sizes' figures (8 B, and 2 MiB the nearest power of two). Ratios > 1 for
bandwidth and < 1 for latency mean assay measured the better figure.
"""

from __future__ import annotations

import os

from _common import assay, latest_samples, scratch_home, write_suite

CORES = os.cpu_count() or 1


def pick(samples: list[dict], probe: str, metric: str, **params: object) -> dict:
    for s in samples:
        same = s["probe"] == probe and s["metric"] == metric
        if same and all(s["params"].get(k) == v for k, v in params.items()):
            return s
    raise SystemExit(f"no {probe} {metric} {params}")


def main() -> None:
    home = scratch_home()
    suite = write_suite(
        home,
        'name = "bench-p2p"\n'
        '[[bench]]\nprobe = "p2p"\nmpi = "openmpi"\nsweep = { mode = ["latency", "bandwidth"] }\n'
        '[[bench]]\nprobe = "coll"\nmpi = "openmpi"\nparams = { op = "allreduce", max_size = 8 }\n'
        '[[bench]]\nprobe = "hpcc"\nparams = { n = 2000, nb = 128, ranks = 2 }\n',
    )
    assay("run", str(suite), home=home)
    s = latest_samples(home)
    lat = pick(s, "p2p", "p2p.latency", size=8)
    bw = pick(s, "p2p", "p2p.bandwidth", size=2097152)
    red = pick(s, "coll", "coll.allreduce", size=8)
    h_lat = pick(s, "hpcc", "p2p.latency", stat="avg")
    h_bw = pick(s, "hpcc", "p2p.bandwidth", stat="avg")
    print("                    assay        hpcc      assay/hpcc")
    print(
        f"latency 8 B      {lat['value'] * 1e6:8.3f} us {h_lat['value'] * 1e6:8.3f} us"
        f"   {lat['value'] / h_lat['value']:6.3f}  (median {lat['stats']['median'] * 1e6:.3f} us)"
    )
    print(
        f"bandwidth 2 MB   {bw['value'] / 1e6:8.0f} MB/s {h_bw['value'] / 1e6:6.0f} MB/s"
        f"   {bw['value'] / h_bw['value']:6.3f}  (assay 2 MiB osu_bw window; hpcc 2e6 B ping-pong)"
    )
    print(f"allreduce 8 B    {red['value'] * 1e6:8.3f} us   (no HPCC counterpart)")


if __name__ == "__main__":
    main()
