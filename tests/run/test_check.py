"""assay check's judging, pure: grades, limits, baselines (a reference set, the peers' median),
node types and inventories, links, retests, the Slurm node actions it plans, and the JUnit and
OpenMetrics files read back by real consumers (junitparser, Prometheus's promtool)."""

from __future__ import annotations

import dataclasses
import math
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

from assay.analysis.check.checklimits import CheckRule, Limits, check_rule, limit_args
from assay.analysis.check.checkrun import (
    BaselineError,
    CheckInput,
    assign,
    judge,
    merged,
    node_table,
    retest_of,
)
from assay.analysis.check.health import (
    drain_reason,
    exit_code,
    grade,
    judge_peers,
    judge_reference,
    node_figures,
    with_retest,
)
from assay.analysis.check.healthlinks import link_verdicts
from assay.analysis.check.nodetype import NodeFacts, inventory_checks, type_mismatch
from assay.analysis.matrix.allpairs import PairMatrix, analyse
from assay.analysis.matrix.linkmatrix import LinkMatrix, Retests, from_pairs
from assay.analysis.statistics.stats import Figure
from assay.errors import ConfigError
from assay.launch.slurm.nodes import NodeState, parse_sinfo, shell_line
from assay.model import JobResult, Sample, Stats
from assay.references.loader import load_file
from assay.run.check.nodes import plan_actions

GB = 1e9
TRIAD = ["memory.triad"]


def node_fig(host: str, metric: str, value: float, probe: str = "stream", **params) -> Figure:
    # as one step over every node records it: each node's figure names its node
    params = {"placement": "per-node", "hosts": [host], "node": host, **params}
    s = Sample.make(probe, metric, value, params)
    return Figure(s, 1, None, (value,))


def matrix(
    hosts: list[str],
    links: dict[tuple[str, str], float],
    retests: dict[tuple[str, str], list[float]] | None = None,
) -> PairMatrix:
    """A bandwidth matrix as the report analyses it (the all-pairs probe's layout), with
    retest rounds of some links (round r: the r-th value of each)."""
    lm = LinkMatrix(hosts, "p2p.bandwidth", "higher", 131072, "OpenMPI 4.1.4",
                    from_pairs(hosts, links))  # fmt: skip
    if retests:
        at = {pair: k for k, pair in enumerate(lm.pair(k) for k in range(lm.values.size))}
        rows = [(at[p], v, r + 1) for p, vs in retests.items() for r, v in enumerate(vs)]
        lm.retests = Retests(np.array([x[0] for x in rows], np.int64),
                             np.array([x[1] for x in rows], float),
                             np.array([x[2] for x in rows], np.int32))  # fmt: skip
    return analyse(lm)


def all_links(hosts: list[str], value) -> dict[tuple[str, str], float]:
    return {(a, b): value(a, b) for i, a in enumerate(hosts) for b in hosts[i + 1 :]}


def facts(host: str, **kw) -> NodeFacts:
    base = dict(cpu_model="AMD EPYC 9654", sockets=2, cores=192, threads=384,
                memory_bytes=768 * 2**30, gpus=0, kernel="6.1.0-18", mpis=("openmpi 4.1.4",),
                links={"ib0": 400e9 / 8})  # fmt: skip
    return NodeFacts(host=host, **{**base, **kw})


def reference(tmp_path: Path, body: str, name: str = "base") -> object:
    path = tmp_path / f"{name}.toml"
    path.write_text(f'title = "accepted"\n{body}')
    return load_file(path)


NODE_TABLE = """
[node]
cpu_model = "AMD EPYC 9654"
sockets = 2
cores = 192
threads = 384
memory_bytes = 824633720832
gpus = 0
kernel = "6.1.0-18"
mpis = ["openmpi 4.1.4"]
links = { "ib0" = 400.0 }
"""
TRIAD_POINT = """
[[point]]
metric = "memory.triad"
params = { "threads" = 192, "scope" = "node" }
value = 700.0
unit = "GB/s"
stats = { "n" = 9, "mean" = 699.0, "stddev" = 2.0, "min" = 695.0, "max" = 702.0 }
"""


# -- the grading rule ---------------------------------------------------------------------


