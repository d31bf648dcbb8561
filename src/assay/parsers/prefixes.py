"""Launcher line prefixes, taken off before any parser sees the text.

Output that went through a parallel launcher or a parallel shell often carries a prefix on
every line saying who wrote it: Open MPI's ``--tag-output`` (``[1,0]<stdout>:``) and
``--timestamp-output`` (``ctime`` before the tag), Slurm's ``srun --label`` (``0: ``, the task
number right-aligned), MPICH Hydra's and Intel MPI's ``-l``/``-prepend-rank`` (``[0] ``), and
pdsh/clush (``host: ``). The parsers read tools' own layouts, so the prefix comes off here,
once, for every text format.

Open MPI writes its tag at the start of every chunk it forwards as well as after every newline
in it (orte/mca/iof/base/iof_base_output.c): a line the program wrote in several pieces carries
the tag again in its middle, so that style is removed wherever it stands in a line.

When several writers printed (ranks, hosts), their lines are grouped per writer in the order
each first wrote, so interleaved outputs become one output per writer. A line without a
prefix (mpirun's own messages, a pasted prompt) stays with the writer before it.

A style counts only when it starts most lines (``_MIN_SHARE``): a table row that happens to
start with ``3: `` does not make a file "labelled".
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

_CTIME = r"[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}"
_STREAM = r"<std(?:out|err|diag)>:"
_INDENT = r"[ \t]{0,8}"  # a block pasted into Markdown is indented as a whole


@dataclass(frozen=True)
class Style:
    name: str  # as the user knows it, for the import's notes
    prefix: str  # regex of the prefix; group "who" names the writer, where the style says it
    key: str  # the param that tells writers apart: "rank" or "host"
    anywhere: bool = False  # the prefix recurs inside a line (Open MPI's chunked forwarding)
    # writers that are words of the tools, not hosts: IOR's and mdtest's verbosity tags
    # ("V-1: Entering ..."), launchers' and loggers' own words
    not_who: str = ""

    @property
    def start(self) -> re.Pattern[str]:
        # a blank right after a tag at a line's start is taken too; inside a line, what
        # follows the tag is the program's own text
        return _compiled(_INDENT + self.prefix + (" ?" if self.anywhere else ""))

    @property
    def inner(self) -> re.Pattern[str]:
        return _compiled(self.prefix)


@functools.cache
def _compiled(regex: str) -> re.Pattern[str]:
    return re.compile(regex)


STYLES = (
    Style(
        "Open MPI --tag-output",
        rf"(?:{_CTIME})?\[[^\[\],\s]{{1,64}},(?P<who>\d{{1,9}})\]{_STREAM}",
        "rank",
        anywhere=True,
    ),
    Style("Open MPI --timestamp-output", rf"{_CTIME}{_STREAM}", "rank", anywhere=True),
    Style("srun --label", r"(?P<who>\d{1,9}): ", "rank"),
    Style("mpiexec -l (MPICH, Intel MPI)", r"\[(?P<who>\d{1,9})\] ", "rank"),
    Style(
        "pdsh/clush",
        r"(?P<who>[A-Za-z][A-Za-z0-9_.-]{0,62}): ",
        "host",
        not_who=r"V-\d+|(?i:error|warning|note|info|debug|srun|mpirun|mpiexec|slurmstepd)",
    ),
)

# A style must start at least this share of the non-blank lines, and at least two of them.
_MIN_SHARE = 0.6
# pdsh/clush: a host prints many lines; "Triad: 1234" style keys are each on one line.
_MIN_LINES_PER_HOST = 3


@dataclass
class Writer:
    who: str | None  # rank number or host name; None when the style does not say
    lines: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return "".join(self.lines)


@dataclass
class Split:
    style: Style | None
    writers: list[Writer]


def _starts(style: Style, lines: list[str], n_text: int) -> list[re.Match[str] | None] | None:
    """Each line's prefix, or None once too many lines lack it for the style to fit: most
    texts have no prefix, and each style is then given up after about 40 % of the lines."""
    start = style.start
    words = _compiled(style.not_who) if style.not_who else None
    spare = n_text - max(2, _MIN_SHARE * n_text)  # text lines that may lack the prefix
    matches: list[re.Match[str] | None] = []
    for line in lines:
        m = start.match(line)
        if m and words and words.fullmatch(m["who"]):
            m = None
        if m is None and line.strip():
            spare -= 1
            if spare < 0:
                return None
        matches.append(m)
    return matches


def _fits(style: Style, matches: list[re.Match[str] | None], n_text: int) -> bool:
    hits = [m for m in matches if m]
    if len(hits) < 2 or len(hits) < _MIN_SHARE * n_text:
        return False
    if style.key != "host":
        return True
    per_host: dict[str, int] = {}
    for m in hits:
        per_host[m["who"]] = per_host.get(m["who"], 0) + 1
    return min(per_host.values()) >= _MIN_LINES_PER_HOST


def _strip(style: Style, line: str, m: re.Match[str]) -> str:
    rest = line[m.end() :]
    if style.anywhere:
        rest = style.inner.sub("", rest)
    return rest


def split_writers(text: str) -> Split:
    """The text's lines grouped per writer, each line's prefix taken off; one writer holding
    the text unchanged when no style starts most lines."""
    # launchers prefix what follows a newline, not a carriage return (a progress line that
    # redraws itself with \r is one line to them)
    lines = text.split("\n")
    lines = [line + "\n" for line in lines[:-1]] + ([lines[-1]] if lines[-1] else [])
    n_text = sum(1 for line in lines if line.strip())
    for style in STYLES:
        matches = _starts(style, lines, n_text)
        if matches is not None and _fits(style, matches, n_text):
            return Split(style, _group(style, lines, matches))
    return Split(None, [Writer(None, lines)])


def _group(style: Style, lines: list[str], matches: list[re.Match[str] | None]) -> list[Writer]:
    writers: dict[str | None, Writer] = {}
    pending: list[str] = []  # lines before the first prefixed one
    current: Writer | None = None
    for line, m in zip(lines, matches, strict=True):
        if m is None:  # a line of the writer before (mpirun's own words, a pasted prompt)
            kept = style.inner.sub("", line) if style.anywhere else line
            (current.lines if current else pending).append(kept)
            continue
        who = m.groupdict().get("who")
        current = writers.setdefault(who, Writer(who))
        current.lines.append(_strip(style, line, m))
    first = next(iter(writers.values()))
    first.lines[:0] = pending
    return list(writers.values())
