"""What a stored record is, and the one rule every reader applies to a line that is not one.

``samples.jsonl`` and ``jobs.jsonl`` hold one JSON object per line, only ever appended to. A
line can still go bad after the fact: a disk error, a hand edit, a copy cut short, another tool
that wrote ``NaN``. The rule, in one place for every reader (loading a run, folding its
figures, the JSON report, the index, recovery, the Slurm front end):

* a last line without its newline was cut by a kill while it was written: left out, silently
  (the run is closed "interrupted" and says so);
* any other line that is not a record of its file's kind is skipped and counted in a
  :class:`Damage` (which lines, and why), and whoever shows the run says it once:
  ``run X: 3 damaged lines in samples.jsonl skipped (line 10: not UTF-8; line 11: no 'unit';
  line 40: 'value' is not a finite number)``;
* reads are bounded: a file is read up to its size when opened, a line is held to
  ``MAX_LINE`` bytes (a longer one is damaged), and a file that is not a regular one (a link to
  /dev/zero, a pipe) is not read at all (the whole file is named as skipped, as line 0).

A sample line is one JSON object (UTF-8, nothing after it; JSON has no NaN or Infinity, so
those words make a line damaged) with text ``probe``, ``metric`` and ``unit``, ``better``
"higher" or "lower", a finite number ``value``, ``params`` an object when present, and
``stats`` an object whose known fields are finite numbers (``n`` a whole number). A job line
has a text ``job_id``, a known ``status``, ``exit_code`` a whole number or null, a finite
``wall_time``, ``argv`` a list of text, and the optional fields of their types. ``run.json``
is read by :func:`read_run_info`, which names what is wrong with it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, get_args

from assay.errors import StoreError
from assay.inputfile import UnreadableFile, read_side
from assay.model import JobStatus, RunInfo, RunStatus
from assay.store import lines as store_lines
from assay.store.lines import NotRegular, lines_with_offsets

SAMPLES = "samples.jsonl"
JOBS = "jobs.jsonl"
NAMED = 5  # damaged lines named (with why) in a note; the rest are counted
OFFSETS_KEPT = 100_000  # damaged lines whose offsets a fold keeps (beyond: lines are re-checked)


@dataclass
class Damage:
    """The damaged lines of one record file: how many, the first few (1-based line number
    and why), and where each starts (byte offset; None once there are too many to keep)."""

    file: str
    count: int = 0
    named: list[tuple[int, str]] = field(default_factory=list)
    offsets: list[int] | None = field(default_factory=list)

    def __bool__(self) -> bool:
        return self.count > 0

    def add(self, line: int, offset: int, why: str) -> None:
        self.count += 1
        if len(self.named) < NAMED:
            self.named.append((line, why))
        if self.offsets is not None:
            if len(self.offsets) < OFFSETS_KEPT:
                self.offsets.append(offset)
            else:
                self.offsets = None

    def extend(self, later: Damage, lines_before: int) -> None:
        """Add the damage found in a later part of the file, whose first line is line
        ``lines_before`` + 1 of the whole file."""
        self.count += later.count
        room = NAMED - len(self.named)
        self.named += [(n + lines_before, why) for n, why in later.named[:room]]
        if self.offsets is None or later.offsets is None:
            self.offsets = None
        elif len(self.offsets) + len(later.offsets) <= OFFSETS_KEPT:
            self.offsets += later.offsets
        else:
            self.offsets = None

    @property
    def whole(self) -> bool:
        """The whole file was not read (not a regular file): named as line 0."""
        return bool(self.named) and self.named[0][0] == 0

    def note(self, run_id: str) -> str:
        if self.whole:
            return f"run {run_id}: {self.file} skipped: {self.named[0][1]}"
        where = "; ".join(f"line {n}: {why}" for n, why in self.named)
        more = self.count - len(self.named)
        if more:
            where += f"; and {more} more"
        s = "" if self.count == 1 else "s"
        return f"run {run_id}: {self.count} damaged line{s} in {self.file} skipped ({where})"

    def to_dict(self) -> dict[str, Any]:
        return {"file": self.file, "count": self.count, "named": self.named,
                "offsets": self.offsets}  # fmt: skip

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Damage:
        offsets = d.get("offsets")
        return cls(
            str(d["file"]),
            int(d["count"]),
            [(int(n), str(why)) for n, why in d.get("named", [])],
            None if offsets is None else [int(o) for o in offsets],
        )


# -- one line -----------------------------------------------------------------------------------


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


_DECODE = json.JSONDecoder(parse_constant=_no_constant).raw_decode


def decode(raw: bytes) -> Any:
    """The JSON value of one stored line; ValueError (saying why) when it is not one."""
    try:
        text = raw.decode()
    except UnicodeDecodeError:
        raise ValueError("not UTF-8") from None
    text = text.strip()
    try:
        value, stop = _DECODE(text)
    except ValueError as exc:
        msg = str(exc)
        raise ValueError(
            msg if "JSON number" in msg else f"not JSON ({msg.split(':')[0]})"
        ) from None
    except RecursionError:
        raise ValueError("not JSON (nested too deep)") from None
    if stop != len(text):
        raise ValueError("more after the JSON object")
    return value


def _number(v: object) -> bool:
    """A finite JSON number (a bool is not one; an integer too large for a float is not)."""
    if type(v) is float:
        return v - v == 0.0  # False for inf and nan
    if type(v) is int:
        try:
            return math.isfinite(float(v))
        except OverflowError:
            return False
    return False


_BETTER = frozenset({"higher", "lower"})


def _one_of(value: object, choices: frozenset[str]) -> bool:
    """Whether ``value`` is one of the words ``choices``: an object or a list (unhashable) is
    not, where ``in`` on a set raised TypeError (a run.json whose status is an object)."""
    return type(value) is str and value in choices


_STATS = ("n", "min", "max", "mean", "median", "stddev", "p99", "p999")


def _stats_problem(stats: object) -> str | None:
    if not isinstance(stats, dict):
        return "'stats' is not an object"
    n = stats.get("n")
    if type(n) is not int or n < 0:
        return "'stats.n' is not a count"
    for k in _STATS:
        v = stats.get(k)
        if v is not None and not _number(v):
            return f"'stats.{k}' is not a finite number"
    return None


def sample_problem(d: object) -> str | None:
    """Why ``d`` is not a sample record, or None when it is one."""
    if not isinstance(d, dict):
        return "not a JSON object"
    for key in ("probe", "metric", "unit"):
        if key not in d:
            return f"no {key!r}"
        if type(d[key]) is not str or not d[key]:
            return f"{key!r} is not text"
    if not _one_of(d.get("better"), _BETTER):
        return "'better' is neither 'higher' nor 'lower'"
    if "value" not in d:
        return "no 'value'"
    if not _number(d["value"]):
        return "'value' is not a finite number"
    params = d.get("params")
    if params is not None and not isinstance(params, dict):
        return "'params' is not an object"
    stats = d.get("stats")
    if stats and (why := _stats_problem(stats)):
        return why
    for key in ("run_id", "job_id"):
        if type(d.get(key, "")) is not str:
            return f"{key!r} is not text"
    return None


_JOB_STATUSES = frozenset(get_args(JobStatus))
_JOB_TEXT = ("stdout_path", "stderr_path", "reason", "started", "scheduler_state")


def _texts(v: object) -> bool:
    return isinstance(v, list) and all(type(a) is str for a in v)


def job_problem(d: object) -> str | None:
    """Why ``d`` is not a job result record, or None when it is one."""
    if not isinstance(d, dict):
        return "not a JSON object"
    if type(d.get("job_id")) is not str or not d["job_id"]:
        return "no 'job_id'" if "job_id" not in d else "'job_id' is not text"
    if not _one_of(d.get("status"), _JOB_STATUSES):
        return "'status' is not a job status"
    code = d.get("exit_code", ...)
    if code is ... or (code is not None and type(code) is not int):
        return "no 'exit_code'" if code is ... else "'exit_code' is not a whole number"
    if not _number(d.get("wall_time")):
        return "'wall_time' is not a finite number"
    if not _texts(d.get("argv")):
        return "'argv' is not a list of text"
    if not _texts(d.get("hosts", [])):
        return "'hosts' is not a list of text"
    n = d.get("n_samples", 0)
    if type(n) is not int or n < 0:
        return "'n_samples' is not a count"
    for key in _JOB_TEXT:
        if type(d.get(key, "")) is not str:
            return f"{key!r} is not text"
    return None


def _any_object(d: object) -> str | None:
    return None if isinstance(d, dict) else "not a JSON object"


Rule = Callable[[object], "str | None"]
RULES: dict[str, Rule] = {SAMPLES: sample_problem, JOBS: job_problem}


def rule_of(path: Path) -> Rule:
    """The rule of a record file, by its name (any other JSONL: one object per line)."""
    return RULES.get(path.name, _any_object)


# -- a file ---------------------------------------------------------------------------------------


def scan(
    path: Path,
    damage: Damage | None = None,
    start: int = 0,
    end: int | None = None,
    rule: Rule | None = None,
) -> Iterator[tuple[int, bytes, dict[str, Any]]]:
    """(offset, line, record) of every good line of a record file (or of its part from
    ``start`` to ``end``); a damaged line is skipped and added to ``damage``, numbered from
    the part's first line."""
    check = rule or rule_of(path)
    try:
        for n, (offset, line) in enumerate(lines_with_offsets(path, start, end), 1):
            try:
                if not line.endswith(b"\n"):
                    raise ValueError(f"longer than {store_lines.MAX_LINE:,} bytes")
                record = decode(line)
            except ValueError as exc:
                if damage is not None:
                    damage.add(n, offset, str(exc))
                continue
            why = check(record)
            if why is not None:
                if damage is not None:
                    damage.add(n, offset, why)
                continue
            yield offset, line, record
    except NotRegular:
        if damage is not None:
            damage.add(0, 0, "not a regular file (a device, a pipe?): not read")


