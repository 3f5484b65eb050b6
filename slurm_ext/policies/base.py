"""The contract every policy fulfils."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import ClassVar

from slurm_ext.decisions import Decision
from slurm_ext.model import Snapshot


class Policy(ABC):
    """Looks at a snapshot, returns decisions; never touches a backend itself.

    ``asking`` lists running malleable jobs that are at a reconfiguring point right now
    (on live Slurm: the job whose rank 0 called ``dmr.check_status``). ``None`` means the
    caller is a scheduler iteration that may act on any job (simulator, or a
    scheduler-driven policy such as DBES). Decisions on jobs that are not asking are held
    by the live service until that job next asks.
    """

    name: ClassVar[str]

    @abstractmethod
    def decide(self, snap: Snapshot, asking: Sequence[int] | None = None) -> list[Decision]: ...
