"""Each table of config.toml is declared by the module that owns it (issue 29): the scheduler its
table, a serving probe its keys in that table, the analysis its rules. ``assay.config.schema``
holds only the mechanism; ``assay.run.configfile`` assembles the declarations; the help of
``assay config`` is read from them. A declaration is checked when it is made: a default outside
its own range, or a table declared twice, is refused before any file is read."""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import fields
from pathlib import Path
from typing import Annotated, Any

import pytest
from pydantic import Field

from assay.analysis.check.checklimits import CheckRule, CheckTable
from assay.analysis.statistics.outliers import OutlierRule, OutliersTable
from assay.config.describe import describe
from assay.config.schema import (
    ConfigTable,
    DeclarationError,
    Section,
    assemble,
    table_defaults,
    validate_config,
)
from assay.errors import ConfigError
from assay.launch.contract import Capabilities, LaunchOptions, Scheduler
from assay.launch.registry import SCHEDULERS
from assay.launch.slurm.options import SlurmOptions, SlurmTable, section
from assay.run.configfile import schema, sections
from conftest import run_cli

SRC = Path(__file__).resolve().parents[2] / "src" / "assay"


def test_every_table_is_declared_by_exactly_one_owner_outside_config() -> None:
    declared = sections()
    twice = [name for name, n in Counter(s.name for s in declared).items() if n > 1]
    assert not twice, f"tables declared more than once: {twice}"
    assert {"slurm", "mpi", "peak", "outliers", "check"} <= set(schema().sections)
    for s in declared:
        assert not s.owner.startswith("assay.config"), f"[{s.name}] declared by {s.owner}"
        # each key of a table is declared once, by the table's owner or by one part's owner
        for doc in describe(assemble([s])):
            assert len({k.key for k in doc.keys}) == len(doc.keys)


def test_the_mechanism_names_no_table() -> None:
    """``config/schema.py`` is the mechanism only: no section's name is a string in it."""
    tree = ast.parse((SRC / "config" / "schema.py").read_text())
    texts = {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)}
    assert not texts & set(schema().sections)


def test_a_default_outside_its_own_range_is_refused_when_declared() -> None:
    with pytest.raises(DeclarationError, match=r"Port: a default outside its own range: port"):

        class Port(ConfigTable):
            port: Annotated[int, Field(ge=1, le=65535)] = 70000

    with pytest.raises(DeclarationError, match="retest = 'yes'"):

        class Flag(ConfigTable):
            retest: bool = "yes"  # type: ignore[assignment]

    class Fine(ConfigTable):  # a required key has no default to check; None means "not set"
        name: str
        port: Annotated[int, Field(ge=1, le=65535)] = 8765
        network: str | None = None

    assert table_defaults(Fine) == {"port": 8765, "network": None}


def test_a_table_declared_twice_is_refused_naming_both_owners() -> None:
    class Other(ConfigTable):
        nodes: int = 1

    with pytest.raises(DeclarationError, match=r"\[slurm\] is declared twice: by "
                       r"assay.launch.slurm.options and by test_config_owners"):  # fmt: skip
        assemble([section(), Section("slurm", Other)])


def _code_names(path: Path) -> set[str]:
    """The names and strings a module's code uses (its docstrings and comments left out)."""
    tree = ast.parse(path.read_text())
    docs = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef) and ast.get_docstring(node)
    }
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
            found.add(node.value)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
        elif isinstance(node, ast.Name):
            found.add(node.id)
    return found


def test_fio_declares_its_keys_and_the_scheduler_does_not() -> None:
    """fio's port and network are fio's declaration, composed into the table of every scheduler
    that starts servers; no scheduler's module names them."""
    assert not {"fio_port", "fio_network"} & set(SlurmTable.model_fields)
    (slurm,) = [d for d in describe(schema()) if d.title == "[slurm]"]
    owners = {k.key: k.owner for k in slurm.keys}
    assert owners["fio_port"] == owners["fio_network"] == "assay.probes.fio"
    assert owners["nodes"] == "assay.launch.slurm.options"
    naming = [str(p.relative_to(SRC)) for p in (SRC / "launch").rglob("*.py")
              if _code_names(p) & {"fio_port", "fio_network"}]  # fmt: skip
    assert not naming, f"launch/ names fio's port: {naming}"
    with pytest.raises(ConfigError, match=r"\[slurm\] fio_port = 0: expected a value of at least"):
        validate_config({"slurm": {"fio_port": 0}}, schema())


def test_defaults_are_written_once_where_the_table_is_declared() -> None:
    slurm = table_defaults(SlurmTable)
    for f in fields(SlurmOptions):
        if f.name in slurm and f.name != "mpi":
            assert getattr(SlurmOptions(), f.name) == slurm[f.name], f.name
    assert CheckRule().retest is table_defaults(CheckTable)["retest"]
    assert OutlierRule() == OutlierRule(**table_defaults(OutliersTable))


class ToyTable(ConfigTable):
    """``[toy]``: a scheduler of this test."""

    depth: Annotated[int, Field(ge=1, le=9)] = Field(3, description="how deep")


class ToyLauncher(Scheduler):
    caps = Capabilities("toy", max_nodes=1)

    @classmethod
    def configured(cls, config: dict[str, Any], options: LaunchOptions) -> ToyLauncher:
        return cls()

    @classmethod
    def config_section(cls) -> Section:
        return Section("toy", ToyTable)

    def place(self, jobs, mpis):  # type: ignore[no-untyped-def]
        return jobs

    def step_argv(self, job, argv, hosts, mpi):  # type: ignore[no-untyped-def]
        return argv


def test_a_new_scheduler_brings_its_table_by_declaring_it(monkeypatch) -> None:
    monkeypatch.setitem(SCHEDULERS, "toy", "test_config_owners:ToyLauncher")
    assembled = assemble(sections())
    assert assembled.sections["toy"].owner == __name__
    assert validate_config({"toy": {"depth": 4}}, assembled) == {"toy": {"depth": 4}}
    with pytest.raises(ConfigError, match=r"\[toy\] depth = 10: expected a value of at most 9"):
        validate_config({"toy": {"depth": 10}}, assembled)
    with pytest.raises(ConfigError, match=r"unknown section \[toy\]"):
        validate_config({"toy": {"depth": 4}}, schema())  # the product's: no toy scheduler


def test_assay_config_shows_every_declared_key(tmp_path: Path) -> None:
    proc = run_cli("config", home=tmp_path / "home",
                   env={"ASSAY_CONFIG": str(tmp_path / "none.toml")}, timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for doc in describe(schema()):
        assert doc.title in proc.stdout and f"declared by {doc.owner}" in proc.stdout
        for key in doc.keys:
            assert key.key in proc.stdout and key.help.split()[0] in proc.stdout, key
    assert "8765" in proc.stdout and "declared by assay.probes.fio" in proc.stdout
    bad = tmp_path / "bad.toml"
    bad.write_text("[peak]\ncores = 0\n")
    proc = run_cli("config", home=tmp_path / "home", env={"ASSAY_CONFIG": str(bad)}, timeout=60)
    assert proc.returncode == 2 and "[peak] cores = 0" in proc.stderr, proc.stderr