def test_grade_follows_the_limits_and_the_noise() -> None:
    lim = Limits(warn_below=0.95, fail_below=0.90)
    assert grade(1.0, lim, True) == "PASS"
    assert grade(0.93, lim, True) == "WARN"
    assert grade(0.93, lim, False) == "PASS"  # within the noise: not even a warning
    assert grade(0.5, lim, True) == "FAIL"
    assert grade(0.5, lim, None) == "FAIL"  # unknown noise counts against, as compare does
    assert grade(0.5, lim, False) == "WARN"  # below the fail line, but the noise explains it
    assert grade(math.nan, lim, True) == "FAIL"
    assert grade(None, lim, True) == "FAIL"


def test_limits_defaults_config_and_flags() -> None:
    rule = CheckRule()
    assert rule.limits("memory.triad") == Limits(0.95, 0.90)
    assert rule.limits("storage.iops") == Limits(0.80, 0.50)
    assert rule.limits("p2p.bandwidth") == Limits(0.80, 0.50)
    cfg = {"check": {"baseline": ["cpu-a", "gpu-b"], "fail_below": {"memory": 0.8,
           "memory.triad": 0.85}, "warn_below": {"default": 0.97}}}  # fmt: skip
    rule = check_rule(cfg)
    assert rule.baselines == ("cpu-a", "gpu-b")
    assert rule.limits("memory.triad") == Limits(0.97, 0.85)  # the metric wins over its family
    assert rule.limits("memory.copy") == Limits(0.97, 0.80)
    # a fail line above the warn line lifts the warn line with it
    assert CheckRule(fail_below={"default": 0.99}).limits("compute.hpl") == Limits(0.99, 0.99)
    assert limit_args(["0.8", "p2p.latency=0.5"], "--fail-below") == {
        "default": 0.8, "p2p.latency": 0.5}  # fmt: skip
    for bad in ({"check": {"fail_below": {"memory": 1.5}}}, {"check": {"fail_below": 0.9}},
                {"check": {"nope": 1}}, {"check": {"retest": "yes"}}):  # fmt: skip
        with pytest.raises(ConfigError):
            check_rule(bad)
    with pytest.raises(ConfigError, match="METRIC=RATIO"):
        limit_args(["memory.triad=fast"], "--fail-below")


# -- against the peers ---------------------------------------------------------------------


def test_peers_median_names_the_slow_node_only() -> None:
    values = {"n1": 700, "n2": 705, "n3": 690, "n4": 698, "n5": 180}
    nodes = {h: [node_fig(h, "memory.triad", v * GB, threads=192)] for h, v in values.items()}
    got = {v.subject: v for v in judge_peers(nodes, CheckRule(), TRIAD)}
    assert got["n5"].grade == "FAIL" and got["n5"].noise == "beyond the noise"
    assert got["n5"].ratio == pytest.approx(180 / 698)
    assert got["n5"].baseline == pytest.approx(698 * GB) and "median of 5" in got["n5"].against
    assert {h: v.grade for h, v in got.items() if h != "n5"} == dict.fromkeys(
        ["n1", "n2", "n3", "n4"], "PASS"
    )
    assert got["n5"].shown == "180.00 GB/s" and got["n5"].expected == "698.00 GB/s"


def test_three_peers_have_no_noise_estimate_and_two_no_baseline() -> None:
    three = {h: [node_fig(h, "memory.triad", v * GB)] for h, v in
             {"a": 700, "b": 600, "c": 100}.items()}  # fmt: skip
    got = {v.subject: v for v in judge_peers(three, CheckRule(), TRIAD)}
    assert got["c"].noise == "unknown" and got["c"].grade == "FAIL"
    two = CheckInput({h: three[h] for h in "ab"}, [], {})
    with pytest.raises(BaselineError, match="fewer than 3 nodes"):
        judge(two, [], CheckRule(), TRIAD)
    one = CheckInput({"a": three["a"]}, [], {})
    with pytest.raises(BaselineError, match="measured one node"):
        judge(one, [], CheckRule(), TRIAD)


# -- against a reference -------------------------------------------------------------------


