"""What the build compiles (everything else is in pyproject.toml).

**libdmr** (always, where a C compiler is found): ``dmr/lib/libdmr.so``, the C API of
``dmr/include/dmr.h`` for C, C++ and Fortran MPI programs (``dmr/README.md``). It embeds this
Python (linked with its libpython, ``DMR_PYTHON`` set to this interpreter) and is compiled against
the ``mpich`` wheel's ``mpi.h`` (a build requirement): the MPI the toolkit runs with. Without a C
compiler the build warns and goes on; Python applications do not need it.

**The scheduling policies, compiled** (by default, where mypyc and a C compiler are found):
``slurm_ext/policies/`` and ``slurm_ext/sim/snapshot.py`` (which builds the snapshots and working
copies the policies are called with) compiled by mypyc from the same source. The malleable
simulations take about half the time (``docs/results.md``, "Simulator speed"), and decisions are the
same (``tests/unit/slurm_ext/policies/test_compiled.py``). The engine stays interpreted: a rigid run
never calls into these modules. ``ELASTIC_MYPYC=0`` builds pure Python; ``ELASTIC_MYPYC=1`` fails
where the compiled build cannot be made instead of falling back.

A wheel carries the compiled modules next to the sources. An editable install (``pip install -e .``)
builds them into ``build/mypyc-lib/`` instead, with the digest of each source they were compiled
from: :mod:`slurm_ext.compiled` loads them only while every source is unchanged (an edit is never
hidden: until the next install, the edited policies run as written), and a later editable install
whose sources and Python are those of ``build/mypyc-lib/`` does not compile them again.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import sys
import sysconfig
from pathlib import Path
from types import ModuleType

from setuptools import Distribution, Extension, setup
from setuptools.command.build_ext import build_ext

POLICIES = sorted(str(p) for p in Path("slurm_ext/policies").glob("*.py"))
# what the simulator calls the policies with: snapshots and working copies, at every call
CALLERS = ["slurm_ext/sim/snapshot.py"]


MYPYC = os.environ.get("ELASTIC_MYPYC", "")  # "1": compile or fail, "0": pure, else where it can be made
# A build directory of its own: a later pure build must not pack compiled modules left in build/
BUILD = "build/mypyc"
LIB = Path("build/mypyc-lib")  # an editable install's compiled modules (see slurm_ext/compiled.py)


def can_compile() -> str:
    """Why the policies cannot be compiled here ("" if they can)."""
    if importlib.util.find_spec("mypyc") is None:
        return "mypy (mypyc) is not installed"
    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    return "" if shutil.which(cc) else f"no C compiler ({cc})"


if MYPYC == "1" and can_compile():
    sys.exit(f"ELASTIC_MYPYC=1: cannot compile the policies: {can_compile()}")
COMPILE = MYPYC == "1" or (MYPYC != "0" and not can_compile())
if MYPYC not in ("0", "1") and not COMPILE:
    print(f"setup.py: the policies stay pure Python: {can_compile()}", file=sys.stderr)


LIBDMR = "dmr.lib.libdmr"


def load(name: str, path: str) -> ModuleType:
    """A module of the checkout loaded by path (the packages are not installed yet)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def toolchain() -> ModuleType:
    """dmr/toolchain.py, which says how libdmr is built."""
    return load("dmr_toolchain", "dmr/toolchain.py")


def libdmr() -> Extension:
    """A plain shared library (not a Python module) that embeds this Python."""
    settings = toolchain().build_settings()
    settings["sources"] = [os.path.relpath(p) for p in settings["sources"]]
    # no C compiler: Python applications still work
    return Extension(LIBDMR, optional=True, **settings)


class BuildExt(build_ext):
    def get_ext_filename(self, fullname: str) -> str:
        # libdmr.so, not libdmr.cpython-311-...so: programs link it with -ldmr (asked for by the
        # full name and, by distutils, by the last part alone)
        if fullname in (LIBDMR, LIBDMR.rpartition(".")[2]):
            return os.path.join(*fullname.split(".")[:-1], "libdmr.so")
        return super().get_ext_filename(fullname)

    def get_export_symbols(self, ext: Extension) -> list[str]:
        return [] if ext.name == LIBDMR else super().get_export_symbols(ext)

    def run(self) -> None:
        super().run()  # libdmr
        if not COMPILE:
            return
        try:
            if getattr(self, "editable_mode", False) or self.inplace:
                build_beside()
            else:  # staged first: a build that fails half way puts nothing into the wheel
                staged = Path(BUILD) / "staged"
                for old in staged.rglob("*.so"):  # nor what an earlier build put there
                    Path(self.build_lib, old.relative_to(staged)).unlink(missing_ok=True)
                shutil.rmtree(staged, ignore_errors=True)
                compile_into(staged)
                shutil.copytree(staged, self.build_lib, dirs_exist_ok=True)
        except Exception as exc:
            pure_after(exc)


def pure_after(exc: Exception) -> None:
    """A compiled build that failed: the pure one instead, unless ELASTIC_MYPYC=1 asked for it."""
    if MYPYC == "1":
        raise exc
    why = (str(exc).splitlines() or [type(exc).__name__])[0][:200]
    print(f"setup.py: the policies stay pure Python: compiling them failed ({why})", file=sys.stderr)


def policies() -> list[Extension]:
    from mypyc.build import mypycify  # build-time only: mypy is a build requirement

    return mypycify(["--ignore-missing-imports", *POLICIES, *CALLERS], opt_level="3", target_dir=BUILD)


def manifest() -> dict[str, object]:
    """What an editable install's compiled modules were built from (slurm_ext/compiled.py checks it)."""
    compiled = load("slurm_ext_compiled", "slurm_ext/compiled.py")
    return {"python": sys.version, "sources": compiled.digests([*POLICIES, *CALLERS], Path.cwd())}


def compile_into(target: Path) -> list[str]:
    """The policies compiled by mypyc into ``target`` (a build of their own, whatever command runs
    this one: the distribution's extensions are libdmr's alone); the names of the modules built."""
    extensions = policies()
    dist = Distribution({"name": "elastic-slurm-compiled", "ext_modules": extensions})
    cmd = dist.get_command_obj("build_ext")
    cmd.build_lib, cmd.build_temp = str(target), f"{BUILD}/temp"  # type: ignore[attr-defined]
    dist.run_command("build_ext")
    return [ext.name for ext in extensions]


def build_beside() -> None:
    """The compiled modules of an editable install, in LIB with their manifest; kept as they are
    when built from the same sources by the same Python."""
    wanted = manifest()
    done = LIB / "manifest.json"
    if done.exists() and json.loads(done.read_text()).get("built") == wanted:
        print(f"setup.py: {LIB} is up to date", file=sys.stderr)
        return
    fresh = Path(f"{LIB}.new")
    shutil.rmtree(fresh, ignore_errors=True)
    modules = compile_into(fresh)
    (fresh / "manifest.json").write_text(json.dumps({"built": wanted, "modules": modules}, indent=1))
    shutil.rmtree(LIB, ignore_errors=True)
    fresh.rename(LIB)


setup(
    ext_modules=[libdmr()],
    cmdclass={"build_ext": BuildExt},
    options={"build": {"build_base": BUILD}} if COMPILE else {},
)
