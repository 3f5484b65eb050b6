"""The run loop runs as specialised bytecode within a run's one call, as the textbook loop does.

CPython 3.11 specialises ("quickens") a function's bytecode after it has been entered, or has
taken an unconditional backward jump, a few times. ``Simulator.advance`` is entered once per run,
so its loop must jump back unconditionally; a loop that ends in a test left it unspecialised
for the whole run (43 % more instructions for EASY; benchmarks/results/simulator-speed-history.md, step 15).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

# In a fresh interpreter: advance entered once, then which of its attribute loads are generic.
PROBE = """
import dis
from slurm_ext.sim import Simulator, Workload, rigid_job
jobs = [rigid_job(k + 1, float(10 * k), 1 + k % 4, 50.0, 30.0) for k in range(300)]
Simulator(Workload(jobs, 8), "easy").run()
ops = [i.opname for i in dis.get_instructions(Simulator.advance, adaptive=True)]
print(ops.count("LOAD_ATTR"), sum(op.startswith("LOAD_ATTR_") for op in ops))
"""


@pytest.mark.skipif(
    sys.implementation.name != "cpython" or sys.version_info[:2] != (3, 11),
    reason="the opcode names are CPython 3.11's",
)
def test_the_run_loop_is_specialised_within_its_one_call() -> None:
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    generic, specialised = map(int, out.stdout.split())
    assert generic == 0
    assert specialised > 20
