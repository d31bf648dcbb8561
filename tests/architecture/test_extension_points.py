"""Where a change goes, done once for real: a new scheduler, a new probe and a new import format
are added to a copy of the source tree exactly as docs/architecture.md's "Where does my change
go?" table says, counting the files each one touches against the count the table gives, and
the copy then runs them end to end (a batch run through the generic front end and runner).

The toy scheduler is a batch scheduler whose "allocation" is a detached shell on this machine
with two host names; the toy probe prints one figure per node; the toy format reads
"toy: <value>" lines. None of them is in the product: they live in this test only.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "architecture.md"

TOY_SCHEDULER = '''
"""A toy scheduler: its "allocation" is a detached shell here, its nodes toy1, toy2, ...; their
states and reasons a JSON file ($TOY_NODES) that its node administration reads and writes."""

from __future__ import annotations

import json
import os
import re
import shlex
import signal
import subprocess
from pathlib import Path
from typing import Any

from assay.errors import LaunchError
from assay.launch.admin import NodeAdmin, NodeState
from assay.launch.contract import (
    Allocation, BatchScheduler, BatchState, Capabilities, LaunchOptions, Submission,
)
from assay.launch.parallel import Step, parallel_launcher
from assay.launch.place import NodeOptions, place


class ToyNodes(NodeAdmin):
    scheduler = "Toy"

    def _table(self) -> dict[str, list[str]]:
        return json.loads(Path(os.environ["TOY_NODES"]).read_text())

    def states(self, timeout=None):
        return {n: NodeState(n, s, r) for n, (s, r) in self._table().items()}

    def name_problem(self, name):
        return None if re.fullmatch(r"[\\w.-]+", name) else f"{name!r} is not one node"

    def drain_argv(self, node, reason):
        if self.name_problem(node):
            raise LaunchError(f"not updating {self.name_problem(node)}")
        return ["toyctl", "drain", node, reason]

    def resume_argv(self, node):
        return ["toyctl", "resume", node]

    def reserve_argv(self, name, nodes, user, minutes):
        return ["toyctl", "reserve", name, ",".join(nodes)]

    def unreserve_argv(self, name):
        return ["toyctl", "unreserve", name]

    def shell_line(self, argv):
        return shlex.join(argv)

    def update(self, argv):
        table = self._table()
        _, what, node, *reason = argv
        table[node] = ["drained", reason[0]] if what == "drain" else ["idle", ""]
        Path(os.environ["TOY_NODES"]).write_text(json.dumps(table))

    def reserve(self, argv):
        with open(os.environ["TOY_NODES"] + ".log", "a") as log:
            log.write(shlex.join(argv) + "\\n")

    def permission(self):
        return None


class ToyLauncher(BatchScheduler):
    caps = Capabilities("toy", max_nodes=None, batch=True)

    def __init__(self, nodes: int) -> None:
        self.nodes, self.poll_s = nodes, 0.2

    @classmethod
    def configured(cls, config: dict[str, Any], options: LaunchOptions) -> ToyLauncher:
        return cls(options.nodes or 2)

    @classmethod
    def node_admin(cls, partition=None) -> ToyNodes:
        return ToyNodes(partition)

    def place(self, jobs, mpis):
        return place(jobs, NodeOptions(self.nodes))

    def step_argv(self, job, argv, hosts, mpi):
        return parallel_launcher("toyrun").argv(Step("env", job.ranks, hosts=tuple(hosts)), argv)

    def submission(self, run_dir, run_id, jobs, env, python) -> Submission:
        hosts = ",".join(f"toy{i + 1}" for i in range(self.nodes))
        lines = ["#!/bin/bash", f"cd {shlex.quote(str(run_dir))}"]
        lines += [f"export {k}={shlex.quote(v)}" for k, v in sorted(env.items())]
        lines += [f"export TOY_HOSTS={hosts} TOY_JOB=$$",
                  shlex.join([python, "-m", "assay.run.runner", str(run_dir), "--launcher", "toy"]),
                  f"echo $? > {shlex.quote(str(run_dir / 'toy' / 'exit'))}"]
        return Submission(["bash", str(run_dir / "toy" / "batch.sh")], "\\n".join(lines) + "\\n")

    def submit(self, submission: Submission) -> str:
        self._dir = Path(submission.argv[-1]).parent
        with open(self._dir / "out.txt", "wb") as out:
            proc = subprocess.Popen(submission.argv, stdout=out, stderr=subprocess.STDOUT,
                                    start_new_session=True)
        self._proc = proc
        return str(proc.pid)

    def poll(self, handle: str) -> BatchState:
        self._proc.poll()  # reap it once it ended
        hosts = ",".join(f"toy{i + 1}" for i in range(self.nodes))
        exit_file = self._dir / "exit"
        if exit_file.exists() and exit_file.read_text().strip():
            code = int(exit_file.read_text())
            state = "COMPLETED" if code == 0 else "FAILED"
            return BatchState(handle, state, nodelist=hosts, final=True)
        if self._proc.returncode is not None:
            return BatchState(handle, "FAILED", reason="the shell ended early", final=True)
        return BatchState(handle, "RUNNING", nodelist=hosts)

    def cancel(self, handle: str) -> None:
        try:
            os.killpg(int(handle), signal.SIGTERM)
        except ProcessLookupError:
            pass

    def allocation(self) -> Allocation:
        return Allocation(os.environ.get("TOY_JOB"), os.environ["TOY_HOSTS"].split(","))

    def hostnames(self, nodelist: str) -> list[str]:
        return nodelist.split(",") if nodelist else []

    def to_plan(self, mpis) -> dict[str, Any]:
        return {"nodes": self.nodes}

    @classmethod
    def from_plan(cls, data: dict[str, Any]) -> ToyLauncher:
        return cls(int(data["nodes"]))
'''

TOY_RUN = '''
"""A toy parallel launcher: the step's command with its hosts in TOY_HOST (the toy probe's)."""

from __future__ import annotations

from assay.launch.parallel import ParallelLauncher, Step


class ToyRun(ParallelLauncher):
    name = "toyrun"

    def argv(self, step: Step, program: list[str]) -> list[str]:
        return [step.program, f"TOY_HOST={','.join(step.hosts)}", *step.args, *program]
'''

TOY_PROBE = '''
"""A toy probe: one figure per node, from a one-line Python command."""

from __future__ import annotations

import json
import sys

from assay.probes.base import JobDraft, Probe, ProbeParams, parse_jsonl


class ToyParams(ProbeParams):
    value: float = 42.0
    slow_on: str = ""  # the node where the figure is a tenth of ``value``


class ToyProbe(Probe):
    name = "toy"
    summary = "a toy figure"
    Params = ToyParams
    spread_kind = "per-node"

    def drafts(self, params, ctx, *, mpis, ranks):
        code = (f"import json, os; slow = os.environ.get('TOY_HOST') == {params.slow_on!r}; "
                f"print(json.dumps({{'metric': 'toy.value', 'params': {{}}, "
                f"'value': {params.value} / (10 if slow else 1)}}))")
        return [JobDraft(argv=[sys.executable, "-c", code], params={}, label="toy")]

    def parse(self, stdout, job, *, job_dir=None):
        return parse_jsonl(stdout, self.name, job.params)
'''

TOY_PARSER = '''
"""A toy format: lines "toy: <value>"."""

from __future__ import annotations

from assay.errors import ParseError
from assay.model import Sample
from assay.parsers.base import ParseResult


def looks_like(text: str) -> bool:
    return text.startswith("toy: ")


def parse(text: str, source: str = "<text>") -> ParseResult:
    samples = []
    for n, line in enumerate(text.splitlines(), start=1):
        try:
            samples.append(Sample.make("toy", "toy.value", float(line.removeprefix("toy: "))))
        except ValueError:
            raise ParseError(f"line {n}: not a toy value", source=source) from None
    return ParseResult(tool="toy", samples=samples)
'''


KINDS = ("a new probe", "a new scheduler", "a new parallel launcher", "a new import format")


def _doc_counts() -> dict[str, int]:
    """The number of files each change touches, as the doc's table says ("(N files)")."""
    counts = {}
    kinds = "|".join(KINDS)
    for line in DOC.read_text().splitlines():
        m = re.match(rf"\|\s*({kinds})[^|]*\|.*?\((\d+) files?\b", line)
        if m:
            counts[m.group(1)] = int(m.group(2))
    return counts


