"""Slurm's host lists and switch tree, and the all-pairs matrix by switch.

The host list expander is held against Slurm's own ``scontrol show hostnames`` (Slurm 22.05
here; it needs a slurm.conf but no controller, so the test writes a minimal one). The topology
parsers read real ``scontrol show topology`` output (tests/fixtures/slurm/topology, captured
from a private slurmctld with the tree plugin by capture.sh there) and the topology.conf files
it was made from.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from assay.analysis.matrix.allpairs import analyse
from assay.report.allpairs import allpairs_tables
from assay.system.hostlist import HostlistError, compress_hostlist, expand_hostlist
from assay.system.topology import (
    Topology,
    TopologyError,
    parse_show_topology,
    parse_topology_conf,
)
from matrixgen import synthetic

FIX = Path(__file__).parents[1] / "fixtures" / "slurm" / "topology"

HOSTLISTS = [
    "a[1-3,5],b[01-02]",
    "x[9-11]",
    "x[001-5]",
    "x[1-010]",
    "x[098-101]",
    "n[05]",
    "x[0-0]",
    "a1,a1",
    "[1-3]",
    "a,,b",
    "a[1-2],",
    " a1 , a2",
    "a b",
    "a[01-02,7,10-11]",
    "A[1-2]",
    "a[1-2]b[3-4]",
    "ab[1-2]-[3-4]",
    "rack[1-2]-n[1-2]-g[1-2]",
    "a[1-2]b[1-3]c[1-2]d[1-2]",
    "a[1-2],b[1-2]c[3-4]",
    # refused by Slurm too
    "a[3-1]",
    "a[1-10:2]",
    "a[]",
    "a[1-2]]",
    "a[1-3]b",
    "a[1-2]x,b",
    "a-[1-2].b",
]


@pytest.fixture(scope="module")
def scontrol_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    if shutil.which("scontrol") is None:
        pytest.fail("scontrol is not installed: scripts/install-system-deps installs slurm-wlm")
    conf = tmp_path_factory.mktemp("slurm") / "slurm.conf"
    conf.write_text("ClusterName=hostlists\nSlurmctldHost=localhost\n")
    return {**os.environ, "SLURM_CONF": str(conf)}


@pytest.mark.parametrize("expr", HOSTLISTS)
def test_hostlist_expands_as_scontrol_does(expr: str, scontrol_env: dict[str, str]) -> None:
    proc = subprocess.run(["scontrol", "show", "hostnames", expr], capture_output=True,
                          text=True, env=scontrol_env, check=False)  # fmt: skip
    refused = "Invalid" in proc.stdout + proc.stderr
    if refused:
        with pytest.raises(HostlistError):
            expand_hostlist(expr)
    else:
        assert expand_hostlist(expr) == proc.stdout.split()


@pytest.mark.parametrize(
    ("hosts", "as_slurm_sorts"),
    [([f"anode{i}" for i in (3, 1, 2, *range(5, 17))], True), (["a1", "a3", "a2", "a10"], True),
     ([f"c{i}" for i in range(10000)], True), (["solo"], True),
     # Slurm sorts prefixes by name and mixes widths in one bracket: the same hosts, other words
     (["n001", "n002", "n003", "login", "n010"], False), (["n9", "n10", "n08"], False)],
)  # fmt: skip
def test_a_compressed_hostlist_is_read_back_by_scontrol(
    hosts: list[str], as_slurm_sorts: bool, scontrol_env: dict[str, str]
) -> None:
    def scontrol(*args: str) -> str:
        return subprocess.run(["scontrol", "show", *args], capture_output=True, text=True,
                              env=scontrol_env, check=True).stdout  # fmt: skip

    short = compress_hostlist(hosts)
    assert sorted(scontrol("hostnames", short).split()) == sorted(hosts)
    if as_slurm_sorts:
        assert short == scontrol("hostlistsorted", ",".join(hosts)).strip()


def test_hostlist_errors_say_what_is_wrong() -> None:
    with pytest.raises(HostlistError, match=r"invalid range '3-1' in the host list 'a\[3-1\]'"):
        expand_hostlist("a[3-1]")
    with pytest.raises(HostlistError, match="a bracket left open"):
        expand_hostlist("a[1-2")


def test_show_topology_and_the_conf_it_came_from_agree() -> None:
    for name in ("two_level", "three_level"):
        shown = parse_show_topology((FIX / f"{name}.txt").read_text())
        conf = parse_topology_conf((FIX / f"{name}.conf").read_text())
        assert shown is not None
        assert shown.leaf_of() == conf.leaf_of()
        assert shown.parent() == conf.parent()
        assert [s.name for s in shown.leaves()] == [s.name for s in conf.leaves()]
    three = parse_show_topology((FIX / "three_level.txt").read_text())
    assert three is not None
    assert three.leaf_of()["gpu2"] == "s4" and three.parent()["s4"] == "agg2"
    assert three.below("agg1") == ["s1", "s2"] and three.switches["spine"].level == 2
    assert three.switches["spine"].nodes == []  # scontrol lists the nodes below, not its own


def test_no_topology_plugin_is_no_topology() -> None:
    assert parse_show_topology((FIX / "none.txt").read_text()) is None


def test_a_broken_topology_conf_names_file_and_line() -> None:
    with pytest.raises(TopologyError, match=r"topo.conf:3: invalid range '4-2'"):
        parse_topology_conf("# c\nSwitchName=a Nodes=n1\nSwitchName=b Nodes=n[4-2]\n", "topo.conf")
    with pytest.raises(TopologyError, match="never defined: leaf9"):
        parse_topology_conf("SwitchName=s Switches=leaf9\n")
    with pytest.raises(TopologyError, match=r":2: switch a named twice"):
        parse_topology_conf("SwitchName=a Nodes=n1\nswitchname=a nodes=n2\n")
    conf = parse_topology_conf("SwitchName=a Nodes=n1,\\\n  n2 # two lines\n")
    assert conf.leaf_of() == {"n1": "a", "n2": "a"}


def _tree(n: int, per: int, spine_groups: list[list[int]] | None = None) -> Topology:
    """Leaves s1.. of ``per`` nodes (node0001 …), under one spine or under aggregation
    switches (``spine_groups``: the leaves of each)."""
    hosts = [f"node{i:0{len(str(n))}d}" for i in range(1, n + 1)]
    lines = [f"SwitchName=s{k + 1} Nodes={','.join(hosts[i : i + per])}"
             for k, i in enumerate(range(0, n, per))]  # fmt: skip
    leaves = len(lines)
    if spine_groups:
        for g, members in enumerate(spine_groups):
            lines.append(f"SwitchName=agg{g + 1} Switches={','.join(f's{m}' for m in members)}")
        lines.append(f"SwitchName=spine Switches=agg[1-{len(spine_groups)}]")
    else:
        lines.append(f"SwitchName=spine Switches=s[1-{leaves}]")
    return parse_topology_conf("\n".join(lines))


def test_a_slow_uplink_is_named_as_one_not_as_many_slow_links() -> None:
    n, per = 80, 8  # ten leaf switches of eight nodes
    topo = _tree(n, per)
    lm = synthetic(n, sigma=0.03, slow_groups=[(range(24, 32), 2.5)], slow_links=[(0, 70, 5.0)])
    pm = analyse(lm, topology=topo)
    assert pm.switches is not None
    (part,) = pm.switches.slow
    assert (part.kind, part.switch, part.links) == ("uplink", "s4", 8 * 72)
    assert [o.key for o in pm.link_outliers] == [(lm.hosts[0], lm.hosts[70])]  # the one link
    assert pm.explained == 8 * 72
    assert sorted(pm.explained_nodes) == lm.hosts[24:32] and pm.node_outliers == []
    tables = allpairs_tables([pm])
    notes = "\n".join(tables[0].notes)
    assert "SLOW UPLINK of switch s4: every link from below it to the rest is slow" in notes
    assert "576 flagged links lie on these and are not named one by one" in notes
    nodes = next(t for t in tables if t.key.endswith("-nodes"))
    assert nodes.rows[0][-1] == "slow through its switch's uplink"
    worst = next(t for t in tables if t.key.endswith("-worst"))
    assert {r[-1] for r in worst.rows} <= {"on a slow uplink", "OUTLIER"}
    switches = next(t for t in tables if t.key.endswith("-switches"))
    assert [r[0] for r in switches.rows] == [f"s{k}" for k in range(1, 11)]
    assert switches.rows[3][-1] == "576"
    pairs = next(t for t in tables if t.key.endswith("-switch-pairs"))
    assert pairs.columns == ["switch", *[f"s{k}" for k in range(1, 11)]]


def test_an_aggregation_uplink_and_a_path_between_two_halves() -> None:
    n, per = 64, 8  # eight leaves of eight nodes
    lm = synthetic(n, sigma=0.03, slow_groups=[(range(0, 16), 3.0)])  # s1 and s2 to the rest
    # under three aggregation switches: agg1's uplink (above s1, s2), the others' links fine
    pm = analyse(lm, topology=_tree(n, per, [[1, 2], [3, 4, 5], [6, 7, 8]]))
    assert pm.switches is not None
    (part,) = pm.switches.slow
    assert (part.kind, part.switch, part.links) == ("uplink", "agg1", 16 * 48)
    assert pm.link_outliers == [] and pm.node_outliers == []
    assert "SLOW UPLINK of switch agg1" in "\n".join(allpairs_tables([pm])[0].notes)
    # under two: the spine joins agg1 and agg2, and either uplink could be the slow one
    pm = analyse(lm, topology=_tree(n, per, [[1, 2], [3, 4, 5, 6, 7, 8]]))
    assert pm.switches is not None
    (part,) = pm.switches.slow
    assert (part.kind, part.switch, part.other) == ("path", "agg1", "agg2")
    notes = "\n".join(allpairs_tables([pm])[0].notes)
    assert "SLOW PATH between switches agg1 and agg2" in notes


def test_a_slow_pair_of_switches_no_uplink_explains() -> None:
    n, per = 48, 8
    topo = _tree(n, per)
    lm = synthetic(n, sigma=0.03)
    inside, other = np.arange(8, 16), np.arange(32, 40)  # s2 against s5 only
    from assay.condensed import link_index

    k = link_index(n, inside[:, None], other[None, :]).ravel()
    lm.values[k] /= 3
    pm = analyse(lm, topology=topo)
    assert pm.switches is not None
    (part,) = pm.switches.slow
    assert (part.kind, part.switch, part.other, part.links) == ("pair", "s2", "s5", 64)
    assert pm.link_outliers == []


def test_a_topology_of_another_cluster_is_refused_and_missing_nodes_said() -> None:
    lm = synthetic(10, sigma=0.03)
    wrong = parse_topology_conf("SwitchName=s1 Nodes=gpu[1-8]\n", "topology.conf")
    with pytest.raises(TopologyError, match=r"names none of the run's 10 nodes: it names gpu1"):
        analyse(lm, topology=wrong)
    part = parse_topology_conf(
        f"SwitchName=s1 Nodes={','.join(lm.hosts[:5])},other1,other2\n"
        f"SwitchName=s2 Nodes={','.join(lm.hosts[5:8])}\n"
    )
    pm = analyse(lm, topology=part)
    assert pm.switches is not None
    assert pm.switches.unplaced == lm.hosts[8:] and pm.switches.outside == 2
    notes = "\n".join(next(t for t in allpairs_tables([pm]) if "switches" in t.key).notes)
    assert f"2 node(s) of the run are in no switch of the topology: {lm.hosts[8]}" in notes
    assert "2 node(s) of the topology are not in this run (left out)." in notes


@pytest.mark.slow
def test_the_collector_reads_a_real_controllers_topology(tmp_path: Path) -> None:
    """capture.sh starts a private slurmctld (its own munged and port) per topology: Slurm's
    output today is the committed fixture's, and the collector returns it (None without a
    topology plugin)."""
    import sys

    for tool in ("slurmctld", "munged", "mungekey"):
        if shutil.which(tool) is None:
            pytest.fail(f"{tool} is not installed: scripts/install-system-deps installs it")
    env = {**os.environ, "ASSAY_PYTHON": sys.executable}
    subprocess.run([str(FIX / "capture.sh"), str(tmp_path)], env=env, check=True, timeout=120)
    for name in ("two_level.txt", "three_level.txt", "none.txt"):
        assert (tmp_path / name).read_text() == (FIX / name).read_text()
    assert (tmp_path / "collected_two_level.txt").read_text() == (FIX / "two_level.txt").read_text()
    assert (tmp_path / "collected_none.txt").read_text() == "None"


def test_past_64_switches_a_heatmap_cell_shows_its_worst_switch_pair() -> None:
    n, per = 160, 2  # 80 leaf switches: two a cell
    lm = synthetic(n, sigma=0.03, slow_groups=[(range(4, 6), 3.0)])  # s3's uplink
    pm = analyse(lm, topology=_tree(n, per))
    assert pm.heat is not None and len(pm.heat.labels) == 40
    assert pm.heat.labels[1] == "s3–s4" and "the worst of the switch-pair medians" in pm.heat.cells
    row = pm.heat.median[1]
    healthy = np.delete(pm.heat.median, 1, axis=0)[:, 2:]
    assert np.nanmax(row[2:]) < 0.4 * np.nanmin(healthy)  # the slow uplink: a stripe


def test_a_host_list_is_counted_before_it_is_expanded() -> None:
    """``Nodes=node[01-99999999]`` in a run's topology.txt was 10^8 names made before anything
    looked at them (minutes, gigabytes); a list is counted first and held to the largest
    allocation, a file to ten levels of it. A numeral too long for int() is refused too."""
    import time

    from assay.system.hostlist import MAX_HOSTS, count_hostlist

    started = time.perf_counter()
    assert count_hostlist("node[01-99999999],x[1-2]-y[1-3]") == 99_999_999 + 6
    with pytest.raises(HostlistError, match="names 99,999,999 hosts: more than 200,000"):
        expand_hostlist("node[01-99999999]")
    with pytest.raises(TopologyError, match=r"topology.txt:2: .*more than 200,000"):
        parse_show_topology("SwitchName=s0 Level=0 Nodes=a1\nSwitchName=s1 Level=0 "
                            "Nodes=node[01-99999999]\n", "topology.txt")  # fmt: skip
    with pytest.raises(HostlistError, match="invalid range"):
        expand_hostlist("n[" + "9" * 5000 + "]")
    with pytest.raises(HostlistError, match="invalid range"):
        expand_hostlist("n[\u0663]")  # an Arabic-Indic 3: not a Slurm number
    assert time.perf_counter() - started < 2
    assert len(expand_hostlist(f"n[1-{MAX_HOSTS}]")) == MAX_HOSTS
    lines = [f"SwitchName=s{i} Level=0 Nodes=n{i}x[1-{MAX_HOSTS}]" for i in range(11)]
    with pytest.raises(TopologyError, match=r":11: .*more than"):
        parse_show_topology("\n".join(lines), "topology.txt")
