"""The latency benchmark's pure parts: percentiles, the factor between sizes, the table."""

from slurm_ext.bench.latency import CYCLE, LABEL, factor_between, summarize, table


def test_summarize_percentiles() -> None:
    s = summarize([0.3, 0.1, 0.2, 0.4, 10.0])
    assert s["n"] == 5 and s["p50"] == 0.3 and s["p95"] == 10.0
    assert summarize([]) == {"n": 0}


def test_cycle_sizes_are_reachable_by_a_dmr_factor() -> None:
    sizes = [2, *CYCLE]
    for a, b in zip(sizes, sizes[1:], strict=False):
        f = factor_between(a, b)
        assert max(a, b) == min(a, b) * f, (a, b, f)


def test_table_marks_targets_per_strategy() -> None:
    ops = {k: summarize([0.5]) for k in LABEL}
    ops["no_action"] = summarize([0.0005])
    text = table({"strategy": "merge", "operations": ops})
    row = {line.split("  ")[0].strip(): line for line in text.splitlines()[1:]}
    assert row[LABEL["no_action"]].endswith("yes")
    assert row[LABEL["expand_total"]].endswith("yes")  # 0.5 <= 1.0
    assert row[LABEL["shrink"]].endswith("NO")  # 0.5 > 0.25
    assert "0.4230" in row[LABEL["expand_total"]]
