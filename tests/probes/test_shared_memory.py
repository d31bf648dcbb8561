"""Shared memory is not a link (``assay.analysis.derived.shared_memory``): an inter-node latency
below 0.8 µs is flagged and never shown as the link's figure — here in the two-node inter-node
p2p tables, on real output: MPICH 4.0.2 between two ranks of one kernel (UCX took shared memory,
as it does between the test cluster's namespace nodes; tests/fixtures/p2p) beside Open MPI +
UCX over InfiniBand between two real nodes at 1.00 µs (tests/fixtures/osu, Alaska). The
all-pairs matrices' side is in tests/run/test_allpairs_run.py.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from assay.analysis.derived.shared_memory import NETWORK_FLOOR_S, below_network_floor, shared_links
from assay.model import JobResult, System
from assay.parsers import osu
from assay.probes.base import parse_jsonl
from assay.report.render import render
from assay.store import RunStore

FIXTURES = Path(__file__).parents[1] / "fixtures"


def test_the_floor_is_below_every_fabric_and_above_shared_memory() -> None:
    assert NETWORK_FLOOR_S == 0.8e-6
    got = below_network_floor(np.array([0.2e-6, 0.62e-6, 0.79e-6, 0.8e-6, 1.0e-6, np.nan]))
    assert got.tolist() == [True, True, True, False, False, False]
    values = np.full(10, 2e-6, np.float32)
    values[[3, 7]] = 0.4e-6
    values[5] = np.nan
    assert shared_links(values).tolist() == [3, 7]


def _two_node_run(home: Path) -> None:
    writer = RunStore(home).create(suite="network", suite_text="", system=System(), argv=[])
    # the namespace cluster's two-node placement names the two nodes; the fixture's two ranks
    # ran on one machine ("vm"), as the namespaces do on one kernel
    where = {"placement": "inter-node", "nodes": 2, "hosts": ["anode1", "anode2"]}
    text = (FIXTURES / "p2p" / "mpich402_one_kernel_latency.jsonl").read_text()
    mpich = parse_jsonl(text, "p2p", {"mpi": "mpich", "mpi_label": "MPICH 4.0.2"})
    for s in mpich:
        s.params.update(where)
    ib = osu.parse((FIXTURES / "osu" / "alaska_ompi4_ucx_osu_latency.out").read_text()).samples
    for s in ib:
        s.params.update({"mpi_label": "Open MPI 4.0.3", "placement": "inter-node",
                         "hosts": ["alaska1", "alaska2"]})  # fmt: skip
    writer.record(JobResult("001-p2p-mpich", "ok", 0, 1.0, ["p2p"]), mpich)
    writer.record(JobResult("002-osu", "ok", 0, 1.0, ["osu_latency"]), ib)
    writer.finish("complete")


def test_a_two_node_series_through_shared_memory_is_named_not_shown(tmp_path: Path) -> None:
    home = tmp_path / "home"
    _two_node_run(home)
    out = render(RunStore(home).load(None, samples=False), "md")
    latency = out.split("## MPI latency (osu_latency method)", 1)[1].split("\n## ", 1)[0]
    assert "Open MPI 4.0.3, inter-node alaska1–alaska2" in latency  # 1.00 µs: a link
    assert "| 0 | 1.00 |" in latency
    assert "MPICH" not in latency  # 0.31–0.62 µs: not a link's figure
    shm = out.split("## MPI between two nodes: shared memory, not a link", 1)[1]
    assert ("| MPICH 4.0.2, inter-node anode1–anode2 | 0.31 | 16 | shared memory (the nodes "
            "share a kernel?), not a link |") in shm  # fmt: skip
    assert "below 0.80 us is below what any network takes" in shm
    model = out.split("## MPI latency/bandwidth model (Hockney)", 1)[1].split("\n## ", 1)[0]
    assert "MPICH" not in model and "Open MPI 4.0.3" in model
    assert "Other measurements" not in out  # its figures are not shown as anything else
