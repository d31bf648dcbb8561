"""One run judged by ``assay check``: which baseline each node is held to, then every verdict.

**Which baseline.** Each node is judged against the first baseline given whose node type
(``[node]`` of the reference set, ``analysis.check.nodetype``) is the node's; a set that names no
node type (a shipped set) fits any node, with a note. A node no baseline fits is bad input: the
check stops naming the node's type and the baselines' (exit 2), before anything is drained.
Without baselines, each type's nodes are judged against their own median, which needs 3 of them.

A figure the check judges that the node's baseline lacks is bad input too ("missing baseline
metric"): a partial verdict would pass a node on what was never compared.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from assay.analysis.check.checklimits import CheckRule
from assay.analysis.check.health import (
    Verdict,
    fact_verdicts,
    failed_job_verdict,
    judge_peers,
    judge_reference,
)
from assay.analysis.check.healthlinks import PROBE as LINK_PROBE
from assay.analysis.check.healthlinks import link_verdicts, merged_matrix
from assay.analysis.check.nodetype import (
    NodeFacts,
    expected_of_peers,
    fabric_check,
    facts_of_figures,
    group_by_type,
    inventory_checks,
    type_mismatch,
)
from assay.analysis.matrix.allpairs import PairMatrix
from assay.analysis.statistics.stats import Figure
from assay.errors import AssayError
from assay.model import JobResult
from assay.references.model import ReferenceSet
from assay.system.fabric import Run

MIN_PEERS = 3


class BaselineError(AssayError):
    """A baseline that cannot judge these nodes (another type, a missing figure, too few
    peers): nothing is judged, nothing drained."""


@dataclass
class CheckInput:
    """What a run measured, by node."""

    nodes: dict[str, list[Figure]]  # each node's figures
    matrices: list[PairMatrix]  # the all-pairs matrices, analysed (``figures.allpairs``)
    facts: dict[str, NodeFacts]  # each node's inventory
    results: list[JobResult] = field(default_factory=list)
    local_host: str = ""  # a run on one node: its name (its jobs name no host)


@dataclass
class Judged:
    verdicts: list[Verdict]
    against: dict[str, str]  # node -> what it was judged against
    notes: list[str] = field(default_factory=list)


def input_of(
    nodes: dict[str, list[Figure]],
    matrices: list[PairMatrix],
    results: list[JobResult],
    local: NodeFacts | None,
) -> CheckInput:
    """The check's input from a run's figures by node; ``local``: the facts of the node a
    single-node run ran on (its system record), used when it measured no inventory."""
    facts = facts_of_figures(nodes)
    host = local.host if local else ""
    if local is not None and host in nodes and host not in facts:
        facts[host] = local
    return CheckInput(nodes, matrices, facts, results, host)


def _ref_facts(ref: ReferenceSet) -> NodeFacts | None:
    return NodeFacts.from_table(f"reference {ref.name}", ref.node) if ref.node else None


def assign(
    hosts: Iterable[str], facts: Mapping[str, NodeFacts], refs: list[ReferenceSet]
) -> dict[str, ReferenceSet | None]:
    """Each node's baseline (None: its peers); see the module docstring."""
    out: dict[str, ReferenceSet | None] = {}
    for host in sorted(hosts):
        if not refs:
            out[host] = None
            continue
        node = facts.get(host)
        typed = [(r, _ref_facts(r)) for r in refs]
        if node is None:
            if len(refs) == 1:
                out[host] = refs[0]
                continue
            raise BaselineError(
                f"node {host}: its type is not known (the run measured no inventory), so which "
                f"of the baselines {', '.join(r.name for r in refs)} is its own cannot be told",
                hint="check with a level (its suite measures the inventory), or give one baseline",
            )
        fits = [r for r, f in typed if f is not None and type_mismatch(node, f) is None]
        untyped = [r for r, f in typed if f is None]
        if fits or untyped:
            out[host] = (fits or untyped)[0]
            continue
        why = "; ".join(
            f"{r.name} is for {f.type_name()} ({type_mismatch(node, f)})" for r, f in typed if f
        )
        raise BaselineError(
            f"no baseline for node {host}, a {node.type_name()}: {why}",
            hint="make one from an accepted run of this node type: "
            "assay references add --from RUN NAME, and give it with --baseline NAME",
        )
    return out


