"""``assay check``'s measurements: a run here or in one allocation, planned and placed as
``assay run`` plans them (``assay.run.request``) and run by the same functions, read back as the
check's input, and the retest of each FAIL (``assay.cli.checkflow`` says where a retest runs)."""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.text import Text

from assay.analysis.check.checkrun import CheckInput, Judged, input_of, judge, merged, retest_of
from assay.analysis.check.health import Verdict, node_figures, with_retest
from assay.cli.common import console, open_store, print_summary
from assay.errors import AssayError
from assay.launch import BatchLauncher
from assay.run.request import PlannedRun, RunRequest, plan_run, preflight_run


@dataclass
class MeasuredRun:
    run_id: str
    path: Path
    input: CheckInput


class Measure:
    """One check's runs: the first (``planned``), then its retest, and the hold of the nodes
    ``--resume`` re-measures."""

    def __init__(self, args, request: RunRequest, planned: PlannedRun, config, orule, local: str):
        self.args, self.request, self.planned = args, request, planned
        self.config, self.orule, self.local = config, orule, local
        self.hold: Any = None

    @property
    def batch(self) -> bool:
        return isinstance(self.planned.launcher, BatchLauncher)

    @property
    def nodes(self) -> int:
        """The nodes of the first run: the allocation's, or this one."""
        return int(getattr(self.planned.launcher, "nodes", 1) or 1) if self.batch else 1

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
        from assay.cli.checkutil import sync_index
        from assay.cli.progress import run_progress
        from assay.run.execute import execute

        store = open_store()
        jobs = planned.jobs
        writer = store.create(suite=planned.spec.name, suite_text=planned.text,
                              system=planned.system, argv=sys.argv, n_jobs=len(jobs),
                              label=label)  # fmt: skip
        console.print(f"run {writer.info.run_id}: {label}, {len(jobs)} jobs")
        started = time.monotonic()
        with run_progress(console, len(jobs)) as shown:
            outcome = execute(writer, jobs, planned.mpis, cores=planned.system.cores,
                              step_argv=planned.launcher.step_argv, on_start=shown.on_start,
                              on_end=shown.on_end, on_tick=shown.on_tick)  # fmt: skip
        print_summary(outcome, time.monotonic() - started, writer.path)
        sync_index()
        if outcome.info.status == "interrupted":
            raise KeyboardInterrupt
        return writer.info.run_id

    def _batch(self, planned: PlannedRun, label: str, first: bool) -> str:
        from assay.cli.batch import run_batch
        from assay.cli.checkutil import say, sync_index

        on_start = None
        if first and self.args.resume:
            from assay.run.checknodes import hold_drained, redrain

            spec = planned.spec
            minutes = math.ceil((spec.check.budget_s if spec.check else 3600) / 60) + 30
            opts = getattr(planned.launcher, "opts", None)
            partition = getattr(opts, "partition", None)
            self.hold = hold_drained(partition, self.nodes, minutes, say)
            if self.hold is not None:
                planned = self._replanned(sbatch_args=[f"--reservation={self.hold.reservation}"])
                hold = self.hold
                on_start = lambda: redrain(hold, say)  # noqa: E731
        try:
            outcome = run_batch(
                console=console, store=open_store(), spec_name=planned.spec.name,
                suite_text=planned.text, system=planned.system, mpis=planned.mpis,
                jobs=planned.jobs, launcher=planned.launcher, label=label, on_start=on_start,
            )  # fmt: skip
        finally:
            if first and self.hold is not None:
                from assay.run.checknodes import release

                release(self.hold, say)
        if outcome is None:
            raise AssayError("the batch run returned no result")
        sync_index()
        if outcome.info.status == "interrupted":
            raise KeyboardInterrupt
        return outcome.info.run_id

    def _replanned(
        self, *, sbatch_args: list[str], nodes: int | None = None, only: str | None = None
    ) -> PlannedRun:
        """The check's request planned again: more sbatch arguments (a reservation, a node
        list), another allocation size, only some probes."""
        launch = self.request.launch
        own = dict(launch.own)
        own["sbatch_args"] = [*(own.get("sbatch_args") or []), *sbatch_args]
        launch = dataclasses.replace(launch, own=own, nodes=nodes or launch.nodes, detach=False)
        request = dataclasses.replace(self.request, launch=launch, only=only or self.request.only)
        return plan_run(request, self.planned.system, self.planned.mpis, self.config)

    def load(self, run_id: str) -> MeasuredRun:
        from assay.analysis.check.nodetype import facts_of_system
        from assay.figures.allpairs import file_matrices
        from assay.figures.folded import folded_of

        run = open_store().load(run_id, samples=False)
        folded = folded_of(run)
        local = None
        if not run.info.batch:
            local = dataclasses.replace(facts_of_system(run.system), host=self.local)
        nodes = node_figures(folded.by_host, folded.figures, self.local)
        # one worker: this process may hold threads (the progress line), where forking is not safe
        matrices, problems = file_matrices(run.path, folded, self.orule, workers=1)
        for problem in problems:
            console.print(Text(f"note: {problem}", style="yellow"))
        inp = input_of(nodes, matrices, run.results, local)
        return MeasuredRun(run_id, run.path, inp)

    # -- judging -----------------------------------------------------------------------------

    def judge(self, run: MeasuredRun, refs, rule, metrics) -> Judged:
        return judge(run.input, refs, rule, metrics)

    def retest(
        self, first: MeasuredRun, verdicts: list[Verdict], refs, rule, metrics
    ) -> tuple[list[Verdict], str | None]:
        """Each FAIL not yet re-measured, re-measured once (see ``assay.cli.checkflow``); the
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
        all_pairs = {j.probe for j in self.planned.jobs if j.spread.kind == "all-pairs"}
        if not self.batch:
            where = "re-run once on this node"
            probes -= all_pairs
            nodes = None
            sbatch: list[str] = []
        else:
            hosts = r.all_nodes()
            where = f"a second allocation of {', '.join(hosts)}"
            if len(hosts) >= 2 and r.links:
                probes |= all_pairs  # the links: the matrix again, over these nodes
            else:
                probes -= all_pairs
            nodes, sbatch = len(hosts), [f"--nodelist={','.join(hosts)}"]
        if not probes:
            return with_retest(verdicts, [], "nothing to re-run"), None
        try:
            again_run = self._replanned(sbatch_args=sbatch, nodes=nodes,
                                        only=",".join(sorted(probes)))  # fmt: skip
        except AssayError as exc:
            first_line = str(exc).splitlines()[0]
            return with_retest(verdicts, [], f"the retest could not be planned: {first_line}"), None
        console.print(Text(f"re-measuring what failed ({', '.join(sorted(probes))}): {where}",
                           style="yellow"))  # fmt: skip
        try:
            again = self.measure(again_run, label=f"retest of {first.run_id}", first=False)
        except AssayError as exc:
            first_line = str(exc).splitlines()[0]
            return with_retest(verdicts, [], f"the retest could not run: {first_line}"), None
        judged = judge(merged(first.input, again.input, r), refs, rule, metrics)
        return with_retest(verdicts, judged.verdicts, where), again.run_id
