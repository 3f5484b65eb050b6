"""No import circle among the modules of ``dmr``, ``slurm_ext`` and ``ejb`` (imports flow one way).

Read from the source with ``ast``: every run-time import of one of their modules counts, at module
level or inside a function (a deferred import only hides a circle), but not one under ``if
TYPE_CHECKING:`` (never executed). ``from PACKAGE import NAME`` is an arrow to the module NAME where
there is one, else to the package's ``__init__``. A package's ``__init__`` run on the way to one of
its modules is not an arrow: it is Python's, not the importer's (as ``farm-studio`` draws it).
(``tests/unit/slurm_ext/sim/test_import_graph.py`` checks the simulator's own layering.)
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("dmr", "slurm_ext", "ejb")


def modules() -> dict[str, Path]:
    """Dotted name -> file, for every module of the packages (a package's ``__init__`` by its name)."""
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _typing_only(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def arrows(source: str, known: set[str], package: str = "") -> set[str]:
    """The known modules ``source`` imports at run time (``package``: where a relative import starts)."""
    found: set[str] = set()

    def target(module: str, names: list[str]) -> None:
        subs = {f"{module}.{n}" for n in names if f"{module}.{n}" in known}
        found.update(subs)
        if module in known and len(subs) < len(names):  # a name of the package itself
            found.add(module)

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and _typing_only(node):
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*up, *([base] if base else [])])
            target(base, [a.name for a in node.names])
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name in known)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(source))
    return found


def import_graph() -> dict[str, set[str]]:
    files = modules()
    known = set(files)
    graph = {}
    for name, path in files.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        graph[name] = arrows(path.read_text(), known, package) - {name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle as a path ``[a, b, ..., a]``, or None."""
    done: set[str] = set()

    def walk(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node) :], node]
        if node in done:
            return None
        for dep in sorted(graph[node]):
            if cycle := walk(dep, [*path, node]):
                return cycle
        done.add(node)
        return None

    for start in sorted(graph):
        if cycle := walk(start, []):
            return cycle
    return None


def test_no_import_circle_in_the_packages() -> None:
    graph = import_graph()
    assert len(graph) > 100 and "slurm_ext.sim.schedulers" in graph["slurm_ext.sim.engine"]  # really read
    assert "slurm_ext.agent_client" in graph["slurm_ext.slurm.adapter"]  # a deferred import counts
    cycle = find_cycle(graph)
    assert cycle is None, " -> ".join(cycle or [])


def test_the_check_sees_deferred_and_package_arrows_but_not_typing_only_ones() -> None:
    known = {"a", "a.b", "a.c"}
    assert arrows("def f():\n    from a.b import x\n", known) == {"a.b"}
    assert arrows("from a import b, thing\n", known) == {"a.b", "a"}
    assert arrows("from . import c\n", known, package="a") == {"a.c"}
    assert arrows("if TYPE_CHECKING:\n    import a.b\n", known) == set()
    assert find_cycle({"a": {"a.b"}, "a.b": {"a"}}) == ["a", "a.b", "a"]


def test_slurm_ext_never_imports_ejb() -> None:
    """Not even lazily: ``ejb`` builds on ``slurm_ext``, so ``slurm_ext`` must work without it; its
    commands reach ``ejb`` through entry points (``slurm_ext.commands``, ``slurm_ext.reproduce``)."""
    graph = import_graph()
    wrong = sorted(f"{m} -> {dep}" for m, deps in graph.items() if m.split(".")[0] == "slurm_ext"
                   for dep in deps if dep.split(".")[0] == "ejb")  # fmt: skip
    assert not wrong, wrong
