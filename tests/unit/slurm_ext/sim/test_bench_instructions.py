"""``bench_malleable.py --instructions``: callgrind's count is read from its report and repeats
on a rerun."""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[4] / "benchmarks"


def _child() -> ModuleType:
    spec = importlib.util.spec_from_file_location("child", BENCH / "child.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_count_is_read_from_callgrinds_report() -> None:
    report = "==12== Collected : 123456789\n==12==\n==12== I   refs:      123,456,789\n"
    assert _child().instructions(report) == 123_456_789
    with pytest.raises(SystemExit, match="no instruction count"):
        _child().instructions("==12== ERROR SUMMARY: 0 errors\n")


@pytest.mark.skipif(shutil.which("valgrind") is None, reason="needs valgrind (scripts/install.sh has it)")
def test_a_count_repeats_on_a_rerun(tmp_path: Path) -> None:
    child = _child()
    args = ["300", "easy", "-", "1", "-"]
    info, first = child.count_child("malleable_child.py", args, tmp_path)
    _, again = child.count_child("malleable_child.py", args, tmp_path)
    assert info["finished"] == 300
    assert abs(again - first) <= 1e-4 * first  # seconds on a shared machine drift by tens of percent
