"""The mutation harness (``tests/mutate.py``) over the inputs of issue 28 that are not tool
outputs: a reference set (a shipped one), a run's ``slurm/topology.*``, and ``check.json``
beside a run. A case passes when its reader returns or raises its own error (a message, exit
2); anything else is a crash. Reproducible: the seed, the case and the mutations are named."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from assay.analysis.check.health import Verdict
from assay.errors import AssayError
from assay.references.loader import load_file
from assay.report.check import check_document, read_verdicts
from assay.system.topology import parse_show_topology, parse_topology_conf
from mutate import MUTATIONS

CASES = 50  # three surfaces: about 20 s on the loaded 2-core VM
HERE = Path(__file__).parents[1]  # tests/
SETS = sorted((HERE.parent / "src" / "assay" / "references" / "sets").glob("*.toml"))
TOPOLOGIES = sorted(
    p for p in (HERE / "fixtures" / "slurm" / "topology").iterdir() if p.suffix in (".txt", ".conf")
)


def _mutate(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    names = rng.choices(list(MUTATIONS), k=rng.choice((1, 1, 2, 3)))
    for name in names:
        data = MUTATIONS[name](data, rng)
    return data, "+".join(names)


def _check_json() -> bytes:
    v = Verdict(subject="n1", kind="node", check="memory.triad", metric="memory.triad",
                grade="FAIL", figure=1e10, baseline=2e10, unit="B/s", ratio=0.5,
                noise="beyond the noise", test="robust z -8.1", against="reference x")  # fmt: skip
    doc = check_document([v], run_id="r", suite="s", level=1, against={}, notes=[],
                         retest_run=None, actions=[])  # fmt: skip
    return json.dumps(doc, indent=1).encode()


@pytest.mark.parametrize("surface", ["reference set", "topology", "check.json"])
def test_mutated_side_files_never_crash_their_reader(tmp_path: Path, surface: str):
    crashes = []
    for case in range(CASES):
        rng = random.Random(f"{surface}:1:{case}")
        if surface == "reference set":
            source = rng.choice(SETS)
        elif surface == "topology":
            source = rng.choice(TOPOLOGIES)
        else:
            source = None
        data, how = _mutate(source.read_bytes() if source else _check_json(), rng)
        try:
            if surface == "reference set":
                path = tmp_path / source.name
                path.write_bytes(data)
                load_file(path)
            elif surface == "topology":
                text = data.decode("utf-8", errors="replace")
                parse = (
                    parse_topology_conf if source.name.endswith(".conf") else parse_show_topology
                )
                parse(text, source.name)
            else:
                (tmp_path / "check.json").write_bytes(data)
                read_verdicts(tmp_path)
        except AssayError:
            pass
        except Exception as exc:
            crashes.append(f"case {case} ({how}, {source.name if source else ''}): "
                           f"{type(exc).__name__}: {exc}"[:300])  # fmt: skip
    assert not crashes, "\n".join(crashes[:10])
