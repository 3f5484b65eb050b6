import math
from bisect import bisect_right

from hypothesis import given, settings
from hypothesis import strategies as st

from slurm_ext.policies.entries import Running
from slurm_ext.policies.profile import INF, SnapshotProfile, first_free


def _jobs(releases: list[tuple[float, int]]) -> list[Running]:
    """Running jobs that release ``size`` nodes at ``end`` for each ``(end, size)``, in order."""
    return [Running(k, size, end, None, 0.0, 0.0, None) for k, (end, size) in enumerate(releases)]


def test_earliest_start_waits_for_the_job_that_frees_enough_nodes() -> None:
    # 000_* §IV.C example: 4 nodes, A (1 node) ends at 3600, B (1 node) at 1800, 2 idle.
    prof = SnapshotProfile(0.0, 2, _jobs([(3600.0, 1), (1800.0, 1)]))
    assert prof.earliest_start(3, 100.0) == 1800.0
    assert prof.earliest_start(4, 100.0) == 3600.0
    assert prof.earliest_start(2, 100.0) == 0.0
    assert prof.earliest_start(5, 100.0) == INF


def test_reservation_blocks_a_later_job_that_would_overlap_it() -> None:
    prof = SnapshotProfile(0.0, 2, _jobs([(100.0, 2)]))
    prof.reserve(100.0, 50.0, 4)
    assert prof.min_free(0.0, 100.0) == 2
    assert prof.min_free(100.0, 150.0) == 0
    # two nodes for 120 s would overlap the reservation: must wait for its end
    assert prof.earliest_start(2, 120.0) == 150.0
    assert prof.earliest_start(2, 100.0) == 0.0


def test_overdue_running_job_is_not_counted_free_now() -> None:
    prof = SnapshotProfile(50.0, 0, _jobs([(40.0, 3)]))  # expected end already passed, still holds 3 nodes
    assert prof.min_free(50.0, 50.0 + 1e-9) == 0
    assert prof.earliest_start(3, 10.0) > 50.0


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 8),
    st.lists(st.tuples(st.sampled_from([40.0, 50.0, 60.0, 60.0, 90.0, INF]), st.integers(0, 4)), max_size=8),
    st.integers(1, 30),
)
def test_first_free_is_the_profiles_earliest_start_and_its_free_nodes(
    free: int, releases: list[tuple[float, int]], nodes: int
) -> None:
    prof = SnapshotProfile(50.0, free, _jobs(releases))  # releases before and at now are overdue
    t, at = first_free(50.0, free, _jobs(releases), nodes)
    assert t == prof.earliest_start(nodes, 25.0) == prof.earliest_start(nodes, INF)
    assert at == (0 if t == INF else prof.free[bisect_right(prof.times, t) - 1])


def _free_at(times: list[float], free: list[int], t: float) -> int:
    return free[bisect_right(times, t) - 1]


@settings(max_examples=400, deadline=None)
@given(
    st.integers(0, 6),
    st.lists(st.tuples(st.sampled_from([10.0, 20.0, 20.0, 35.0, 70.0, INF]), st.integers(1, 3)), max_size=6),
    st.lists(
        st.tuples(
            st.booleans(),  # at the earliest start found just before (reserve's kept index), or anywhere
            st.sampled_from([0.0, 5.0, 10.0, 20.0, 25.0, 70.0, 80.0]),
            st.sampled_from([1e-12, 5.0, 10.0, 15.0, 60.0, INF]),
            st.integers(0, 3),
        ),
        max_size=8,
    ),
)
def test_reserve_takes_the_nodes_over_its_window_and_nowhere_else(
    free: int, releases: list[tuple[float, int]], asks: list[tuple[bool, float, float, int]]
) -> None:
    # Against the definition: after reserving, free nodes at any time t are those before, less
    # ``nodes`` where start <= t < start + duration; breakpoints stay strictly increasing.
    prof = SnapshotProfile(0.0, free, _jobs(releases))
    for found, start, duration, nodes in asks:
        if found:
            start = prof.earliest_start(nodes, duration)
        before = (prof.times.copy(), prof.free.copy())
        prof.reserve(start, duration, nodes)
        probes = {*before[0], *prof.times, start, start + duration, 1e9} - {INF}
        for t in probes:
            inside = nodes > 0 and duration > 0 and start != INF and start <= t < start + duration
            assert _free_at(prof.times, prof.free, t) == _free_at(*before, t) - (nodes if inside else 0)
        assert all(a < b for a, b in zip(prof.times, prof.times[1:], strict=False))


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from([40.0, 50.0, math.nextafter(50.0, INF), 60.0, 60.0, 90.0, INF]), st.integers(0, 4)
        ),
        max_size=8,
    ),
    st.booleans(),
    st.integers(0, 5),
)
def test_the_profile_frees_each_jobs_nodes_at_its_expected_end(
    releases: list[tuple[float, int]], in_order: bool, free: int
) -> None:
    # Against the definition, in time order (built in one pass) or not (sorted first): free at t
    # are the idle nodes and those of every job released by t, an overdue job's (end at or
    # before now, 50) just after now, never now; a job without an end never.
    if in_order:
        releases = sorted(releases)
    prof = SnapshotProfile(50.0, free, _jobs(releases))
    soon = math.nextafter(50.0, INF)
    assert prof.times[0] == 50.0
    assert all(a < b for a, b in zip(prof.times, prof.times[1:], strict=False))
    for t in {50.0, soon, 55.0, 60.0, 75.0, 90.0, 1e9, *prof.times}:
        released = sum(n for end, n in releases if end != INF and max(end, soon) <= t)
        assert _free_at(prof.times, prof.free, t) == free + released