def test_reference_baseline_with_welch_and_a_missing_metric(tmp_path: Path) -> None:
    ref = reference(tmp_path, NODE_TABLE + TRIAD_POINT)
    slow = Stats(n=9, mean=600e9, stddev=2e9, min=596e9, max=603e9)
    s = Sample.make("stream", "memory.triad", 603e9, {"threads": 192, "scope": "node"}, slow)
    good = Sample.make("stream", "memory.triad", 701e9, {"threads": 192, "scope": "node"},
                       Stats(n=9, mean=699e9, stddev=2e9, min=696e9, max=701e9))  # fmt: skip
    dgemm = Sample.make("dgemm", "compute.dgemm", 5e12, {"threads": 192, "precision": "d"})
    nodes = {"n1": [Figure(s, 1, None, (s.value,)), Figure(dgemm, 1, None, (5e12,))],
             "n2": [Figure(good, 1, None, (good.value,))]}  # fmt: skip
    verdicts, missing = judge_reference(nodes, ref, CheckRule(), TRIAD)
    by = {v.subject: v for v in verdicts}
    assert by["n1"].grade == "FAIL" and by["n1"].test.startswith("Welch t")
    assert by["n1"].against == "reference base" and missing == []
    assert by["n2"].grade == "PASS" and by["n2"].noise == "within the noise"
    _, missing = judge_reference(nodes, ref, CheckRule(), [*TRIAD, "compute.dgemm"])
    assert missing == ["compute.dgemm {'threads': '192', 'precision': 'd'}"]
    inp = CheckInput(nodes, [], {"n1": facts("n1"), "n2": facts("n2")})
    with pytest.raises(BaselineError, match=r"baseline base has no figure for compute\.dgemm"):
        judge(inp, [ref], CheckRule(), [*TRIAD, "compute.dgemm"])


def test_a_node_of_another_type_is_refused_naming_both(tmp_path: Path) -> None:
    ref = reference(tmp_path, NODE_TABLE + TRIAD_POINT)
    assert assign(["n1"], {"n1": facts("n1")}, [ref])["n1"] is ref
    other = facts("n9", cpu_model="Intel Xeon Platinum 8480+", memory_bytes=512 * 2**30)
    with pytest.raises(BaselineError) as err:
        assign(["n9"], {"n9": other}, [ref])
    text = str(err.value)
    assert "n9, a Intel Xeon Platinum 8480+" in text and "base is for AMD EPYC 9654" in text
    # a fat-memory node is another type; a node that lost a DIMM is not
    assert type_mismatch(facts("f", memory_bytes=1536 * 2**30), facts("x")) is not None
    assert type_mismatch(facts("d", memory_bytes=720 * 2**30), facts("x")) is None
    # a set that names no node type fits any node (a shipped set)
    untyped = reference(tmp_path, TRIAD_POINT, name="shipped")
    assert assign(["n9"], {"n9": other}, [ref, untyped])["n9"] is untyped


def test_inventory_against_what_is_expected() -> None:
    expected = facts("ref")
    node = facts("n1", memory_bytes=720 * 2**30, cores=190, kernel="6.1.0-21", mpis=(),
                 links={"ib0": 200e9 / 8})  # fmt: skip
    got = {c.check: c for c in inventory_checks(node, expected)}
    assert got["inventory.memory"].grade == "FAIL"  # 720 of 768 GiB: a DIMM gone
    assert got["inventory.cores"].grade == "FAIL"
    assert got["inventory.threads"].grade == "PASS"
    assert got["inventory.link_speed ib0"].grade == "FAIL"  # trained at HDR, not NDR
    assert got["inventory.kernel"].grade == "WARN"
    assert got["inventory.mpi openmpi"].grade == "FAIL"
    assert {c.grade for c in inventory_checks(expected, expected)} == {"PASS"}


