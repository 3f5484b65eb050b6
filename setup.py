"""Optional compiled build of the scheduling policies (everything else is in pyproject.toml).

    pip install mypy wheel && ELASTIC_MYPYC=1 pip install --no-build-isolation .

compiles ``slurm_ext/policies/`` with mypyc (the same source, as C extensions next to it), and
``slurm_ext/sim/snapshot.py``, which builds the snapshots and working copies the policies are
called with (about a fifth of a compiled DBES run): the malleable
simulations take about half the time (README, "Simulator speed"), and decisions are the same
(``tests/unit/slurm_ext/policies/test_compiled.py``). The engine stays interpreted: a rigid run
never calls into these modules. Without ``ELASTIC_MYPYC=1`` the
build is pure Python, as before. Not for an editable install (``pip install -e .``): the compiled
modules would land next to the sources and hide later edits of them until rebuilt.
"""

from __future__ import annotations

import os
from pathlib import Path

from setuptools import setup

POLICIES = sorted(str(p) for p in Path("slurm_ext/policies").glob("*.py"))
# what the simulator calls the policies with: snapshots and working copies, at every call
CALLERS = ["slurm_ext/sim/snapshot.py"]


COMPILE = os.environ.get("ELASTIC_MYPYC") == "1"
# A build directory of its own: a later pure build must not pack compiled modules left in build/
BUILD = "build/mypyc"


def ext_modules() -> list[object]:
    if not COMPILE:
        return []
    from mypyc.build import mypycify  # build-time only: mypy must be installed (see above)

    return list(mypycify(["--ignore-missing-imports", *POLICIES, *CALLERS], opt_level="3", target_dir=BUILD))


setup(ext_modules=ext_modules(), options={"build": {"build_base": BUILD}} if COMPILE else {})
