"""assay's source files, each parsed and walked once per test process: the architecture tests
read the whole tree, and each of them parsing it again (a dozen times in all) was most of
their 10 s. The trees are shared: a test reads them, never changes them."""

from __future__ import annotations

import ast
import functools
from pathlib import Path


@functools.cache
def tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text())


@functools.cache
def nodes(path: Path) -> tuple[ast.AST, ...]:
    """Every node of the file's tree, in ``ast.walk``'s order."""
    return tuple(ast.walk(tree(path)))


def nodes_of(text: str) -> tuple[ast.AST, ...]:
    """Every node of a piece of source, as ``nodes`` gives a file's (a rule's own examples)."""
    return tuple(ast.walk(ast.parse(text)))
