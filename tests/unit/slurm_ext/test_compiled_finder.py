"""An editable install's compiled policies are used only while they match the sources (slurm_ext.compiled)."""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path

import pytest

from slurm_ext import compiled


def _tree(tmp_path: Path) -> tuple[Path, Path]:
    """A checkout with a compiled package of two modules and one compiled module of another package."""
    root, lib = tmp_path / "root", tmp_path / "root" / "build" / "mypyc-lib"
    sources = {"pkg/pol/__init__.py": "", "pkg/pol/a.py": "A = 1\n", "pkg/sim/snap.py": "S = 1\n"}
    for path, text in sources.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text(text)
    (root / "pkg/sim/engine.py").write_text("")  # not compiled: its package is not
    digests = {path: hashlib.sha256(text.encode()).hexdigest() for path, text in sources.items()}
    modules = ["ab12__mypyc", "pkg.pol.__init__", "pkg.pol.a", "pkg.sim.snap"]
    lib.mkdir(parents=True)
    manifest = {"built": {"python": sys.version, "sources": digests}, "modules": modules}
    (lib / "manifest.json").write_text(json.dumps(manifest))
    return root, lib


def test_compiled_modules_are_fresh_only_while_every_source_and_the_python_are_those_they_were_built_from(
    tmp_path,
):
    root, lib = _tree(tmp_path)
    assert compiled.fresh(lib, root) == ["ab12__mypyc", "pkg.pol.__init__", "pkg.pol.a", "pkg.sim.snap"]
    (root / "pkg/sim/other.py").write_text("")  # a new module where only one is compiled: found as usual
    assert compiled.fresh(lib, root) is not None
    (root / "pkg/pol/a.py").write_text("A = 2\n")  # an edit
    assert compiled.fresh(lib, root) is None
    (root / "pkg/pol/a.py").write_text("A = 1\n")
    assert compiled.fresh(lib, root) is not None
    (root / "pkg/pol/b.py").write_text("")  # a new module of a compiled package would not be found
    assert compiled.fresh(lib, root) is None
    (root / "pkg/pol/b.py").unlink()
    manifest = json.loads((lib / "manifest.json").read_text())
    manifest["built"]["python"] = "3.11.2 (another build)"
    (lib / "manifest.json").write_text(json.dumps(manifest))
    assert compiled.fresh(lib, root) is None
    (lib / "manifest.json").write_text("{")  # half written
    assert compiled.fresh(lib, root) is None
    assert compiled.fresh(tmp_path / "nothing", root) is None


def test_the_finder_names_exactly_the_compiled_modules(tmp_path, monkeypatch):
    root, lib = _tree(tmp_path)
    finder = compiled.CompiledFinder(lib, ["ab12__mypyc", "pkg.pol.__init__", "pkg.pol.a"])
    assert finder.find_spec("pkg.pol.a") is None  # not built: the sources run
    suffix = compiled.importlib.machinery.EXTENSION_SUFFIXES[0]
    (lib / "pkg/pol").mkdir(parents=True)
    (lib / f"pkg/pol/a{suffix}").write_bytes(b"")
    spec = finder.find_spec("pkg.pol.a")
    assert spec is not None and spec.origin == str(lib / f"pkg/pol/a{suffix}")
    assert finder.find_spec("pkg.pol") is None and finder.find_spec("pkg.sim.engine") is None
    monkeypatch.setenv("ELASTIC_MYPYC", "0")
    before = list(sys.meta_path)
    assert not compiled.use(lib, root) and sys.meta_path == before  # the sources, whatever is built


def test_the_test_process_runs_the_sources_and_stop_refuses_once_a_compiled_module_is_imported(tmp_path):
    import slurm_ext.policies.sdpolicy

    assert slurm_ext.policies.sdpolicy.__file__.endswith(".py")  # tests/conftest.py stopped the finder
    finder = compiled.CompiledFinder(tmp_path, ["ab12__mypyc", "pkg_not_imported.a"])
    sys.meta_path.insert(0, finder)
    compiled.stop()
    assert finder not in sys.meta_path
    loaded = compiled.CompiledFinder(tmp_path, ["slurm_ext.policies.sdpolicy"])
    sys.meta_path.insert(0, loaded)
    try:
        with pytest.raises(RuntimeError, match="already imported: slurm_ext.policies.sdpolicy"):
            compiled.stop()
    finally:
        sys.meta_path.remove(loaded)