def read_records(path: Path, damage: Damage | None = None) -> Iterator[dict[str, Any]]:
    """The good records of a record file, in stored order (see the module docstring)."""
    for _, _, record in scan(path, damage):
        yield record


# -- run.json -------------------------------------------------------------------------------------

_RUN_STATUSES = frozenset(get_args(RunStatus))
_RUN_FIELDS = {f.name for f in fields(RunInfo)}


def _run_problem(d: object) -> str | None:
    if not isinstance(d, dict):
        return f"it holds a JSON {type(d).__name__}, not an object"
    for key in ("run_id", "created", "suite"):
        if key not in d:
            return f"it has no {key!r}"
    for key in ("run_id", "created", "suite", "label", "finished", "assay_version", "source"):
        if type(d.get(key, "")) is not str:
            return f"its {key!r} is not text"
    if not _one_of(d.get("status", "running"), _RUN_STATUSES):
        return f"its 'status' is not one of {', '.join(sorted(_RUN_STATUSES))}"
    n = d.get("n_jobs", 0)
    if type(n) is not int or n < 0:
        return "its 'n_jobs' is not a count"
    for key in ("argv", "notes"):
        if not _texts(d.get(key, [])):
            return f"its {key!r} is not a list of text"
    for key in ("batch", "slurm"):  # "slurm": runs stored before 0.2
        if not isinstance(d.get(key, {}), dict):
            return f"its {key!r} is not an object"
    if d.get("owner") is not None and not isinstance(d["owner"], dict):
        return "its 'owner' is not an object"
    return None


def read_run_info(run_dir: Path) -> RunInfo:
    """A run's ``run.json``; a StoreError naming the file and what is wrong with it."""
    path = run_dir / "run.json"
    try:
        raw = read_side(path, "run.json")
    except OSError as exc:
        raise _damaged_run_json(path, exc.strerror or str(exc)) from None
    except UnreadableFile as exc:
        raise _damaged_run_json(path, f"it is {exc.why}") from None
    if not raw.strip():
        raise _damaged_run_json(path, "it is empty")
    try:
        data = decode(raw)
    except ValueError as exc:
        why = f"it is {exc}" if str(exc).startswith("not") else str(exc)
        raise _damaged_run_json(path, why) from None
    why = _run_problem(data)
    if why:
        raise _damaged_run_json(path, why)
    return RunInfo(**{k: v for k, v in data.items() if k in _RUN_FIELDS})


def _damaged_run_json(path: Path, why: str) -> StoreError:
    return StoreError(
        f"run {path.parent.name}: {path} cannot be read: {why}",
        hint="its jobs and samples (jobs.jsonl, samples.jsonl) are intact; other runs are "
        "unaffected. Restore run.json from a backup, or move the run directory away",
    )
