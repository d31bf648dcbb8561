"""The words every all-pairs table shares: how a matrix was measured, the rule, and what it
found (named links and nodes, retests, slow uplinks, links not measured)."""

from __future__ import annotations

from assay.analysis.derived.shared_memory import NETWORK_FLOOR_S, WORDS
from assay.analysis.matrix.allpairs import FULL, LostNode, PairMatrix
from assay.units import format_value, metric_info

SHARED_CELL = "shm"  # a link of the whole table measured through shared memory


def fmt(m: PairMatrix, v: float) -> str:
    return format_value(v, metric_info(m.metric).display)


def times(factor: float) -> str:
    return "infinitely" if factor == float("inf") else f"{factor:.3g}×"


def what(m: PairMatrix) -> str:
    return "latency" if m.metric == "p2p.latency" else "bandwidth"


def _repetitions_note(m: PairMatrix) -> list[str]:
    """n and spread of the links measured more than once (--repeat)."""
    fewest, most = m.repetitions
    if most < 2:
        return ["Each link measured once (--repeat N: each link the median of N)."]
    n = f"{fewest}" if fewest == most else f"{fewest} to {most}"
    note = f"Each link: the median of its repetitions (n = {n})"
    if m.widest:
        (a, b), ratio = m.widest
        note += f"; the widest spread, max/min, {ratio:.3g}× ({a}–{b})"
    if m.spread_median is not None and m.n > FULL:  # among 5·10⁷ links the widest is one
        note += f"; the median link's spread {m.spread_median:.3g}×"
    return [note + "."]


def method_notes(m: PairMatrix) -> list[str]:
    """How the matrix was measured and which rule names its links and nodes."""
    when = (
        "each pair alone"
        if m.concurrent == 1
        else f"up to {m.concurrent} pairs at the same time, in the rounds of a round-robin "
        "tournament (disjoint nodes)"
    )
    return [
        f"{what(m)} at {m.size} B between every pair of nodes, one rank per node, {when}.",
        *_repetitions_note(m),
        f"Outliers: robust z-score 0.6745·(ln x − median)/MAD over the {m.links} links and "
        f"over each node's median link, threshold |z| > {m.rule.threshold:g}, bad side only, and "
        f"at least {m.rule.link_factor:g}× worse than the median ([outliers] in the config).",
    ]


def _confirmed(m: PairMatrix, key: object) -> str:
    """ ", confirmed 2 of 2 on retest (1.52, 1.49)": the retests' own figures beside."""
    c = m.confirmations.get(key)
    if c is None:
        return ""
    shown = ", ".join(fmt(m, v) for v in c.values[:5]) + (", …" if len(c.values) > 5 else "")
    return f", {c.words()}" + (f" ({shown})" if shown else "")


def finding_notes(m: PairMatrix) -> list[str]:
    """The named links and nodes, what the retests did not reproduce, the slow uplinks, and
    the links not measured."""
    unit = metric_info(m.metric).display
    notes = list(m.notes)  # the file's own: cut short, a rank that stopped answering
    if m.shared:
        notes.append(shared_note(m))
    notes += [lost_note(m, lost) for lost in m.lost]
    if m.missing:
        notes.append(missing_note(m))
    if m.retested:
        notes.append(
            "Flagged links and nodes were measured again in retest rounds (same allocation): "
            "named only when every retest still passes the rule against the sweep's median "
            "and MAD."
        )
    if m.switches is not None:
        notes += slow_part_notes(m)
    if not m.links:
        notes.append("No link figure to judge: no outlier named.")
    elif not m.link_outliers and not m.node_outliers:
        notes.append("No outlier link or node.")
    for o in m.link_outliers:
        a, b = o.key  # type: ignore[misc]
        notes.append(
            f"OUTLIER LINK {a}–{b}: {fmt(m, o.value)} {unit} against a median of "
            f"{fmt(m, o.median)} {unit} ({times(o.factor)} worse, z = {o.z:.1f})"
            + _confirmed(m, o.key)
        )
    if m.n_link_outliers > len(m.link_outliers):
        notes.append(
            f"… {m.n_link_outliers - len(m.link_outliers)} more outlier links "
            f"({m.n_link_outliers} in all; the worst {len(m.link_outliers)} named above)."
        )
    if m.node_links:
        notes.append(
            f"{m.node_links} flagged links of the outlier node(s) below are named as their "
            "node, not one by one."
        )
    for o in m.node_outliers:
        notes.append(
            f"OUTLIER NODE {o.key}: median link {fmt(m, o.value)} {unit} against "
            f"{fmt(m, o.median)} {unit} ({times(o.factor)} worse, z = {o.z:.1f})"
            + _confirmed(m, o.key)
        )
    for o in m.not_reproduced:
        c = m.confirmations.get(o.key)
        name = f"link {o.key[0]}–{o.key[1]}" if isinstance(o.key, tuple) else f"node {o.key}"
        notes.append(
            f"Not reproduced on retest: {name}, {fmt(m, o.value)} {unit} in the sweep "
            f"({times(o.factor)} worse, z = {o.z:.1f}); "
            f"{c.still_bad if c else 0} of {c.retested if c else 0} retests still beyond the rule"
        )
    return notes