def judge(
    inp: CheckInput,
    refs: list[ReferenceSet],
    rule: CheckRule,
    metrics: Iterable[str],
) -> Judged:
    """Every verdict of a run (the module docstring and ``analysis.check.health`` say how)."""
    metrics = list(metrics)
    hosts = sorted(set(inp.nodes) | set(inp.facts))
    assigned = assign(hosts, inp.facts, refs)
    verdicts: list[Verdict] = []
    against: dict[str, str] = {}
    notes: list[str] = []
    by_ref: dict[str, list[str]] = defaultdict(list)
    for host, ref in assigned.items():
        if ref is not None:
            by_ref[ref.name].append(host)
    for name, members in sorted(by_ref.items()):
        ref = next(r for r in refs if r.name == name)
        got, missing = judge_reference({h: inp.nodes.get(h, []) for h in members}, ref, rule,
                                       metrics)  # fmt: skip
        if missing:
            raise BaselineError(
                f"baseline {name} has no figure for {', '.join(missing)}",
                hint="make the baseline from a run of the same level (assay references add "
                "--from RUN NAME), or check with the suite it was made from",
            )
        verdicts += got
        expected = _ref_facts(ref)
        if expected is None:
            notes.append(f"baseline {name} names no node type: its inventory is not checked")
        for host in members:
            against[host] = f"reference {name}"
            if expected is not None and host in inp.facts:
                checks = inventory_checks(inp.facts[host], expected)
                verdicts += fact_verdicts(host, checks, f"expected (reference {name})")
    peers = [h for h, r in assigned.items() if r is None]
    if peers:
        verdicts += _judge_peers(inp, peers, rule, metrics, against)
    verdicts += _failed_jobs(inp, hosts)
    verdicts += _fabric_verdicts(inp, hosts)
    degraded = {v.subject for v in verdicts if v.kind == "node" and v.grade != "PASS"}
    link_ref = refs[0] if len(by_ref) == 1 and not peers else None
    verdicts += link_verdicts(inp.matrices, degraded, rule, link_ref)
    return Judged(verdicts, against, notes)


def _fabric_verdicts(inp: CheckInput, hosts: list[str]) -> list[Verdict]:
    """Each node's kernel limits against what a run over every node checked needs: the next
    check or run at this size must not fail on them (``assay.system.fabric``)."""
    if len(hosts) < 2:
        return []
    boots = [inp.facts[h].boot_id for h in hosts if h in inp.facts and inp.facts[h].boot_id]
    run = Run(len(hosts), shared_kernel=len(boots) > 1 and len(set(boots)) == 1)
    out = []
    for host in hosts:
        check = fabric_check(inp.facts[host], run) if host in inp.facts else None
        if check is not None:
            out += fact_verdicts(host, [check], f"what a {run.nodes}-node run needs")
    return out


def _judge_peers(
    inp: CheckInput, peers: list[str], rule: CheckRule, metrics: list[str], against: dict
) -> list[Verdict]:
    known = [inp.facts[h] for h in peers if h in inp.facts]
    groups = [[f.host for f in g] for g in group_by_type(known)]
    unknown = [h for h in peers if h not in inp.facts]
    if unknown:  # no inventory: one group, as they were measured
        groups = [sorted(set(unknown) | {h for g in groups for h in g})]
    out = []
    for group in groups:
        if len(inp.nodes) == 1 and len(group) == 1:
            raise BaselineError(
                f"this check measured one node ({group[0]}) and has no baseline to hold it to: "
                "there are no peers to compare it with",
                hint="make a baseline from an accepted run of this node type (assay references "
                "add --from RUN NAME) and give it: --baseline NAME, or [check] baseline",
            )
        if len(group) < MIN_PEERS:
            kind = inp.facts[group[0]].type_name() if group[0] in inp.facts else "unknown type"
            raise BaselineError(
                f"{len(group)} node(s) of their type ({kind}: {', '.join(group)}) and no "
                f"baseline: the median of fewer than {MIN_PEERS} nodes cannot say which is slow",
                hint="give a baseline (--baseline NAME, made with 'assay references add --from "
                "RUN NAME' from an accepted run), or check more nodes of the type",
            )
        out += judge_peers({h: inp.nodes.get(h, []) for h in group}, rule, metrics)
        with_facts = [inp.facts[h] for h in group if h in inp.facts]
        if len(with_facts) >= MIN_PEERS:
            expected = expected_of_peers(with_facts)
            for f in with_facts:
                out += fact_verdicts(f.host, inventory_checks(f, expected),
                                     f"the most common among {len(with_facts)} nodes")  # fmt: skip
        for h in group:
            against[h] = f"median of {len(group)} nodes of its type"
    return out


