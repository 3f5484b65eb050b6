"""What the build compiles (everything else is in pyproject.toml).

**libdmr** (always, where a C compiler is found): ``dmr/lib/libdmr.so``, the C API of
``dmr/include/dmr.h`` for C, C++ and Fortran MPI programs (``dmr/README.md``). It embeds this
Python (linked with its libpython, ``DMR_PYTHON`` set to this interpreter) and is compiled against
the ``mpich`` wheel's ``mpi.h`` (a build requirement): the MPI the toolkit runs with. Without a C
compiler the build warns and goes on; Python applications do not need it.

**Optional**: a compiled build of the scheduling policies.

    pip install mypy wheel && ELASTIC_MYPYC=1 pip install --no-build-isolation .

compiles ``slurm_ext/policies/`` with mypyc (the same source, as C extensions next to it), and
``slurm_ext/sim/snapshot.py``, which builds the snapshots and working copies the policies are
called with (about a fifth of a compiled DBES run): the malleable
simulations take about half the time (``docs/results.md``, "Simulator speed"), and decisions are the same
(``tests/unit/slurm_ext/policies/test_compiled.py``). The engine stays interpreted: a rigid run
never calls into these modules. Without ``ELASTIC_MYPYC=1`` the
build is pure Python, as before. Not for an editable install (``pip install -e .``): the compiled
modules would land next to the sources and hide later edits of them until rebuilt.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from types import ModuleType

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

POLICIES = sorted(str(p) for p in Path("slurm_ext/policies").glob("*.py"))
# what the simulator calls the policies with: snapshots and working copies, at every call
CALLERS = ["slurm_ext/sim/snapshot.py"]


COMPILE = os.environ.get("ELASTIC_MYPYC") == "1"
# A build directory of its own: a later pure build must not pack compiled modules left in build/
BUILD = "build/mypyc"


LIBDMR = "dmr.lib.libdmr"


def toolchain() -> ModuleType:
    """dmr/toolchain.py, which says how libdmr is built (loaded by path: the package is not installed yet)."""
    spec = importlib.util.spec_from_file_location("dmr_toolchain", "dmr/toolchain.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


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


def ext_modules() -> list[Extension]:
    if not COMPILE:
        return [libdmr()]
    from mypyc.build import mypycify  # build-time only: mypy must be installed (see above)

    compiled = mypycify(["--ignore-missing-imports", *POLICIES, *CALLERS], opt_level="3", target_dir=BUILD)
    return [libdmr(), *compiled]


setup(
    ext_modules=ext_modules(),
    cmdclass={"build_ext": BuildExt},
    options={"build": {"build_base": BUILD}} if COMPILE else {},
)
