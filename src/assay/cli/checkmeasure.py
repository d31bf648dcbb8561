"""``assay check``'s measurements: a run here or in one Slurm allocation (through the same
functions ``assay run`` uses), read back as the check's input, and the retest of each FAIL
(``assay.cli.checkflow`` says where a retest runs)."""

from __future__ import annotations

import copy
import dataclasses
import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.text import Text

from assay.analysis.checkrun import CheckInput, Judged, input_of, judge, merged, retest_of
from assay.analysis.health import Verdict, node_figures, with_retest
from assay.cli.common import console, open_store, out, print_summary
from assay.errors import AssayError


@dataclass
class MeasuredRun:
    run_id: str
    path: Path
    input: CheckInput


class Measure:
    def __init__(self, args, spec, text: str, origin: str, system, mpis, config, local: str):
        self.args, self.spec, self.text, self.origin = args, spec, text, origin
        self.system, self.mpis, self.local = system, mpis, local
        self.hold: Any = None
        self.opts = None
        if args.on == "slurm":
            from assay.launch.slurm.options import options_from_config

            all_pairs = bool(spec.check and spec.check.all_pairs) or None
            self.opts = options_from_config(
                config, nodes=args.nodes, partition=args.partition, account=args.account,
                qos=args.qos, constraint=args.constraint, time=args.time_limit,
                sbatch_args=list(args.sbatch_args), max_wait=args.max_wait, all_pairs=all_pairs,
            )  # fmt: skip

    # -- running ---------------------------------------------------------------------------

    def measure(self, jobs, *, opts=None, label: str = "", first: bool = True) -> MeasuredRun:
        label = label or self.args.label or f"assay check {self.origin}"
        if self.opts is None:
            run_id = self._local(jobs, label)
        else:
            run_id = self._slurm(jobs, opts or self.opts, label, first)
        return self.load(run_id)

    def _local(self, jobs, label: str) -> str:
        import time

        from assay.cli.checkutil import sync_index
        from assay.cli.progress import run_progress
        from assay.launch import LOCAL, check_jobs
        from assay.run.execute import execute
        from assay.run.preflight import preflight

        check_jobs(jobs, LOCAL)
        preflight(jobs)
        store = open_store()
        writer = store.create(suite=self.spec.name, suite_text=self.text, system=self.system,
                              argv=sys.argv, n_jobs=len(jobs), label=label)  # fmt: skip
        console.print(f"run {writer.info.run_id}: {label}, {len(jobs)} jobs")
        started = time.monotonic()
        with run_progress(console, len(jobs)) as shown:
            outcome = execute(writer, jobs, self.mpis, cores=self.system.cores,
                              on_start=shown.on_start, on_end=shown.on_end,
                              on_tick=shown.on_tick)  # fmt: skip
        print_summary(outcome, time.monotonic() - started, writer.path)
        sync_index()
        if outcome.info.status == "interrupted":
            raise KeyboardInterrupt
        return writer.info.run_id

    def _slurm(self, jobs, opts, label: str, first: bool) -> str:
        from assay.cli.checkutil import say, sync_index
        from assay.cli.slurm import run_slurm
        from assay.run.preflight import preflight

        preflight(jobs)
        on_start = None
        if first and self.args.resume:
            from assay.run.checknodes import hold_drained, redrain

            minutes = math.ceil((self.spec.check.budget_s if self.spec.check else 3600) / 60) + 30
            self.hold = hold_drained(opts.partition, opts.nodes, minutes, say)
            if self.hold is not None:
                opts = dataclasses.replace(
                    opts, sbatch_args=[*opts.sbatch_args, f"--reservation={self.hold.reservation}"]
                )
                hold = self.hold
                on_start = lambda: redrain(hold, say)  # noqa: E731
        try:
            outcome = run_slurm(
                console=console, out=out, store=open_store(), spec_name=self.spec.name,
                suite_text=self.text, system=self.system, mpis=self.mpis, jobs=jobs, opts=opts,
                label=label, dry=False, on_start=on_start,
            )  # fmt: skip
        finally:
            if first and self.hold is not None:
                from assay.run.checknodes import release

                release(self.hold, say)
        if outcome is None:
            raise AssayError("the Slurm run returned no result")
        sync_index()
        if outcome.info.status == "interrupted":
            raise KeyboardInterrupt
        return outcome.info.run_id

    def load(self, run_id: str) -> MeasuredRun:
        from assay.analysis.nodetype import facts_of_system
        from assay.figures.folded import folded_of

        run = open_store().load(run_id, samples=False)
        folded = folded_of(run)
        local = None
        if not run.info.slurm:
            local = dataclasses.replace(facts_of_system(run.system), host=self.local)
        nodes = node_figures(folded.by_host, folded.figures, self.local)
        return MeasuredRun(run_id, run.path, input_of(nodes, folded.by_host, run.results, local))

    # -- judging -----------------------------------------------------------------------------

    def judge(self, run: MeasuredRun, refs, rule, metrics, orule) -> Judged:
        return judge(run.input, refs, rule, metrics, orule)

    def retest(
        self, jobs, first: MeasuredRun, verdicts: list[Verdict], refs, rule, metrics, orule
    ) -> tuple[list[Verdict], str | None]:
        """Each FAIL re-measured once (see ``assay.cli.checkflow``); the verdicts with their
        retests, and the retest's run id."""
        r = retest_of(verdicts)
        if r is None:
            return verdicts, None
        held = set(self.hold.held) if self.hold else set()
        if held:
            r.nodes = [n for n in r.nodes if n not in held]
            r.links = [link for link in r.links if not set(link) & held]
            if not r.nodes and not r.links:
                return with_retest(verdicts, [], "drained by assay while measured"), None
        again_jobs = [copy.deepcopy(j) for j in jobs if j.probe in r.probes and not j.skip_reason]
        if self.opts is None:
            where = "re-run once on this node"
            opts = None
        else:
            nodes = r.all_nodes()
            where = f"a second allocation of {', '.join(nodes)}"
            pairs = len(nodes) >= 2 and bool(r.links)
            if not pairs:
                again_jobs = [j for j in again_jobs if j.probe != "p2p"]
            elif not any(j.probe == "p2p" for j in again_jobs):
                again_jobs += [copy.deepcopy(j) for j in jobs if j.probe == "p2p"]
            opts = dataclasses.replace(
                self.opts, nodes=len(nodes), all_pairs=pairs, detach=False,
                sbatch_args=[*self.opts.sbatch_args, f"--nodelist={','.join(nodes)}"],
            )  # fmt: skip
        if not again_jobs:
            return with_retest(verdicts, [], "nothing to re-run"), None
        what = ", ".join(sorted({j.probe for j in again_jobs}))
        console.print(Text(f"re-measuring what failed ({what}): {where}", style="yellow"))
        try:
            again = self.measure(again_jobs, opts=opts, label=f"retest of {first.run_id}",
                                 first=False)  # fmt: skip
        except AssayError as exc:
            first_line = str(exc).splitlines()[0]
            return with_retest(verdicts, [], f"the retest could not run: {first_line}"), None
        judged = judge(merged(first.input, again.input, r), refs, rule, metrics, orule)
        return with_retest(verdicts, judged.verdicts, where), again.run_id
