"""`slurm-ext doctor`'s reading of a Slurm configuration: what works, and the line to change."""

from __future__ import annotations

from slurm_ext.slurm.doctor import OFF, OK, check_config
from slurm_ext.slurm.settings import merge_refused, parse_config

LOCAL = """Configuration data as of 2026-12-06T03:50:00
AccountingStorageType   = accounting_storage/slurmdbd
PriorityType            = priority/basic
SchedulerParameters     = permit_job_expansion,bf_interval=1
SchedulerType           = sched/backfill
SelectType              = select/linear
SlurmUser               = root(0)
"""


def by_feature(conf: str) -> dict:
    return {f.feature: f for f in check_config(parse_config(conf))}


def test_the_toolkits_own_cluster_has_every_feature() -> None:
    found = by_feature(LOCAL)
    assert all(f.status == OK for f in found.values()), found
    assert parse_config(LOCAL)["SlurmUser"] == "root(0)"


def test_without_permit_job_expansion_the_fix_keeps_the_sites_other_parameters() -> None:
    found = by_feature(LOCAL.replace("permit_job_expansion,", ""))
    merge = found["merge expansion"]
    assert merge.status == OFF and "expander jobs" in merge.detail
    assert merge.fix.startswith("SchedulerParameters=bf_interval=1,permit_job_expansion")


def test_under_cons_tres_jobs_grow_with_expander_jobs_and_doctor_says_why() -> None:
    conf = LOCAL.replace("select/linear", "select/cons_tres")
    assert merge_refused(parse_config(LOCAL)) is None
    assert "one node short" in (merge_refused(parse_config(conf)) or "")  # auto: expander jobs
    merge = by_feature(conf)["merge expansion"]
    assert merge.status == OFF and "select/cons_tres" in merge.detail and merge.fix.startswith("SelectType=")
    assert by_feature(conf)["expander jobs"].status == OK


def test_a_cluster_as_slurm_ships_it_names_each_missing_setting() -> None:
    stock = LOCAL.replace("permit_job_expansion,bf_interval=1", "(null)")
    stock = stock.replace("sched/backfill", "sched/builtin").replace(
        "accounting_storage/slurmdbd", "accounting_storage/none"
    )
    found = by_feature(stock)
    assert found["merge expansion"].fix.startswith("SchedulerParameters=permit_job_expansion")
    assert found["EJB probe"].status == OFF and found["EJB probe"].fix == "SchedulerType=sched/backfill"
    assert found["accounting"].status == OFF and "slurmdbd" in found["accounting"].fix
    assert found["expander jobs"].status == OK and found["shrink"].status == OK  # the service still works
