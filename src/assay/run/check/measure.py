"""``assay check``'s measurements: a run here or in one allocation, planned and placed as
``assay run`` plans them (``assay.run.request``) and run by the same functions (through the
command's :class:`~assay.run.check.surface.Surface`), read back as the check's input, and the
retest of each FAIL (``assay.run.check.flow`` says where a retest runs)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.analysis.check.checkrun import CheckInput, Judged, input_of, judge, merged, retest_of
from assay.analysis.check.health import Verdict, node_figures, with_retest
from assay.errors import AssayError
from assay.launch import BatchScheduler
from assay.launch.admin import NodeAdmin
from assay.launch.registry import node_admin
from assay.run.check.surface import Surface
from assay.run.request import PlannedRun, RunRequest, plan_run, preflight_run


@dataclass
class MeasuredRun:
    run_id: str
    path: Path
    input: CheckInput


class Measure:
    """One check's runs: the first (``planned``), then its retest, and the hold of the nodes
    ``--resume`` re-measures."""

    def __init__(
        self, args, request: RunRequest, planned: PlannedRun, config, orule, local: str,
        surface: Surface, admin: NodeAdmin,
    ) -> None:  # fmt: skip
        self.args, self.request, self.planned = args, request, planned
        self.config, self.orule, self.local = config, orule, local
        self.surface, self.admin = surface, admin
        self.hold: Any = None

    @property
    def batch(self) -> bool:
        return isinstance(self.planned.scheduler, BatchScheduler)

    @property
    def nodes(self) -> int:
        """The nodes of the first run: the allocation's, or this one."""
        return int(getattr(self.planned.scheduler, "nodes", 1) or 1) if self.batch else 1

    # -- running ---------------------------------------------------------------------------

    def measure(self, planned: PlannedRun, *, label: str = "", first: bool = True) -> MeasuredRun:
        label = label or self.args.label or f"assay check {planned.origin}"
        preflight_run(planned)
        if not self.batch:
            run_id = self._here(planned, label)
        else:
            run_id = self._batch(planned, label, first)
        return self.load(run_id)

    def _here(self, planned: PlannedRun, label: str) -> str:
        outcome = self.surface.run_here(planned, label)
        self.surface.sync_index()
        if outcome.info.status == "interrupted":
            raise KeyboardInterrupt
        return outcome.info.run_id

    def _batch(self, planned: PlannedRun, label: str, first: bool) -> str:
        from assay.run.check.nodes import hold_drained, redrain, release

        say = self.surface.say
        on_start = None
        if first and self.args.resume:
            spec = planned.spec
            minutes = math.ceil((spec.check.budget_s if spec.check else 3600) / 60) + 30
            admin = node_admin(self.args.on, getattr(planned.scheduler, "partition", None))
            self.hold = hold_drained(admin, self.nodes, minutes, say)
            if self.hold is not None:
                planned = self._replanned(reservation=self.hold.reservation)
                hold = self.hold
                on_start = lambda: redrain(hold, say)  # noqa: E731
        try:
            outcome = self.surface.run_batch(planned, label, on_start)
        finally:
            if first and self.hold is not None:
                release(self.hold, say)
        if outcome is None:
            raise AssayError("the batch run returned no result")
        self.surface.sync_index()
        if outcome.info.status == "interrupted":
            raise KeyboardInterrupt
        return outcome.info.run_id

    def _replanned(
        self, *, hosts: list[str] | None = None, reservation: str | None = None,
        nodes: int | None = None, only: str | None = None,
    ) -> PlannedRun:  # fmt: skip
        """The check's request planned again: on some nodes only, inside a reservation,
        another allocation size, only some probes."""
        launch = dataclasses.replace(
            self.request.launch, nodes=nodes or self.request.launch.nodes, detach=False,
            hosts=hosts, reservation=reservation,
        )  # fmt: skip
        request = dataclasses.replace(self.request, launch=launch, only=only or self.request.only)
        return plan_run(request, self.planned.system, self.planned.mpis, self.config)

    def load(self, run_id: str) -> MeasuredRun:
        from assay.analysis.check.nodetype import facts_of_system
        from assay.figures.allpairs import file_matrices
        from assay.figures.folded import folded_of

        run = self.surface.store().load(run_id, samples=False)
        folded = folded_of(run)
        local = None
        if not run.info.batch:
            local = dataclasses.replace(facts_of_system(run.system), host=self.local)
        nodes = node_figures(folded.by_host, folded.figures, self.local)
        # one worker: this process may hold threads (the progress line), where forking is not safe
        matrices, problems = file_matrices(run.path, folded, self.orule, workers=1)
        for problem in problems:
            self.surface.say(f"note: {problem}", "yellow")
        inp = input_of(nodes, matrices, run.results, local)
        return MeasuredRun(run_id, run.path, inp)

    # -- judging -----------------------------------------------------------------------------

    def judge(self, run: MeasuredRun, refs, rule, metrics) -> Judged:
        return judge(run.input, refs, rule, metrics)

    def retest(
        self, first: MeasuredRun, verdicts: list[Verdict], refs, rule, metrics
    ) -> tuple[list[Verdict], str | None]:
        """Each FAIL not yet re-measured, re-measured once (see ``assay.run.check.flow``); the
        verdicts with their retests, and the retest's run id."""
        r = retest_of(verdicts)
        if r is None:
            return verdicts, None
        held = set(self.hold.held) if self.hold else set()
        if held:
            r.nodes = [n for n in r.nodes if n not in held]
            r.links = [link for link in r.links if not set(link) & held]
            if not r.nodes and not r.links:
                return with_retest(verdicts, [], "drained by assay while measured"), None
        probes = set(r.probes)
        hosts: list[str] | None = None
        nodes: int | None = None
        all_pairs = {j.probe for j in self.planned.jobs if j.spread.kind == "all-pairs"}
        if not self.batch:
            where = "re-run once on this node"
            probes -= all_pairs
        else:
            hosts = r.all_nodes()
            where = f"a second allocation of {', '.join(hosts)}"
            if len(hosts) >= 2 and r.links:
                probes |= all_pairs  # the links: the matrix again, over these nodes
            else:
                probes -= all_pairs
            nodes = len(hosts)
        if not probes:
            return with_retest(verdicts, [], "nothing to re-run"), None
        try:
            again_run = self._replanned(hosts=hosts, nodes=nodes, only=",".join(sorted(probes)))
        except AssayError as exc:
            first_line = str(exc).splitlines()[0]
            return with_retest(verdicts, [], f"the retest could not be planned: {first_line}"), None
        self.surface.say(f"re-measuring what failed ({', '.join(sorted(probes))}): {where}",
                         "yellow")  # fmt: skip
        try:
            again = self.measure(again_run, label=f"retest of {first.run_id}", first=False)
        except AssayError as exc:
            first_line = str(exc).splitlines()[0]
            return with_retest(verdicts, [], f"the retest could not run: {first_line}"), None
        judged = judge(merged(first.input, again.input, r), refs, rule, metrics)
        return with_retest(verdicts, judged.verdicts, where), again.run_id