def _failed_jobs(inp: CheckInput, hosts: list[str]) -> list[Verdict]:
    """A job that did not finish fails the node it ran on. A job over several nodes (a
    per-node pass as one step, the all-pairs matrix) fails the nodes its reason names
    ("on 1 of 4 nodes: anode3: ..."); naming none, it fails as a whole, as a link verdict
    (what drains a node must be the node's own)."""
    out = []
    for r in inp.results:
        if r.status in ("ok", "skipped"):
            continue
        probe = r.job_id.split("-", 2)[1] if "-" in r.job_id else r.job_id
        where = list(r.hosts) or ([inp.local_host] if inp.local_host else [])
        named = [h for h in where if f"{h}:" in (r.reason or "")] if len(where) > 1 else where
        for host in named:
            out.append(failed_job_verdict(host, probe, r.job_id, r.status, r.reason))
        if where and not named:
            v = failed_job_verdict(",".join(sorted(where)), probe, r.job_id, r.status, r.reason)
            v.kind = "link"
            out.append(v)
    return [v for v in out if v.kind == "link" or v.subject in hosts or not hosts]


def node_table(nodes: dict[str, list[Figure]], local: NodeFacts | None) -> tuple[dict | None, str]:
    """The ``[node]`` table a baseline made from a run records: the inventory its nodes have in
    common (``local``: a single-node run's own system record, when it measured no inventory).
    (None, why) when the run's nodes are of several types (a baseline is per type) or it is
    not known what they were."""
    facts = facts_of_figures(nodes)
    if not facts:
        if local is None:
            return None, "the run measured no inventory: the set names no node type"
        return local.to_table(), f"node type from the run's system record: {local.type_name()}"
    groups = group_by_type(facts.values())
    if len(groups) > 1:
        kinds = "; ".join(f"{g[0].type_name()} ({len(g)} nodes)" for g in groups)
        raise BaselineError(
            f"the run's nodes are of {len(groups)} types ({kinds}): a baseline is for one type",
            hint="make one per type from runs on one type each (--constraint, or --nodes on a "
            "partition of one type)",
        )
    expected = expected_of_peers(groups[0]) if len(groups[0]) > 1 else groups[0][0]
    return expected.to_table(), f"node type: {expected.type_name()} ({len(groups[0])} nodes)"


@dataclass
class Retest:
    """What a retest re-measures: the probes of the FAILs on their nodes, and failing links."""

    nodes: list[str]
    probes: set[str]
    links: list[tuple[str, str]]

    def all_nodes(self) -> list[str]:
        return sorted(set(self.nodes) | {h for link in self.links for h in link})


def retest_of(verdicts: Iterable[Verdict]) -> Retest | None:
    """The FAILs to re-measure (None: none). A link a failing node explains is re-measured
    with its node; a node whose links all fail is re-measured with a partner that passes."""
    verdicts = list(verdicts)
    # a FAIL the all-pairs job's own retests confirmed was re-measured already
    fails = [v for v in verdicts if v.grade == "FAIL" and not v.retest]
    if not fails:
        return None
    nodes = sorted({v.subject for v in fails if v.kind == "node"})
    probes = {v.probe for v in fails if v.probe}
    links = sorted(
        tuple(sorted(v.subject.split("–")))  # type: ignore[misc]
        for v in fails
        if v.kind == "link" and not (set(v.subject.split("–")) & set(nodes))
    )
    if any(v.kind == "node" and v.probe == LINK_PROBE for v in fails):
        passing = sorted({v.subject for v in verdicts if v.kind == "node"} - set(nodes))
        if passing:  # a node's links need a partner: one that passes
            links += [(min(n, passing[0]), max(n, passing[0])) for n in nodes]
    return Retest(nodes, probes, sorted(set(links)))  # type: ignore[arg-type]


def merged(first: CheckInput, again: CheckInput, retest: Retest) -> CheckInput:
    """``first`` with what the retest re-measured in place of what it had: the re-run probes'
    figures of the retested nodes, the retested links, their jobs' results."""
    nodes = {h: list(figs) for h, figs in first.nodes.items()}
    for host in retest.nodes:
        new = again.nodes.get(host, [])
        keep = [f for f in nodes.get(host, []) if f.sample.probe not in retest.probes]
        nodes[host] = keep + [f for f in new if f.sample.probe in retest.probes]
    pairs = {frozenset(link) for link in retest.links}
    matrices = [merged_matrix(m, again.matrices, retest.links) for m in first.matrices]
    facts = dict(first.facts)
    if "inventory" in retest.probes:
        facts.update({h: again.facts[h] for h in retest.nodes if h in again.facts})
    touched = set(retest.nodes)

    def retested(r: JobResult) -> bool:
        hosts = set(r.hosts) or {first.local_host}
        probe = r.job_id.split("-", 2)[1] if "-" in r.job_id else r.job_id
        return (len(hosts) == 1 and hosts <= touched and probe in retest.probes) or (
            probe == LINK_PROBE and frozenset(hosts) in pairs
        )

    results = [r for r in first.results if not retested(r)]
    results += [r for r in again.results if retested(r)]
    return CheckInput(nodes, matrices, facts, results, first.local_host)
