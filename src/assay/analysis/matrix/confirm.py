"""Confirm before naming: a link or node the sweep flags is named only when its retests agree.

ClusterKit re-measures the outliers it finds; so does the all-pairs probe, in retest rounds
inside the same allocation after the sweep (``kind = retest`` in ``allpairs.bin``). The sweep
flags by the rule of ``assay.analysis.statistics.outliers`` (robust z beyond the threshold *and* a
factor worse than the median); this module decides, per flagged link and node, what the retests say:

- **confirmed k of k**: every retest measurement still passes the same rule *against the
  sweep* — scored with the sweep's median and MAD of all links (a node: of all nodes' median
  links), bad side only, z beyond the threshold and at least the factor worse than the sweep's
  median. The sweep's centre, not the retests' own: a handful of retested links has no spread
  of its own to judge by, and the question is "is it still as far off as the sweep said".
- **not reproduced (j of k)**: at least one retest measurement no longer passes (j of the k
  still did). A link that was slow once — a neighbour's burst, a daemon waking — is listed as
  "not reproduced on retest", never named.
- **not retested**: the retests never reached it (a run cut short, or a run without retest
  rounds). Whether it is named then is the report's choice (it says so).

A node's retest: each retest round that measured any of its links gives one measurement, the
median of those links in that round (as the sweep judged the node by its median link).

A ``--repeat`` run (several whole sweeps) is folded the same way by :func:`sweep_retests`:
the link's figure is the median of its sweeps; each sweep's own value is one measurement.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from assay.analysis.matrix.linkmatrix import Retests
from assay.analysis.statistics.outliers import Centre, OutlierRule, flagged
from assay.condensed import link_nodes

Status = Literal["confirmed", "not reproduced", "not retested"]


@dataclass(frozen=True)
class Confirmation:
    """What the retests of one flagged link or node said."""

    retested: int  # retest measurements (a node: retest rounds that measured its links)
    still_bad: int  # of them, how many still passed the rule against the sweep
    values: tuple[float, ...]  # the retest measurements, in round order

    @property
    def status(self) -> Status:
        if self.retested == 0:
            return "not retested"
        return "confirmed" if self.still_bad == self.retested else "not reproduced"

    def words(self) -> str:
        """ "confirmed 3 of 3 on retest", "not reproduced on retest (1 of 3 still slow)"."""
        if self.status == "confirmed":
            return f"confirmed {self.still_bad} of {self.retested} on retest"
        if self.status == "not reproduced":
            return f"not reproduced on retest ({self.still_bad} of {self.retested} still bad)"
        return "not retested"


def _still_bad(
    values: np.ndarray, sweep: Centre, better: str, threshold: float, factor: float
) -> np.ndarray:
    """Which of ``values`` still pass the rule against the sweep's centre (a boolean each)."""
    bad = np.zeros(values.size, bool)
    bad[flagged(values, sweep, better, threshold, factor)] = True
    return bad


def confirm_links(
    links: np.ndarray, retests: Retests, sweep: Centre, better: str, rule: OutlierRule
) -> dict[int, Confirmation]:
    """Per flagged link (condensed index), what its retest measurements say (see the module:
    each must still pass the rule against the sweep's centre)."""
    out: dict[int, Confirmation] = {}
    mine = np.isin(retests.links, links)
    r_links, r_vals, r_rounds = retests.links[mine], retests.values[mine], retests.rounds[mine]
    bad = _still_bad(r_vals, sweep, better, rule.threshold, rule.link_factor)
    order = np.lexsort((r_rounds, r_links))
    r_links, r_vals, bad = r_links[order], r_vals[order], bad[order]
    starts = np.searchsorted(r_links, links, "left")
    ends = np.searchsorted(r_links, links, "right")
    for k, s, e in zip(links.tolist(), starts.tolist(), ends.tolist(), strict=True):
        vals = tuple(float(v) for v in r_vals[s:e])
        out[k] = Confirmation(e - s, int(bad[s:e].sum()), vals)
    return out


def confirm_nodes(
    nodes: np.ndarray,
    n: int,
    retests: Retests,
    sweep_nodes: Centre,
    better: str,
    rule: OutlierRule,
) -> dict[int, Confirmation]:
    """Per flagged node (index), what the retest rounds say: each round that measured any of
    its links gives the median of those links, which must still pass the rule against the
    sweep's node centre (the median and MAD of every node's median link)."""
    out: dict[int, Confirmation] = {}
    i, j = link_nodes(n, retests.links) if len(retests) else (np.zeros(0, int),) * 2
    for node in nodes.tolist():
        touches = (i == node) | (j == node)
        per_round = []
        for r in np.unique(retests.rounds[touches]).tolist():
            vals = retests.values[touches & (retests.rounds == r)]
            vals = vals[~np.isnan(vals)]
            if vals.size:
                per_round.append(float(np.median(vals.astype(float))))
        arr = np.asarray(per_round, float)
        bad = _still_bad(arr, sweep_nodes, better, rule.threshold, rule.link_factor)
        out[node] = Confirmation(arr.size, int(bad.sum()), tuple(per_round))
    return out


def sweep_retests(sweeps: Sequence[np.ndarray], links: np.ndarray) -> Retests:
    """The values of the given links in each of several sweeps (``--repeat``), as retest
    measurements: sweep s is round s + 1; a sweep that did not measure a link adds nothing."""
    parts_k, parts_v, parts_r = [], [], []
    for s, sweep in enumerate(sweeps):
        vals = sweep[links]
        keep = ~np.isnan(vals)
        parts_k.append(links[keep])
        parts_v.append(vals[keep])
        parts_r.append(np.full(int(keep.sum()), s + 1, np.int32))
    if not parts_k:
        return Retests.none()
    return Retests(np.concatenate(parts_k), np.concatenate(parts_v), np.concatenate(parts_r))
