"""Launcher prefixes come off before any parser reads a line (assay.parsers.prefixes).

The real outputs of every format (tests/fixtures/real/ and the older fixture folders) are
written again the way each launcher writes a program's lines — the prefix formats taken from
the launchers' sources: Open MPI's orte/mca/iof/base/iof_base_output.c (a tag at the start of
every forwarded chunk and after every newline in it, so a line written in pieces carries it
again in its middle), Slurm's `srun --label` (``%*d: ``), MPICH Hydra's and Intel MPI's `-l`
(``[%d] ``), pdsh/clush (``host: ``) — and must give exactly the samples of the bare file.
Real prefixed files (nccl-tests under `mpirun --tag-output`, …) are in the corpus itself."""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from assay.errors import ParseError
from assay.parsers import FORMATS, ParseResult, parse_text
from assay.parsers.prefixes import split_writers

FIX = Path(__file__).parents[1] / "fixtures"
SKIP = {"README.md", "PROVENANCE.md", "expected.toml"}


def _real_files() -> list[tuple[str, Path]]:
    out = []
    for fmt in FORMATS:
        for folder in (FIX / "real" / fmt, FIX / fmt.replace("-", "_"), FIX / fmt):
            if folder.is_dir():
                out += [(fmt, p) for p in sorted(folder.iterdir()) if p.name not in SKIP]
    return out


def _parsed(text: str, fmt: str) -> ParseResult | None:
    try:
        return parse_text(text, fmt, source="t")
    except ParseError:
        return None


@functools.cache
def _bare_results() -> list[tuple[str, Path, str, ParseResult]]:
    """Every real output that parses and has no launcher prefix: parsed when a test asks, not
    while pytest collects (3 s of every collection, the quiet tests' included)."""
    out = []
    for fmt, path in _real_files():
        text = path.read_bytes().decode("utf-8", errors="replace")
        result = _parsed(text, fmt)
        if result is not None and result.samples and split_writers(text).style is None:
            out.append((fmt, path, text, result))
    return out


def _key(result: ParseResult, drop: str = "") -> list[tuple]:
    return sorted(
        (s.metric, s.value, repr(sorted((k, repr(v)) for k, v in s.params.items() if k != drop)))
        for s in result.samples
    )


def _orte(tag: str, text: str, rng: random.Random) -> str:
    """What Open MPI's IOF forwards: the text in chunks of random size, ``tag`` at the start
    of each chunk and after each newline inside it (not after a chunk's last byte)."""
    out, pos = [], 0
    while pos < len(text):
        end = min(len(text), pos + rng.randint(1, 400))
        chunk = text[pos:end]
        body = chunk[:-1].replace("\n", "\n" + tag) + chunk[-1]
        out.append(tag + body)
        pos = end
    return "".join(out)


def _per_line(prefix: str) -> Callable[[str, random.Random], str]:
    """``prefix`` before every line the launcher reads: what follows a newline (a \r redraw
    of a progress line is no line to it)."""
    return lambda text, rng: "".join(prefix + line for line in re.split(r"(?<=\n)(?!$)", text))


WRITERS: dict[str, Callable[[str, random.Random], str]] = {
    "orte-tag": lambda text, rng: _orte("[1,0]<stdout>:", text, rng),
    "orte-timestamp-tag": lambda text, rng: _orte(
        "Fri Nov 27 05:41:07 2026[54321,0]<stdout>:", text, rng
    ),
    "orte-timestamp": lambda text, rng: _orte("Fri Nov 27 05:41:07 2026<stdout>:", text, rng),
    "srun-label": _per_line("0: "),
    "srun-label-wide": _per_line(" 0: "),  # 10-99 tasks: the number right-aligned
    "hydra-l": _per_line("[0] "),
    "pdsh": _per_line("cn-0417.cluster.example: "),
}


@pytest.mark.parametrize("style", sorted(WRITERS))
def test_every_real_output_reads_the_same_through_every_launcher(style: str):
    assert len(_bare_results()) >= 50, f"only {len(_bare_results())} real outputs to try"
    rng = random.Random(26)
    for fmt, path, text, bare in _bare_results():
        prefixed = WRITERS[style](text, rng)
        for how in (fmt, "auto"):
            try:
                got = parse_text(prefixed, how, source=path.name)
            except ParseError as exc:
                if how == "auto" and "several tools" in str(exc):
                    continue  # the bare file is ambiguous too then
                raise AssertionError(f"{style} {fmt}/{path.name} (--format {how}): {exc}") from exc
            assert _key(got) == _key(bare), f"{style} {fmt}/{path.name} (--format {how})"
            assert got.meta["launcher_prefix"]


def test_two_hosts_interleaved_by_pdsh_are_kept_apart():
    """pdsh prints each host's lines as they come: two STREAM runs interleaved line by line
    become two runs, each sample naming its host."""
    streams = [(p, t, r) for f, p, t, r in _bare_results() if f == "stream"][:2]
    assert len(streams) == 2
    (_, a, ra), (_, b, rb) = streams
    la, lb = a.splitlines(keepends=True), b.splitlines(keepends=True)
    mixed = []
    for i in range(max(len(la), len(lb))):
        mixed += [f"n001: {la[i]}"] if i < len(la) else []
        mixed += [f"n002: {lb[i]}"] if i < len(lb) else []
    got = parse_text("".join(mixed), "stream", source="pdsh.out")
    hosts = {s.params["host"] for s in got.samples}
    assert hosts == {"n001", "n002"}
    first = ParseResult("stream", [s for s in got.samples if s.params["host"] == "n001"])
    assert _key(first, drop="host") == _key(ra)
    second = ParseResult("stream", [s for s in got.samples if s.params["host"] == "n002"])
    assert _key(second, drop="host") == _key(rb)


def test_a_table_that_starts_lines_with_numbers_and_colons_is_not_a_label():
    text = "Function: x\nCopy: 1\nScale: 2\nAdd: 3\nTriad: 4\n"
    assert split_writers(text).style is None  # keys, each on one line, are no host names
    rows = "1: a\nsome text\nmore text\n2: b\nand more\n"
    assert split_writers(rows).style is None  # two labelled lines of five
    # mdtest -v and IOR -v tag their own lines "V-1: ": a verbosity, not a host (the real
    # verbose mdtest 1.9.3 output in the corpus, tests/fixtures/real/mdtest, reads whole)
    verbose = "V-1: Entering create_remove_items...\nV-1: Entering unique_dir_access\n" * 3
    assert split_writers(verbose).style is None


def test_other_ranks_warnings_do_not_hide_rank_zeros_table():
    """Under --tag-output the other ranks print their own lines (NCCL INFO, warnings):
    they are grouped apart and hold no table, so rank 0's table is read alone."""
    nccl = next((p, t, r) for f, p, t, r in _bare_results() if f == "nccl")
    _, text, bare = nccl
    rank1 = "[1,1]<stderr>:Authorization required, but no authorization protocol specified\n"
    tagged = rank1 + _orte("[1,0]<stdout>:", text, random.Random(1)) + rank1
    got = parse_text(tagged, "auto", source="t")
    assert _key(got) == _key(bare)
