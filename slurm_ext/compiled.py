"""The compiled policies of an editable install, used only while they match the sources.

A wheel carries the modules mypyc compiled (``setup.py``) next to their sources, and Python finds them
as it finds any module. An editable install runs the checkout's sources, which are edited: its compiled
modules are kept apart in ``build/mypyc-lib/``, with the digest of every source they were built from
and the Python that built them, and are imported instead of those sources only while all of that still
holds (a finder for exactly those modules, first on ``sys.meta_path``). An edit is never hidden: until
the next install the edited sources run as written. ``ELASTIC_MYPYC=0`` runs the sources whatever is
built.
"""

from __future__ import annotations

import hashlib
import importlib.abc
import importlib.machinery
import importlib.util
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]
LIB = ROOT / "build" / "mypyc-lib"


class CompiledFinder(importlib.abc.MetaPathFinder):
    """Finds the modules of ``lib`` that mypyc built (their names as the build gave them: a
    package's own module ends in ``.__init__``), and no other."""

    def __init__(self, lib: Path, modules: list[str]) -> None:
        suffix = importlib.machinery.EXTENSION_SUFFIXES[0]
        self.files = {
            name.removesuffix(".__init__"): lib / (name.replace(".", "/") + suffix) for name in modules
        }
        self.packages = {name.removesuffix(".__init__") for name in modules if name.endswith(".__init__")}

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        file = self.files.get(fullname)
        if file is None or not file.exists():
            return None
        loader = importlib.machinery.ExtensionFileLoader(fullname, str(file))
        # a package's other modules are the checkout's (its sources, or this finder's)
        search = [str(ROOT.joinpath(*fullname.split(".")))] if fullname in self.packages else None
        return importlib.util.spec_from_file_location(fullname, file, loader=loader,
                                                      submodule_search_locations=search)  # fmt: skip


def digests(paths: list[str], root: Path = ROOT) -> dict[str, str]:
    """The SHA-256 of each source (a path under ``root``): what compiled modules were built from
    (``setup.py`` writes them into the manifest, :func:`fresh` compares)."""
    return {path: hashlib.sha256((root / path).read_bytes()).hexdigest() for path in paths}


def fresh(lib: Path = LIB, root: Path = ROOT) -> list[str] | None:
    """The modules ``lib`` holds if they were built by this Python from the sources as they are now."""
    try:
        found = json.loads((lib / "manifest.json").read_text())
        built = found["built"]
        if built["python"] != sys.version:
            return None
        sources: dict[str, str] = built["sources"]
        if digests(list(sources), root) != sources:
            return None
        modules = [str(name) for name in found["modules"]]
        for name in modules:  # a compiled package finds its modules here only: none may be new
            if name.endswith(".__init__"):
                where = name.removesuffix(".__init__").replace(".", "/")
                now = {f"{where}/{p.name}" for p in (root / where).glob("*.py")}
                if now != {path for path in sources if path.rpartition("/")[0] == where}:
                    return None
        return modules
    except (OSError, ValueError, KeyError, TypeError):
        return None


def use(lib: Path = LIB, root: Path = ROOT) -> bool:
    """Put ``lib``'s compiled modules first on the import path if they are fresh (and wanted)."""
    if os.environ.get("ELASTIC_MYPYC") == "0":
        return False
    modules = fresh(lib, root)
    if modules is None:
        return False
    sys.meta_path.insert(0, CompiledFinder(lib, modules))
    return True


def stop() -> None:
    """Run the sources from now on (the test suite's own process: its tests patch and subclass the
    policies); only before any compiled module was imported."""
    for finder in [f for f in sys.meta_path if isinstance(f, CompiledFinder)]:
        loaded = sorted(set(finder.files) & set(sys.modules))
        if loaded:
            raise RuntimeError(f"compiled modules already imported: {', '.join(loaded)}")
        sys.meta_path.remove(finder)