def _pairs(pairs: list[tuple[str, str]], count: int) -> str:
    shown = ", ".join(f"{a}–{b}" for a, b in pairs[:10])
    return shown + (f" and {count - min(len(pairs), 10)} more" if count > 10 else "")


def shared_note(m: PairMatrix) -> str:
    """The links whose latency was below the network floor: named, never link figures."""
    floor = format_value(NETWORK_FLOOR_S, "us")
    total = m.links + m.missing + m.shared
    cell = f" ({SHARED_CELL} in the table)" if m.n <= FULL else ""
    return (
        f"SHARED MEMORY: {m.shared} of {total} links measured a latency below {floor} us, "
        f"less than any network takes: {WORDS}. Left out of every figure here{cell}: "
        f"{_pairs(m.shared_pairs, m.shared)}."
    )


def lost_note(m: PairMatrix, lost: LostNode) -> str:
    """A node the sweep lost, with the pairs it was never measured in."""
    of = m.n - 1
    said = f"LOST NODE {lost.host}: the sweep went on without it (resumed in job {lost.resumed_in})"
    if not lost.never:
        return said + f"; each of its {of} links was measured before it was lost."
    shown = ", ".join(lost.partners) + (" …" if lost.never > len(lost.partners) else "")
    return said + f"; {lost.never} of its {of} links never measured: with {shown}."


def missing_note(m: PairMatrix) -> str:
    total = m.links + m.missing
    lost = [h for h, c in zip(m.hosts, m.node_counts.tolist(), strict=False) if c == 0]
    note = f"Not measured: {m.missing} of {total} links (– in the tables)"
    if lost:
        shown = ", ".join(lost[:10]) + (f" and {len(lost) - 10} more" if len(lost) > 10 else "")
        note += f"; no link at all of {len(lost)} node(s): {shown}"
    return note + "."


def slow_part_notes(m: PairMatrix) -> list[str]:
    sw = m.switches
    assert sw is not None
    unit = metric_info(m.metric).display
    out = []
    for p in sw.slow:
        against = f"against a median of {fmt(m, m.centre.median)} {unit}"
        every = f"{p.flagged} of {p.links} links flagged, their median {fmt(m, p.median)} {unit}"
        if p.kind == "uplink":
            out.append(
                f"SLOW UPLINK of switch {p.switch}: every link from below it to the rest "
                f"is slow ({every}, {against})."
            )
        elif p.kind == "path":
            out.append(
                f"SLOW PATH between switches {p.switch} and {p.other}: every link between "
                f"them is slow ({every}, {against}); the uplink of either, or what "
                "joins them."
            )
        else:
            out.append(
                f"SLOW SWITCH PAIR {p.switch}–{p.other}: every link between them is slow "
                f"({every}, {against})."
            )
    if m.explained:
        out.append(f"{m.explained} flagged links lie on these and are not named one by one.")
    if m.explained_nodes:
        out.append(
            f"{len(m.explained_nodes)} node(s) slow through their switch's uplink, not named "
            f"one by one: {', '.join(m.explained_nodes[:10])}"
            + (" …" if len(m.explained_nodes) > 10 else "")
        )
    return out


def matrix_key(m: PairMatrix) -> str:
    """The matrix table's key (its HTML anchor), which its heatmap sits after."""
    return f"allpairs-{m.metric.split('.')[-1]}-{m.mpi}".replace(" ", "-").lower()