def test_a_baseline_records_one_node_type(tmp_path: Path) -> None:
    def inv(host: str, cpu: str) -> list[Figure]:
        return [node_fig(host, "inventory.cores", 192, probe="inventory"),
                node_fig(host, "inventory.node", 1, probe="inventory", cpu_model=cpu,
                         sockets=2, kernel="6.1", mpis="openmpi 4.1.4", gpu_model="")]  # fmt: skip

    table, note = node_table({"a": inv("a", "EPYC"), "b": inv("b", "EPYC")}, None)
    assert table is not None and table["cpu_model"] == "EPYC" and table["cores"] == 192
    assert "2 nodes" in note
    with pytest.raises(BaselineError, match="2 types"):
        node_table({"a": inv("a", "EPYC"), "b": inv("b", "Xeon")}, None)


# -- links ---------------------------------------------------------------------------------


HOSTS5 = ["n1", "n2", "n3", "n4", "n5"]


def test_a_slow_link_is_named_and_drains_neither_end() -> None:
    def bw(a: str, b: str) -> float:
        return 12.5e6 if (a, b) == ("n1", "n2") else 1.2e9 + HOSTS5.index(a) * 1e7

    verdicts = link_verdicts([matrix(HOSTS5, all_links(HOSTS5, bw))], set(), CheckRule())
    links = {v.subject: v for v in verdicts if v.kind == "link"}
    assert links["n1–n2"].grade == "FAIL" and links["n1–n2"].noise == "beyond the noise"
    assert links["n1–n2"].retest == ""  # not retested: for the check's own retest
    assert [k for k, v in links.items() if v.grade != "PASS"] == ["n1–n2"]
    nodes = {v.subject: v for v in verdicts if v.kind == "node"}
    assert {v.grade for v in nodes.values()} == {"PASS"}
    assert "n1–n2" in nodes["n1"].note


def test_a_fail_link_stands_only_when_the_matrix_retests_confirm_it() -> None:
    def bw(a: str, b: str) -> float:
        return 12.5e6 if (a, b) == ("n1", "n2") else 1.2e9 + HOSTS5.index(a) * 1e7

    links = all_links(HOSTS5, bw)
    for again, grade_, said in (
        ([13e6, 12e6, 12.6e6], "FAIL", "confirmed 3 of 3 on retest"),
        ([1.2e9, 13e6, 1.19e9], "WARN", "not confirmed: not reproduced"),
    ):
        m = matrix(HOSTS5, links, {("n1", "n2"): again})  # fmt: skip
        v = {v.subject: v for v in link_verdicts([m], set(), CheckRule())}["n1–n2"]
        assert v.grade == grade_ and v.retest.startswith(said)
        # a FAIL the matrix's retests confirmed is not re-measured by the check again
        assert retest_of([v]) is None


def test_a_node_whose_every_link_fails_fails_and_a_degraded_node_explains_its_links() -> None:
    links = all_links(HOSTS5, lambda a, b: 50e6 if "n3" in (a, b) else 1.2e9)
    verdicts = link_verdicts([matrix(HOSTS5, links)], set(), CheckRule())
    nodes = {v.subject: v for v in verdicts if v.kind == "node"}
    assert nodes["n3"].grade == "FAIL" and nodes["n3"].noise == "beyond the noise"
    assert [h for h, v in nodes.items() if v.grade == "FAIL"] == ["n3"]
    # Four nodes: half the links are n3's. When n3 does not pass on its own its links are
    # explained by it, and kept out of the median the others are held to.
    four = HOSTS5[:4]
    m4 = matrix(four, {k: v for k, v in links.items() if "n5" not in k})
    explained = [v for v in link_verdicts([m4], {"n3"}, CheckRule()) if v.kind == "link"]
    slow = [v for v in explained if "n3" in v.subject]
    assert len(slow) == 3 and all("n3 does not pass its own checks" in v.note for v in slow)
    assert all(v.baseline == pytest.approx(1.2e9) for v in explained)
    assert {v.grade for v in explained if v not in slow} == {"PASS"}


def test_a_link_retested_in_a_second_allocation_takes_its_new_figure() -> None:
    def bw(a: str, b: str) -> float:
        return 12.5e6 if (a, b) == ("n1", "n2") else 1.2e9 + HOSTS5.index(a) * 1e7

    inp = CheckInput({}, [matrix(HOSTS5, all_links(HOSTS5, bw))], {})
    first = judge(inp, [], CheckRule(), []).verdicts
    retest = retest_of(first)
    assert retest is not None and retest.links == [("n1", "n2")] and retest.nodes == []
    for again_value, grade_ in ((12e6, "FAIL"), (1.21e9, "WARN")):
        again = CheckInput({}, [matrix(["n1", "n2"], {("n1", "n2"): again_value})], {})
        rejudged = judge(merged(inp, again, retest), [], CheckRule(), []).verdicts
        final = {v.subject: v for v in with_retest(first, rejudged, "a second allocation")}
        assert final["n1–n2"].grade == grade_


