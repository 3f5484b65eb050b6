"""The modified ESP workload rebuilt from 000_* Table I."""

from collections import Counter

import pytest

from slurm_ext.workloads.esp import ESP_TYPES, esp_size, esp_workload, malleable_types


def test_table_one_totals() -> None:
    wl = esp_workload()
    assert len(wl.jobs) == 230 and wl.nodes == 120
    assert Counter(j.name for j in wl.jobs) == {t.name: t.count for t in ESP_TYPES}
    assert len(ESP_TYPES) == 14
    by_name = {t.name: t for t in ESP_TYPES}
    for j in wl.jobs:
        assert j.nodes == esp_size(by_name[j.name], 120)
        assert j.run_time == j.time_limit == by_name[j.name].static_time
        assert j.malleable is None and j.evolving is None


def test_sizes_are_table_fractions_of_120_cores() -> None:
    sizes = {t.name: esp_size(t, 120) for t in ESP_TYPES}
    assert sizes == {
        "A": 4, "B": 8, "C": 60, "D": 30, "E": 60, "F": 8, "G": 15,
        "H": 19, "I": 4, "J": 8, "K": 11, "L": 15, "M": 30, "Z": 120,
    }  # fmt: skip


def test_paper_type_sets() -> None:
    assert malleable_types(0.4) == "FGHIKL"
    assert malleable_types(0.5) == "FIJKL"
    assert malleable_types(0.4, exclude="FGH") == "IJKL"
    assert malleable_types(1.0) == "ABCDEFGHIJKLMZ"


@pytest.mark.parametrize("fraction", [0.1, 0.2, 0.3, 0.6, 0.7, 0.8, 0.9, 1.0])
def test_other_fractions_take_whole_types_close_to_the_target(fraction: float) -> None:
    wl = esp_workload(fraction, seed=3)
    mall = [j for j in wl.jobs if j.malleable]
    assert abs(len(mall) - fraction * 230) <= 2
    types = {j.name for j in mall}
    assert all(j.malleable for j in wl.jobs if j.name in types)  # whole types


def test_malleable_jobs_start_at_their_size_with_max_three_times() -> None:
    for j in esp_workload(1.0).jobs:
        assert j.malleable is not None
        assert j.malleable.min_nodes == j.nodes
        assert j.malleable.max_nodes == min(120, 3 * j.nodes)


def test_evolving_jobs_are_f_g_h_and_not_malleable() -> None:
    wl = esp_workload(0.4, 0.1)
    evo = [j for j in wl.jobs if j.evolving]
    assert sorted({j.name for j in evo}) == ["F", "G", "H"] and len(evo) == 21
    assert all(j.malleable is None for j in evo)
    assert {j.name for j in wl.jobs if j.malleable} == set("IJKL")
    assert evo[0].evolving is not None and evo[0].evolving.at == (0.16, 0.25)
    assert evo[0].evolving.extra_nodes == 4


def test_seeded_and_deterministic() -> None:
    a, b, c = esp_workload(0.3, seed=1), esp_workload(0.3, seed=1), esp_workload(0.3, seed=2)
    assert a.jobs == b.jobs
    assert [j.name for j in a.jobs] != [j.name for j in c.jobs]


def test_submission_initial_batch_then_regular_interval() -> None:
    wl = esp_workload(interval=30.0)
    at_zero = [j for j in wl.jobs if j.submit == 0.0]
    assert sum(j.nodes for j in at_zero) >= 240
    later = sorted(j.submit for j in wl.jobs if j.submit > 0)
    assert all(abs(b - a - 30.0) < 1e-9 for a, b in zip(later, later[1:], strict=False))


def test_job_selection_mode() -> None:
    wl = esp_workload(0.25, selection="jobs", seed=5)
    assert sum(1 for j in wl.jobs if j.malleable) == round(0.25 * 230)


def test_bad_arguments() -> None:
    with pytest.raises(ValueError, match="malleable fraction"):
        esp_workload(1.5)
    with pytest.raises(ValueError, match="selection"):
        esp_workload(0.5, selection="nodes")
