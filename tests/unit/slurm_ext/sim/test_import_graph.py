"""No import circle inside ``slurm_ext/sim``, deferred imports included; the policies and the
workload sources never import the simulator (imports flow one way: ``sim`` -> ``workloads``,
``policies``, ``model``).

The graph is read from the source with ``ast``: every ``import``/``from ... import`` of a
``slurm_ext.sim`` module counts, at module level or inside a function (a deferred import only
hides a circle), except under ``if TYPE_CHECKING:`` (never executed).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.unit.test_import_graph import find_cycle  # one circle search for both checks

PACKAGE = "slurm_ext.sim"
ROOT = Path(__file__).resolve().parents[4] / "slurm_ext"
SIM = ROOT / "sim"


def _typing_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(source: str) -> set[str]:
    """``slurm_ext.sim`` modules imported at run time (anywhere but under TYPE_CHECKING)."""
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _typing_only(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE + "."):
            found.add(node.module.split(".")[2])
        elif isinstance(node, ast.ImportFrom) and node.module == PACKAGE:
            found.update(a.name for a in node.names if (SIM / f"{a.name}.py").is_file())
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[2] for a in node.names if a.name.startswith(PACKAGE + "."))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found


def import_graph() -> dict[str, set[str]]:
    graph = {p.stem: imports_of(p.read_text()) for p in SIM.glob("*.py") if p.stem != "__init__"}
    return {m: {d for d in deps if d in graph and d != m} for m, deps in graph.items()}


def test_no_import_circle_in_sim() -> None:
    graph = import_graph()
    assert "engine" in graph and "schedulers" in graph["engine"]  # the graph is really read
    assert find_cycle(graph) is None, " -> ".join(find_cycle(graph) or [])


def test_the_check_sees_a_deferred_circle() -> None:
    deferred = "def f():\n    from slurm_ext.sim.engine import STATE_NAMES\n"
    typing_only = "if TYPE_CHECKING:\n    from slurm_ext.sim.engine import Simulator\n"
    assert imports_of(deferred) == {"engine"}
    assert imports_of(typing_only) == set()
    assert find_cycle({"engine": {"result"}, "result": {"engine"}}) == ["engine", "result", "engine"]


def _imports_sim(source: str) -> bool:
    """Whether ``source`` imports ``slurm_ext.sim`` (or a module of it) at run time."""
    return bool(imports_of(source)) or any(
        (isinstance(n, ast.ImportFrom) and n.module == PACKAGE)
        or (isinstance(n, ast.Import) and any(a.name == PACKAGE for a in n.names))
        for n in ast.walk(ast.parse(source))
    )


def test_workloads_and_policies_do_not_import_the_simulator() -> None:
    files = [*(ROOT / "workloads").glob("*.py"), *(ROOT / "policies").glob("*.py"), ROOT / "model.py"]
    assert len(files) > 10
    offenders = [f.relative_to(ROOT).as_posix() for f in files if _imports_sim(f.read_text())]
    assert offenders == []
    assert _imports_sim("from slurm_ext.sim import Workload\n")