# -- retest, drain, resume ------------------------------------------------------------------


def _judged_five(slow: float) -> tuple[CheckInput, list]:
    values = {"n1": 700, "n2": 705, "n3": 690, "n4": 698, "n5": slow}
    nodes = {h: [node_fig(h, "memory.triad", v * GB)] for h, v in values.items()}
    inp = CheckInput(nodes, [], {})
    return inp, judge(inp, [], CheckRule(), TRIAD).verdicts


def test_a_fail_stands_only_when_its_retest_fails_too() -> None:
    inp, first = _judged_five(180)
    retest = retest_of(first)
    assert retest is not None and retest.nodes == ["n5"] and retest.probes == {"stream"}
    cases = ((170, "FAIL", "confirmed on retest: 170.00 GB/s"),
             (699, "WARN", "not confirmed: 699.00 GB/s on retest"))  # fmt: skip
    for again_value, grade_, said in cases:
        again = CheckInput({"n5": [node_fig("n5", "memory.triad", again_value * GB)]}, [], {})
        rejudged = judge(merged(inp, again, retest), [], CheckRule(), TRIAD).verdicts
        final = {v.subject: v for v in with_retest(first, rejudged, "a second allocation")}
        assert final["n5"].grade == grade_ and final["n5"].retest.startswith(said)
    lost = {v.subject: v for v in with_retest(first, [], "the retest could not run: x")}
    assert lost["n5"].grade == "FAIL" and "not re-measured" in lost["n5"].retest
    assert exit_code(first) == 3 and exit_code(_judged_five(699)[1]) == 0


def test_drain_and_resume_plans_never_touch_another_reason() -> None:
    _, verdicts = _judged_five(180)
    grades = {"n1": "PASS", "n2": "PASS", "n3": "PASS", "n4": "PASS", "n5": "FAIL"}
    states = {
        "n1": NodeState("n1", "drained", "assay: memory.triad 1 GB/s vs 700 GB/s (run r0)"),
        "n2": NodeState("n2", "drained", "DIMM replaced"),
        "n3": NodeState("n3", "idle"),
        "n4": NodeState("n4", "draining", "NHC: check_hw_ib failed"),
        "n5": NodeState("n5", "idle"),
    }
    acts = {a.node: a for a in plan_actions(grades, verdicts, states, "r1", drain=True,
                                            resume=True)}  # fmt: skip
    assert acts["n5"].what == "drain"
    assert shell_line(acts["n5"].argv) == (
        'scontrol update NodeName=n5 State=DRAIN Reason="assay: memory.triad 180.00 GB/s vs '
        '698.00 GB/s (run r1)"'
    )
    assert acts["n1"].what == "resume" and acts["n1"].argv[-1] == "State=RESUME"
    assert acts["n2"].what == "leave" and "DIMM replaced" in acts["n2"].why
    assert acts["n4"].what == "leave" and "n3" not in acts
    # a failing node drained by someone else keeps their reason
    states["n5"] = NodeState("n5", "drained", "RMA open")
    (a5,) = [a for a in plan_actions(grades, verdicts, states, "r1", drain=True, resume=False)
             if a.node == "n5"]  # fmt: skip
    assert a5.what == "leave" and "RMA open" in a5.why
    assert drain_reason(verdicts, "r1").startswith("assay: memory.triad 180.00 GB/s")