def _touched(before: Path, after: Path) -> list[str]:
    """Files of ``after`` that are new or differ from ``before``."""
    out = []
    for path in sorted(after.rglob("*")):
        if path.is_dir() or "__pycache__" in path.parts:
            continue
        rel = path.relative_to(after)
        old = before / rel
        if not old.exists() or old.read_bytes() != path.read_bytes():
            out.append(str(rel))
    return out


def _copy_source(tmp: Path) -> Path:
    src = tmp / "src"
    shutil.copytree(ROOT / "src" / "assay", src / "assay",
                    ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
    return src


def _add_line(path: Path, after: str, line: str) -> None:
    text = path.read_text()
    assert after in text, f"{path}: no {after!r} to add a line after"
    path.write_text(text.replace(after, after + line, 1))


def test_the_doc_counts_every_kind_of_change() -> None:
    assert set(_doc_counts()) == set(KINDS)


def _add_toys(pkg: Path, pristine: Path, counts: dict[str, int]) -> None:
    """Each change as the doc's table says, counting the files it touches."""
    seen: list[str] = []

    def touched(kind: str) -> None:
        files = [f for f in _touched(pristine, pkg) if f not in seen]
        assert len(files) == counts[kind], (kind, files)
        seen.extend(files)

    # A new scheduler: its module, and its line in the registry.
    (pkg / "launch" / "toy.py").write_text(TOY_SCHEDULER)
    _add_line(pkg / "launch" / "registry.py", "SCHEDULERS: dict[str, str] = {\n",
              '    "toy": "assay.launch.toy:ToyLauncher",\n')  # fmt: skip
    touched("a new scheduler")
    # A new parallel launcher (the toy scheduler's steps use it): its module and its line.
    (pkg / "launch" / "parallel" / "toyrun.py").write_text(TOY_RUN)
    _add_line(pkg / "launch" / "parallel" / "__init__.py", "PARALLEL: dict[str, str] = {\n",
              '    "toyrun": "assay.launch.parallel.toyrun:ToyRun",\n')  # fmt: skip
    touched("a new parallel launcher")
    # A new probe: its module (no native source: its command is Python's).
    (pkg / "probes" / "toy.py").write_text(TOY_PROBE)
    touched("a new probe")
    # A new import format: its parser, and its line in the formats table.
    (pkg / "parsers" / "toy.py").write_text(TOY_PARSER)
    _add_line(pkg / "parsers" / "__init__.py", 'FORMATS: dict[str, str] = {\n',
              '    "toy": "toy",\n')  # fmt: skip
    touched("a new import format")


@pytest.mark.slow
def test_toys_touch_the_files_the_doc_counts_and_run(tmp_path: Path) -> None:
    src = _copy_source(tmp_path)
    pristine = tmp_path / "pristine"
    shutil.copytree(src / "assay", pristine)
    _add_toys(src / "assay", pristine, _doc_counts())

    # ... and they work: a two-node batch run of the toy probe on the toy scheduler, its
    # report, and an import of the toy format.
    home = tmp_path / "home"
    env = {**os.environ, "PYTHONPATH": str(src), "ASSAY_HOME": str(home), "COLUMNS": "200",
           "ASSAY_CONFIG": str(tmp_path / "none.toml"),
           "TOY_NODES": str(tmp_path / "nodes.json")}  # fmt: skip
    suite = tmp_path / "toy.toml"
    suite.write_text('name = "toy"\n[[bench]]\nprobe = "toy"\nparams = { value = 7.5 }\n')

    def assay(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "assay", *args], capture_output=True,
                              text=True, env=env, timeout=120, check=False)  # fmt: skip

    started = time.monotonic()
    proc = assay("run", str(suite), "--on", "toy", "--nodes", "2")
    assert proc.returncode == 0, proc.stderr
    (run_dir,) = (home / "runs").iterdir()
    jobs = [json.loads(x) for x in (run_dir / "jobs.jsonl").read_text().splitlines()]
    assert sorted(h for j in jobs for h in j["hosts"]) == ["toy1", "toy2"]
    assert {j["status"] for j in jobs} == {"ok"}
    assert all(j["argv"][:2] == ["env", f"TOY_HOST={j['hosts'][0]}"] for j in jobs)
    samples = [json.loads(x) for x in (run_dir / "samples.jsonl").read_text().splitlines()]
    assert [s["value"] for s in samples] == [7.5, 7.5]
    info = json.loads((run_dir / "run.json").read_text())
    assert info["status"] == "complete" and info["batch"]["launcher"] == "toy"
    assert time.monotonic() - started < 60
    report = assay("report", "--format", "md")
    assert report.returncode == 0 and "toy.value" in report.stdout, report.stderr

    data = tmp_path / "toy.txt"
    data.write_text("toy: 1.5\ntoy: 2.5\n")
    imported = assay("import", "--format", "auto", str(data))
    assert imported.returncode == 0, imported.stderr

    # The toy scheduler serves `assay check --drain` and `--resume` through its node
    # administration: toy3 slow is drained; measured again well, it is resumed.
    nodes = tmp_path / "nodes.json"
    nodes.write_text(json.dumps({f"toy{i}": ["idle", ""] for i in (1, 2, 3)}))
    check = tmp_path / "toy-check.toml"
    body = '[check]\nbudget_s = 60\nmetrics = ["toy.value"]\n[[bench]]\nprobe = "toy"\n'
    check.write_text(f'name = "toy-check"\n{body}params = {{ slow_on = "toy3" }}\n')
    drained = assay("check", str(check), "--on", "toy", "--nodes", "3", "--drain", "--no-retest")
    assert drained.returncode == 3, drained.stderr
    state = json.loads(nodes.read_text())
    assert state["toy3"][0] == "drained" and state["toy3"][1].startswith("assay: toy.value")
    assert state["toy1"] == state["toy2"] == ["idle", ""]
    check.write_text(f'name = "toy-check"\n{body}')
    resumed = assay("check", str(check), "--on", "toy", "--nodes", "3", "--resume",
                    "--no-retest")  # fmt: skip
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(nodes.read_text())["toy3"] == ["idle", ""]
    reservations = (tmp_path / "nodes.json.log").read_text().splitlines()
    assert [r.split()[1] for r in reservations] == ["reserve", "unreserve"], reservations
