"""EJB experiment 1's regression cases: what a run gives, in a form kept as a fixture.

Read as the paper's simulator read SWF (``--swf-reading paper``, ejb/NOTES.md), with the paper's
settings (``EJBParams`` defaults). ``benchmarks/ejb_regression.py`` records and checks them; the
unit tests check the small one.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from ejb.experiments.one_elastic import one_elastic
from ejb.params import EJBParams
from slurm_ext.workloads import load_swf
from slurm_ext.workloads.reading import PAPER


def run_case(path: Path, full_rows: bool, workers: int = 1) -> dict[str, Any]:
    """Target count, Table 3's changes and a digest of every target's row (the rows too if asked)."""
    res = one_elastic(load_swf(path, reading=PAPER), EJBParams(), workers=workers)
    rows = [list(r) for r in res.rows]
    out: dict[str, Any] = {
        "targets": res.targets,
        "turnaround_change": res.turnaround.change,
        "wait_change": res.wait.change,
        "digest": hashlib.sha256(json.dumps(rows).encode()).hexdigest(),
    }
    if full_rows:
        out["rows"] = rows
    return out