def test_a_resume_short_of_idle_nodes_names_what_holds_the_others() -> None:
    from assay.errors import AssayError
    from assay.run.check.nodes import hold_drained

    class Nodes:  # the one call hold_drained makes before it refuses
        def states(self):
            mixed = {f"n{i}": NodeState(f"n{i}", "mixed") for i in range(2, 8)}
            return {"n1": NodeState("n1", "drained", "assay: slow (run r0)"), **mixed,
                    "n9": NodeState("n9", "down*", "Not responding"),
                    "n10": NodeState("n10", "idle")}  # fmt: skip

    with pytest.raises(AssayError) as err:
        hold_drained(Nodes(), 4, 10, print)
    assert err.value.args[0] == (
        "--resume needs 4 nodes: the 1 assay drained (n1) and 3 idle ones; 1 are idle "
        "(6 mixed: n2, n3, n4, n5, ...; 1 down*: n9)"
    )
    assert "between 1 and 2" in err.value.hint


def test_sinfo_lines_and_shell_quoting() -> None:
    text = ("anode1|idle|none\nanode2|drained|assay: memory.triad 1.1 GB/s vs 4 GB/s (run x)\n"
            "anode3|draining@|DIMM replaced\nanode3|draining@|DIMM replaced\n")  # fmt: skip
    states = parse_sinfo(text)
    assert states["anode1"].reason == "" and not states["anode1"].drained
    assert states["anode2"].by_assay and states["anode2"].idle_drained
    assert states["anode3"].drained and not states["anode3"].by_assay
    assert not states["anode3"].idle_drained
    line = shell_line(["scontrol", "update", "NodeName=a", 'Reason=x "y" $z'])
    assert line == 'scontrol update NodeName=a Reason="x \\"y\\" \\$z"'


def test_failed_jobs_fail_their_node_and_link() -> None:
    inp, _ = _judged_five(700)
    hosts = ["n1", "n2", "n3", "n4", "n5"]
    inp.results = [
        JobResult("002-stream", "failed", 1, 0.0, [], hosts=hosts,
                  reason="on 1 of 5 nodes: n5: printed no measurement"),
        JobResult("003-dgemm-n4", "failed", 1, 0.0, [], hosts=["n4"], reason="exit 1\n..."),
        JobResult("006-allpairs-openmpi", "timeout", None, 9.0, [], hosts=hosts),
    ]  # fmt: skip
    verdicts = judge(inp, [], CheckRule(), TRIAD).verdicts
    bad = {(v.subject, v.check): v for v in verdicts if v.grade == "FAIL"}
    assert [k for k in bad if k[1] == "stream job"] == [("n5", "stream job")]
    assert ("n4", "dgemm job") in bad and bad[("n4", "dgemm job")].note.endswith("exit 1")
    whole = bad[("n1,n2,n3,n4,n5", "allpairs job")]
    assert whole.kind == "link"  # drains no node


def test_node_figures_of_a_cluster_run_and_of_one_node() -> None:
    params = {"placement": "all-pairs", "hosts": ["b"], "node": "b", "summary": "node"}
    node_link = Figure(Sample.make("allpairs", "p2p.bandwidth", 1.0, params), 1, None, (1.0,))
    per_host = [node_fig("a", "memory.triad", 1.0), node_link]
    assert list(node_figures(per_host, [], "here")) == ["a"]
    local = Figure(Sample.make("stream", "memory.triad", 1.0, {}), 1, None, (1.0,))
    assert node_figures([], [local], "here") == {"here": [local]}


# -- files for machines: real readers --------------------------------------------------------


def test_junit_is_read_by_junitparser(tmp_path: Path) -> None:
    junitparser = pytest.importorskip("junitparser", reason="pip install -e '.[dev]'")
    from assay.report.junit import junit_xml

    _, verdicts = _judged_five(180)
    path = tmp_path / "check.xml"
    path.write_text(junit_xml(verdicts, suite="check-2", run_id="r1", seconds=3.0,
                              timestamp="2026-01-01T00:00:00"))  # fmt: skip
    xml = junitparser.JUnitXml.fromfile(str(path))
    cases = {(s.name, c.name): c for s in xml for c in s}
    assert len(cases) == 5 and xml.failures == 1
    failed = cases[("n5", "memory.triad")]
    assert not failed.is_passed and "180.00 GB/s vs 698.00 GB/s" in failed.result[0].message
    assert cases[("n1", "memory.triad")].is_passed
    assert cases[("n1", "memory.triad")].classname == "assay.check.n1"


