from slurm_ext.policies.profile import INF, SnapshotProfile


def test_earliest_start_waits_for_the_job_that_frees_enough_nodes() -> None:
    # 000_* §IV.C example: 4 nodes, A (1 node) ends at 3600, B (1 node) at 1800, 2 idle.
    prof = SnapshotProfile(0.0, 2, [(3600.0, 1), (1800.0, 1)])
    assert prof.earliest_start(3, 100.0) == 1800.0
    assert prof.earliest_start(4, 100.0) == 3600.0
    assert prof.earliest_start(2, 100.0) == 0.0
    assert prof.earliest_start(5, 100.0) == INF


def test_reservation_blocks_a_later_job_that_would_overlap_it() -> None:
    prof = SnapshotProfile(0.0, 2, [(100.0, 2)])
    prof.reserve(100.0, 50.0, 4)
    assert prof.min_free(0.0, 100.0) == 2
    assert prof.min_free(100.0, 150.0) == 0
    # two nodes for 120 s would overlap the reservation: must wait for its end
    assert prof.earliest_start(2, 120.0) == 150.0
    assert prof.earliest_start(2, 100.0) == 0.0


def test_overdue_running_job_is_not_counted_free_now() -> None:
    prof = SnapshotProfile(50.0, 0, [(40.0, 3)])  # expected end already passed, still holds 3 nodes
    assert prof.min_free(50.0, 50.0 + 1e-9) == 0
    assert prof.earliest_start(3, 10.0) > 50.0
