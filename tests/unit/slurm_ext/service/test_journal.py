"""The resize journal: records survive a restart; a restarted service gives back unannounced nodes."""

from __future__ import annotations

from slurm_ext.backend import JobRequest
from slurm_ext.policies.dmr import DMRPolicy
from slurm_ext.service import Controller, ServiceOptions
from slurm_ext.service import journal as jr
from slurm_ext.service.inflight import Reconf
from slurm_ext.service.journal import Journal, reconf_from
from slurm_ext.sim import SimCluster


def test_records_round_trip_and_are_removed_when_the_resize_ends(tmp_path):
    journal = Journal(tmp_path)
    r = Reconf(7, "shrink", 4, 2, ["n1", "n2", "n3", "n4"], ["n1", "n2"], release={7: (["n1", "n2"], False)})
    journal.write(r, jr.SHRINK_DECIDED)
    (record,) = journal.records()
    assert record["step"] == jr.SHRINK_DECIDED
    back = reconf_from(record)
    assert (back.job_id, back.kind, back.token, back.release) == (7, "shrink", r.token, r.release)
    journal.remove(7)
    assert journal.records() == []


def test_a_torn_record_is_dropped_not_fatal(tmp_path):
    (tmp_path / "9.json").write_text('{"job_id": 9, "ki')
    assert Journal(tmp_path).records() == []


def test_restart_gives_back_nodes_merged_before_the_answer(tmp_path):
    cluster = SimCluster.empty(4)
    cluster.submit(JobRequest(1))
    before = list(cluster.job(1).nodes)
    cluster.expand(1, 3)  # the merge happened; then the service died before answering
    r = Reconf(
        1, "expand", 1, 3, before, [n for n in cluster.job(1).nodes if n not in before], own_nodes=before
    )
    Journal(tmp_path).write(r, jr.EXPAND_MERGED)
    ctl = Controller(cluster, DMRPolicy(), ServiceOptions(snapshot_interval=0.05, journal_dir=tmp_path))
    ctl.repair()
    assert list(cluster.job(1).nodes) == before and cluster.snapshot().free == 3
    assert ctl.journal.records() == [] and ctl.inflight.get(1) is None