def test_openmetrics_passes_promtool(tmp_path: Path) -> None:
    from assay.report.openmetrics import openmetrics_text

    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool missing: run scripts/install-system-deps (Debian prometheus)")
    _, verdicts = _judged_five(180)
    text = openmetrics_text(verdicts, run_id='r"1', suite="check-2", level=2, timestamp=1e9)
    proc = subprocess.run([promtool, "check", "metrics"], input=text, capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert 'assay_check_verdict{subject="n5",kind="node",check="memory.triad"' in text
    assert 'assay_check_node_verdict{node="n5"} 2' in text
    assert 'run_id="r\\"1"' in text and text.endswith("# EOF\n")
    assert "assay_check_exit_status 3" in text
    # promtool does fail on a broken file: the test can fail
    bad = subprocess.run([promtool, "check", "metrics"], input="x{ 1\n", capture_output=True,
                         text=True, check=False)  # fmt: skip
    assert bad.returncode != 0


def test_the_grid_puts_the_worst_node_and_check_first_and_folds_the_inventory() -> None:
    from assay.report.check import grid_table, summary_line

    _, verdicts = _judged_five(180)
    expected = facts("ref")
    for host in ("n1", "n2"):
        node = facts(host, cores=190) if host == "n2" else facts(host, kernel="6.1.0-21")
        from assay.analysis.check.health import fact_verdicts

        verdicts += fact_verdicts(host, inventory_checks(node, expected), "expected")
    grid = grid_table(verdicts)
    # FAIL before WARN before PASS; among failures the one furthest below its baseline first
    assert [r[0] for r in grid.rows][:3] == ["n5", "n2", "n1"]
    assert grid.columns[:4] == ["node", "verdict", "memory.triad", "inventory"]
    by = {r[0]: dict(zip(grid.columns, r, strict=True)) for r in grid.rows}
    assert by["n5"]["memory.triad"].startswith("FAIL 0.2")
    assert by["n2"]["inventory"].startswith("FAIL") and by["n1"]["inventory"] == "WARN"
    assert by["n3"]["inventory"] == "—" and by["n3"]["verdict"] == "PASS"
    line = summary_line(verdicts)
    assert line.startswith("5 nodes: 2 PASS, 1 WARN (n1), 2 FAIL (n2, n5)") and line.endswith(
        "exit status 3"
    )


HOST_LISTS = ["n[1-100],login1", "n[1-100]", "n1,n2", "n1 n2", "n1\nn2", "", "ALL", "-n1"]


@pytest.mark.parametrize("name", HOST_LISTS)
def test_a_drain_names_one_node_never_a_host_list(name: str) -> None:
    """issue 28: ``--node 'n[1-100],login1' --drain`` became ``scontrol update
    NodeName=n[1-100],login1 State=DRAIN``; a name that is not one node's is never drained,
    even when Slurm's states are not known (a dry run stands each node in as 'unknown')."""
    from assay.errors import LaunchError
    from assay.launch.slurm.nodes import drain_argv, resume_argv

    with pytest.raises(LaunchError, match="not one node name"):
        drain_argv(name, "assay: x")
    with pytest.raises(LaunchError, match="not one node name"):
        resume_argv(name)
    _, verdicts = _judged_five(180)
    verdicts = [dataclasses.replace(v, subject=name) if v.subject == "n5" else v
                for v in verdicts]  # fmt: skip
    states = {name: NodeState(name, "unknown")}
    acts = plan_actions({name: "FAIL"}, verdicts, states, "r1", drain=True, resume=True)
    assert [a.what for a in acts] == ["leave"] and acts[0].argv is None


def test_check_node_must_be_one_node_name(tmp_path: Path) -> None:
    from conftest import run_cli

    for name in ("n[1-100],login1", "n1 n2"):
        proc = run_cli("check", "--node", name, "--drain", "--dry-run", home=tmp_path / "h",
                       timeout=120)  # fmt: skip
        assert proc.returncode == 2, proc.stderr
        assert "not one node name" in proc.stderr and "Traceback" not in proc.stderr


HOSTILE_NODES = ["n\x01de\x1b[2J", "n\udcffde", "n\x7f\u202ede"]


def _hostile_verdicts() -> list:
    _, verdicts = _judged_five(180)
    names = dict(zip(["n1", "n5", "n3"], HOSTILE_NODES, strict=True))
    return [dataclasses.replace(v, subject=names.get(v.subject, v.subject)) for v in verdicts]


def test_a_control_character_or_a_non_utf8_node_name_keeps_junit_well_formed(tmp_path: Path):
    """issue 28: a control character in a node name made the JUnit file ill-formed XML, a
    lone surrogate (a non-UTF-8 name) could not be written at all."""
    import xml.etree.ElementTree as ET

    from assay.report.junit import junit_xml
    from assay.report.openmetrics import openmetrics_text

    xml = junit_xml(_hostile_verdicts(), suite="s\x02", run_id="r1", seconds=1.0,
                    timestamp="2026-01-01T00:00:00")  # fmt: skip
    root = ET.fromstring(xml.encode("utf-8"))
    names = {s.get("name") for s in root}
    assert {"n\\x01de\\x1b[2J", "n\\udcffde", "n\\x7f\\u202ede"} <= names
    text = openmetrics_text(_hostile_verdicts(), run_id="r", suite="s", level=1, timestamp=1.0)
    text.encode("utf-8")
    assert 'node="n\\\\udcffde"' in text and "\x1b" not in text


def test_junit_and_openmetrics_files_of_a_non_utf8_name_are_written_whole(
    tmp_path: Path, monkeypatch
):
    """The files are written through a temporary name: none is left when writing fails."""
    from types import SimpleNamespace

    from assay.cli import checkshow

    args = SimpleNamespace(json=True, junit=tmp_path / "j.xml", openmetrics=tmp_path / "m.prom",
                           html=None)  # fmt: skip
    run = tmp_path / "run"
    run.mkdir()
    checkshow.write_outputs(args, "s", 1, "r1", None, _hostile_verdicts(), {}, [], [], 1.0, run)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.xml", "m.prom", "run"]
    with pytest.raises(UnicodeEncodeError):
        checkshow._atomic(tmp_path / "x.txt", "a\udcff")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["j.xml", "m.prom", "run"]


def test_the_summary_line_shows_escapes_as_every_table_does(tmp_path: Path, capsys):
    from types import SimpleNamespace

    from assay.cli import checkshow

    args = SimpleNamespace(json=False, junit=None, openmetrics=None, html=None)
    run = tmp_path / "run"
    run.mkdir()
    checkshow.write_outputs(args, "s", 1, "r1", None, _hostile_verdicts(), {}, ["x\x1b]0;t\x07"],
                           [], 1.0, run)  # fmt: skip
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "\udcff" not in out
    assert "n\\udcffde" in out.splitlines()[-1]


def test_a_drain_names_only_nodes_the_check_ran_on(tmp_path: Path, monkeypatch) -> None:
    """issue 28: a node named in the data (a figure's host) but not in the check's allocation
    is never drained, even when Slurm lists it."""
    from assay.model import System
    from assay.run.check.nodes import measured_nodes
    from assay.store import RunStore

    _, verdicts = _judged_five(180)
    grades = {"n1": "PASS", "n5": "FAIL"}
    states = {"n5": NodeState("n5", "idle"), "n1": NodeState("n1", "idle")}
    acts = plan_actions(grades, verdicts, states, "r1", drain=True, resume=False,
                        measured={"n1", "n2"})  # fmt: skip
    assert [(a.node, a.what) for a in acts] == [("n5", "leave")]
    assert "not a node this check ran on" in acts[0].why
    monkeypatch.setenv("ASSAY_HOME", str(tmp_path))
    store = RunStore(tmp_path)
    w = store.create(suite="s", suite_text="", system=System(hostname="h"), argv=[])
    w.info.batch = {"launcher": "slurm", "hosts": ["a1", "a2"]}
    w.finish("complete")
    assert measured_nodes(w.info.run_id, "here") == {"a1", "a2"}
    local = store.create(suite="s", suite_text="", system=System(hostname="h"), argv=[])
    local.finish("complete")
    assert measured_nodes(local.info.run_id, "here") == {"here"}
