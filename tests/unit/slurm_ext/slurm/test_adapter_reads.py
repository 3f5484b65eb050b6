"""The adapter's smaller readings and writes (partitions, the default partition, a node's host, the
JobFileAppend setting, a job's output file, sacct, sbatch as a job's owner), on Slurm's output
captured from the local cluster (22.05) and the recorded releases: a fake command runner answers
each command line with that text, and records what ran."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from ejb.live.manager import _first_node_of
from slurm_ext.demo.cli import default_partition
from slurm_ext.errors import SlurmError, SlurmUnavailable
from slurm_ext.model import Node, NodeState, Snapshot
from slurm_ext.slurm.adapter import SlurmCluster
from slurm_ext.workloads.model import split_partition
from slurm_ext.workloads.sacct import SacctError, load_sacct, partition_nodes
from tests.unit.slurm_ext.slurm.fakes import cluster

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "slurm"
SACCT = Path(__file__).resolve().parents[2] / "slurm_ext" / "workloads" / "data" / "sacct-22.05.json"

# captured on the local cluster (Slurm 22.05.8): `scontrol show node -o n3`, `scontrol show config`
SHOW_NODE = (
    "NodeName=n3 Arch=x86_64 CoresPerSocket=1  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=0.74 "
    "AvailableFeatures=(null) ActiveFeatures=(null) Gres=(null) NodeAddr=127.0.0.1 NodeHostName=localhost "
    "Port=17003 Version=22.05.8 OS=Linux 6.18.44-fc-v1300 #1 SMP PREEMPT_DYNAMIC @0  RealMemory=1000 "
    "AllocMem=0 FreeMem=23110 Sockets=2 Boards=1 State=IDLE ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A "
    "MCS_label=N/A Partitions=debug  BootTime=2026-12-06T19:28:49 SlurmdStartTime=2026-12-06T19:33:08\n"
)
CONFIG = (
    "Configuration data as of 2026-12-06T19:36:57\n"
    "AccountingStorageBackupHost = (null)\n"
    "AccountingStorageEnforce = none\n"
    "JobFileAppend           = {}\n"
    "SchedulerParameters     = permit_job_expansion,bf_interval=2\n"
)


@pytest.mark.parametrize("release", ["22.05", "24.11", "26.05"])
def test_partitions_are_the_nodes_own_in_every_release(release: str) -> None:
    sinfo = (FIXTURES / release / "sinfo.json").read_text()
    slurm, fake = cluster({"sinfo --json": (0, sinfo, "")})
    assert slurm.partitions() == {"debug": {"n1", "n2", "n3", "n4"}}
    assert fake.ran == [["sinfo", "--json"]]  # one reading, the snapshot's
    nodes = slurm.nodes()
    assert slurm.partitions(nodes) == {"debug": {"n1", "n2", "n3", "n4"}} and len(fake.ran) == 2


def test_a_node_in_two_partitions_is_in_both() -> None:
    doc = {"nodes": [{"name": "n1", "state": "idle", "partitions": ["all"]},
                     {"name": "n2", "state": "idle", "partitions": ["all", "upper"]}]}  # fmt: skip
    slurm, _ = cluster({"sinfo --json": (0, json.dumps(doc), "")})
    assert slurm.partitions() == {"all": {"n1", "n2"}, "upper": {"n2"}}


def test_unreachable_slurm_is_no_partition_list() -> None:
    said = '{"errors": [{"description": "Unable to contact slurm controller"}], "nodes": []}'
    slurm, _ = cluster({"sinfo --json": (0, said, "")})
    with pytest.raises(SlurmUnavailable):
        slurm.partitions()


@pytest.mark.parametrize(
    ("out", "default"),
    [("debug*\n", "debug"), ("batch\nbatch\nshort*\nshort*\n", "short"), ("batch\n", ""), ("", "")],
)
def test_the_default_partition_is_sinfos_starred_one(out: str, default: str) -> None:
    slurm, fake = cluster({"sinfo -h -o %P": (0, out, "")})
    assert slurm.default_partition() == default
    assert fake.ran == [["sinfo", "-h", "-o", "%P"]]


def test_the_demo_counts_the_default_partitions_nodes() -> None:
    doc = {"nodes": [{"name": f"n{i}", "state": "idle", "partitions": ["all"] + (["short"] if i > 4 else [])}
                     for i in range(1, 7)]}  # fmt: skip
    answers = {"sinfo -h -o %P": (0, "all\nshort*\n", ""), "sinfo --json": (0, json.dumps(doc), "")}
    slurm, _ = cluster(answers)
    assert default_partition(slurm) == ("short", 2)
    answers["sinfo -h -o %P"] = (1, "", "sinfo: error: ...")
    answers["squeue --json"] = (0, '{"jobs": []}', "")
    assert default_partition(slurm) == ("", 6)


def test_a_nodes_host_is_its_node_hostname_else_its_name() -> None:
    slurm, fake = cluster({"scontrol show node -o n3": (0, SHOW_NODE, "")})
    assert slurm.node_hostname("n3") == "localhost"
    assert slurm.node_hostname("nosuch") == "nosuch"  # "Node nosuch not found", exit 1
    assert fake.ran[-1] == ["scontrol", "show", "node", "-o", "nosuch"]


@pytest.mark.parametrize(("value", "appends"), [("0", False), ("1", True)])
def test_job_file_append_is_read_from_the_config(value: str, appends: bool) -> None:
    slurm, _ = cluster({"scontrol show config": (0, CONFIG.format(value), "")})
    assert slurm.job_file_append() is appends
    assert slurm.config()["SchedulerParameters"] == "permit_job_expansion,bf_interval=2"


def test_job_file_append_is_off_where_scontrol_fails() -> None:
    slurm, _ = cluster({})
    assert slurm.job_file_append() is False


def test_set_stdout_is_one_quiet_scontrol_update() -> None:
    slurm, fake = cluster({})  # refused (a job that ended): no complaint
    slurm.set_stdout(12, "/home/u/out-%j.txt")
    assert fake.ran == [["scontrol", "update", "JobId=12", "StdOut=/home/u/out-%j.txt"]]


def test_accounting_runs_sacct_and_says_how_it_failed() -> None:
    cmd = "sacct --json -a -X -S now-1day -E now -r debug"
    slurm, _ = cluster({cmd: (0, '{"jobs": []}', "")})
    assert slurm.accounting("now-1day", "now", "debug") == '{"jobs": []}'
    slurm, _ = cluster({cmd: (1, "", "sacct: error: Problem talking to the database\nmore\n")})
    with pytest.raises(
        SlurmError, match=r"^sacct --json .* -r debug failed \(exit 1\): sacct: error: Problem"
    ):
        slurm.accounting("now-1day", "now", "debug")


def _executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def _fake_slurm_commands(tmp_path: Path, sinfo: str, sacct: str) -> None:
    (tmp_path / "sinfo.json").write_text(sinfo)
    (tmp_path / "sacct.json").write_text(sacct)
    _executable(tmp_path / "sinfo", f'#!/bin/sh\ncat "{tmp_path}/sinfo.json"\n')
    _executable(
        tmp_path / "sacct", f'#!/bin/sh\necho "$@" > "{tmp_path}/sacct.args"\ncat "{tmp_path}/sacct.json"\n'
    )


def test_a_sacct_workloads_machine_is_its_partitions_nodes_from_the_adapter(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    doc = {"nodes": [{"name": f"n{i}", "state": "idle", "partitions": ["debug"]} for i in range(1, 9)]}
    _fake_slurm_commands(tmp_path, json.dumps(doc), SACCT.read_text())
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    assert partition_nodes() == {"debug": {f"n{i}" for i in range(1, 9)}}
    wl = load_sacct("sacct:now-1day..now@debug")
    assert wl.nodes == 8 and wl.jobs
    assert (tmp_path / "sacct.args").read_text().split() == [
        "--json", "-a", "-X", "-S", "now-1day", "-E", "now", "-r", "debug"]  # fmt: skip
    with pytest.raises(SacctError, match=r"no partition 'other' here \(sinfo lists: debug\)"):
        load_sacct("sacct:now-1day..now@other")


def test_a_failing_sacct_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _executable(
        tmp_path / "sacct", "#!/bin/sh\necho 'sacct: error: Problem talking to the database' >&2\nexit 1\n"
    )
    monkeypatch.setenv("PATH", str(tmp_path))  # no sinfo: the machine is the nodes the jobs ran on
    with pytest.raises(SacctError) as err:
        load_sacct("sacct:now-1day..now")
    assert str(err.value) == (
        "sacct --json -a -X -S now-1day -E now failed (exit 1): sacct: error: Problem talking to the database"
    )


def test_submit_as_this_user_passes_the_environment_and_slurm_conf(tmp_path: Path) -> None:
    sbatch = _executable(
        tmp_path / "sbatch", '#!/bin/sh\necho "$MARK $SLURM_CONF $*" > args\necho "77;local"\n'
    )
    slurm = SlurmCluster(slurm_conf=tmp_path / "slurm.conf")
    me = __import__("pwd").getpwuid(os.getuid()).pw_name
    job = slurm.submit_as(me, [str(sbatch), "--parsable", "-N", "1"], {"MARK": "mine"}, str(tmp_path))
    assert job == 77
    assert (tmp_path / "args").read_text().split() == [
        "mine",
        str(tmp_path / "slurm.conf"),
        "--parsable",
        "-N",
        "1",
    ]


def test_submit_as_fails_with_sbatchs_message(tmp_path: Path) -> None:
    said = _executable(
        tmp_path / "said", "#!/bin/sh\necho 'sbatch: error: invalid partition specified: x' >&2\nexit 1\n"
    )
    silent = _executable(tmp_path / "silent", "#!/bin/sh\nexit 2\n")
    slurm = SlurmCluster()
    with pytest.raises(RuntimeError, match=r"^sbatch: error: invalid partition specified: x$"):
        slurm.submit_as("", [str(said)], {}, str(tmp_path))
    with pytest.raises(RuntimeError, match=r"^sbatch exited 2$"):
        slurm.submit_as("", [str(silent)], {}, str(tmp_path))


def test_a_pending_jobs_first_node_is_the_first_of_its_partitions() -> None:
    nodes = tuple(Node(f"n{i}", NodeState.IDLE, 1, ("a",) if i < 3 else ("b",)) for i in range(1, 5))
    snap = Snapshot(time=0.0, nodes=nodes, jobs=())
    assert _first_node_of(snap, "b") == "n3"
    assert _first_node_of(snap, "b,a") == "n1"
    assert _first_node_of(snap, "") == "" and _first_node_of(snap, "c") == ""


@pytest.mark.parametrize(
    ("spec", "split"),
    [("trace.swf", ("trace.swf", None)), ("trace.swf@2", ("trace.swf", "2")), ("a@b@c", ("a@b", "c")),
     ("sacct:now-1day..now@", ("sacct:now-1day..now", ""))],
)  # fmt: skip
def test_one_reading_of_the_partition_suffix(spec: str, split: tuple[str, str | None]) -> None:
    assert split_partition(spec) == split
