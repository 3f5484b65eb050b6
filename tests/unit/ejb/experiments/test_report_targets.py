"""Table 3 prints our number of target jobs beside the paper's."""

from __future__ import annotations

from ejb.experiments import paper
from ejb.experiments.report import targets_line


def test_targets_line_gives_the_relative_difference() -> None:
    assert targets_line(5598, 4399) == "target jobs: 5,598 vs the paper's 4,399 (+27.3%)"
    assert targets_line(4399, 4399).endswith("(+0.0%)")
    assert "(-10.0%)" in targets_line(90, 100)


def test_kth_is_compared_with_table3() -> None:
    assert paper.paper_trace("KTH-SP2-1996-2.1-cln.swf.gz") == "KTH"
    assert paper.TABLE3["KTH"]["targets"] == 4399