@settings(max_examples=400, deadline=None)
@given(
    st.integers(0, 6),
    st.lists(st.tuples(st.sampled_from([10.0, 20.0, 35.0, 70.0, INF]), st.integers(1, 3)), max_size=6),
    st.lists(
        st.tuples(
            st.sampled_from(["reserve", "ask"]),
            st.sampled_from([0.0, 5.0, 10.0, 20.0, 25.0, 70.0]),
            st.sampled_from([1e-12, 5.0, 10.0, 15.0, 60.0, INF]),
            st.integers(0, 9),
        ),
        max_size=12,
    ),
)
def test_answers_from_what_the_profile_remembers_are_the_definitions_after_any_change(
    free: int, releases: list[tuple[float, int]], steps: list[tuple[str, float, float, int]]
) -> None:
    # min_free, fits_now and earliest_start keep prefix minima/maxima and answers per size between
    # changes: asked, changed and asked again in any order, each is what a scan of the profile gives.
    prof = SnapshotProfile(0.0, free, _jobs(releases))
    for verb, start, duration, nodes in steps:
        if verb == "reserve":
            prof.reserve(start, duration, nodes)
            continue
        assert prof.min_free(0.0, duration) == _low(prof, 0.0, duration)
        assert prof.fits_now(nodes, duration) == (_low(prof, 0.0, duration) >= nodes)
        fits = [t for t in prof.times if t < INF and _low(prof, t, t + duration) >= nodes]
        assert prof.earliest_start(nodes, duration) == (fits[0] if fits else INF)


def _low(prof: SnapshotProfile, a: float, b: float) -> int:
    """Fewest free nodes over ``[a, b)``, from the definition: at ``a`` and every breakpoint inside."""
    inside = {t for t in prof.times if a <= t < b}
    return min(_free_at(prof.times, prof.free, t) for t in {a, *inside})


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 6),
    st.lists(st.tuples(st.sampled_from([10.0, 20.0, 35.0, 70.0, INF]), st.integers(1, 3)), max_size=6),
    st.lists(
        st.tuples(st.sampled_from([1e-12, 5.0, 10.0, 15.0, 60.0, INF]), st.integers(0, 6), st.booleans()),
        max_size=12,
    ),
)
def test_earliest_start_for_jobs_alike_reserved_one_after_another_is_a_fresh_profiles(
    free: int, releases: list[tuple[float, int]], jobs: list[tuple[float, int, bool]]
) -> None:
    # A pass reserves for job after job, many alike: the profile starts the search for a size and
    # duration it answered before at that answer (a reservation only takes nodes). Each answer is
    # the one a profile built fresh with the same reservations (never asked before) gives.
    prof = SnapshotProfile(0.0, free, _jobs(releases))
    made: list[tuple[float, float, int]] = []
    for duration, nodes, now in jobs:
        fresh = SnapshotProfile(0.0, free, _jobs(releases))
        for reservation in made:
            fresh.reserve(*reservation)
        start = 0.0 if now else prof.earliest_start(nodes, duration)  # now: a start, fit or not
        assert now or start == fresh.earliest_start(nodes, duration)
        prof.reserve(start, duration, nodes)
        made.append((start, duration, nodes))


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 6),
    st.lists(st.tuples(st.sampled_from([10.0, 20.0, 35.0, 70.0, INF]), st.integers(1, 3)), max_size=6),
    st.lists(
        st.tuples(
            st.sampled_from(["reserve_earliest", "start_now", "ask"]),
            st.sampled_from([5.0, 10.0, 15.0, 60.0, INF]),
            st.integers(0, 7),
        ),
        max_size=14,
    ),
)
def test_deferred_reservations_answer_as_reservations_placed_at_once(
    free: int, releases: list[tuple[float, int]], steps: list[tuple[str, float, int]]
) -> None:
    # reserve_earliest waits for the next question to place its reservations: every answer, the
    # reservations made and the profile in the end are those of placing each when asked for.
    lazy = SnapshotProfile(0.0, free, _jobs(releases))
    eager = SnapshotProfile(0.0, free, _jobs(releases))
    made: list[tuple[float, float, int]] = []
    for verb, duration, nodes in steps:
        if verb == "reserve_earliest":
            start = eager.earliest_start(nodes, duration)
            eager.reserve(start, duration, nodes)
            if start != INF:
                made.append((start, duration, nodes))
            assert lazy.reserve_earliest(nodes, duration) == (start != INF)
            assert lazy.free[0] == eager.free[0]
        elif verb == "start_now":
            eager.reserve(0.0, duration, nodes)
            lazy.reserve(0.0, duration, nodes)
        else:
            assert lazy.fits_now(nodes, duration) == eager.fits_now(nodes, duration)
            assert lazy.min_free(5.0, 5.0 + duration) == eager.min_free(5.0, 5.0 + duration)
            assert lazy.earliest_start(nodes, duration) == eager.earliest_start(nodes, duration)
    assert lazy.reservations() == made
    assert (lazy.times, lazy.free) == (eager.times, eager.free)


def test_a_reservation_for_good_is_placed_at_once_so_the_next_knows_it_never_starts() -> None:
    prof = SnapshotProfile(0.0, 0, _jobs([(10.0, 2)]))
    assert prof.reserve_earliest(2, INF)  # the two nodes from 10 on, for good
    assert not prof.reserve_earliest(1, 5.0)  # no node is ever free again
    assert prof.reservations() == [(10.0, INF, 2)]
