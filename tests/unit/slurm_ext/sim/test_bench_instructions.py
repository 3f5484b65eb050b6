"""``bench_malleable.py --instructions``: callgrind's count is read from its report and repeats
on a rerun."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.unit.slurm_ext.sim.bench_modules import load


def test_the_count_is_read_from_callgrinds_report() -> None:
    report = "==12== Collected : 123456789\n==12==\n==12== I   refs:      123,456,789\n"
    assert load("child").instructions(report) == 123_456_789
    with pytest.raises(SystemExit, match="no instruction count"):
        load("child").instructions("==12== ERROR SUMMARY: 0 errors\n")


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind (scripts/install.sh has it)")
def test_a_count_repeats_on_a_rerun(tmp_path: Path) -> None:
    child = load("child")
    args = ["300", "easy", "-", "1", "-"]
    info, first = child.count_child("malleable_child.py", args, tmp_path)
    _, again = child.count_child("malleable_child.py", args, tmp_path)
    assert info["finished"] == 300
    assert abs(again - first) <= 1e-4 * first  # seconds on a shared machine drift by tens of percent
