"""A Slurm adapter whose commands are answered from canned text (and recorded): for tests of the
adapter's parsing and of what it runs, without a cluster."""

from __future__ import annotations

import subprocess
from collections.abc import Sequence

from slurm_ext.errors import SlurmError
from slurm_ext.slurm.adapter import SlurmCluster
from slurm_ext.slurm.commands import SlurmCommands


class FakeCommands(SlurmCommands):
    """Answers a command line (its words joined by spaces) with canned output; records each."""

    def __init__(self, answers: dict[str, tuple[int, str, str]]) -> None:
        super().__init__()
        self.answers = answers
        self.ran: list[list[str]] = []

    def run(
        self, args: Sequence[str], timeout: float | None = None, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        self.ran.append(list(args))
        code, out, err = self.answers.get(" ".join(args), (1, "", f"{args[0]}: error: not expected here"))
        if check and code != 0:
            raise SlurmError(f"{args[0]}: {err}", list(args), err)
        return subprocess.CompletedProcess(list(args), code, out, err)


def cluster(answers: dict[str, tuple[int, str, str]]) -> tuple[SlurmCluster, FakeCommands]:
    slurm = SlurmCluster()
    slurm.cmd = fake = FakeCommands(answers)
    return slurm, fake
