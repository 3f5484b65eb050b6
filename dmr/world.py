"""The application's MPI world as a stack of levels, grown by spawn and cut back by disconnect.

Level 0 is ``COMM_WORLD`` of the ranks the job was launched with. An expansion spawns the
new ranks from the current communicator (``Comm.Spawn``, with the ``host`` info key naming
the nodes just added: Slurm's pmi2 turns it into a job step on those nodes) and merges
parents and children into level ``j+1``, parents first, so a rank keeps its number across
levels and the ranks of level ``j`` are exactly ranks ``0..size_j-1`` of every higher level.

A shrink goes back to a lower level: every communicator above it (merged intracomm and
spawn intercomm) is disconnected top-down, collectively, so the leaving ranks end up
connected to nobody and can finalize and exit on their own while the others continue on
the lower level's communicator. Shrinks therefore land on level sizes; the runtime grows
in factor steps so every size it can shrink to is one.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from typing import Any

from mpi4py import MPI


@dataclass
class Level:
    """One level: its merged communicator and the spawn intercomm that created it (None at 0)."""

    index: int
    comm: MPI.Intracomm
    inter: MPI.Intercomm | None = None


@dataclass
class World:
    """The levels this process belongs to, plus the sizes of all levels of the application."""

    sizes: list[int]
    levels: dict[int, Level] = field(default_factory=dict)
    base: int = 0  # the level this process joined at

    @classmethod
    def launch(cls, comm: MPI.Intracomm | None = None) -> World:
        comm = comm or MPI.COMM_WORLD
        return cls(sizes=[comm.Get_size()], levels={0: Level(0, comm)}, base=0)

    @property
    def top(self) -> int:
        return len(self.sizes) - 1

    @property
    def comm(self) -> MPI.Intracomm:
        level = self.levels.get(self.top)
        if level is None:
            raise RuntimeError("this rank has left the application (shrink): it has no communicator")
        return level.comm

    @property
    def left(self) -> bool:
        return self.top not in self.levels

    @property
    def size(self) -> int:
        return self.sizes[-1]

    @property
    def rank(self) -> int:
        return self.comm.Get_rank()

    # -- expand -----------------------------------------------------------------------------
    def spawn(
        self,
        count: int,
        hosts: list[str] | None,
        handover: dict[str, Any],
        command: str | None = None,
        args: list[str] | None = None,
    ) -> None:
        """Collective over the current communicator: add ``count`` ranks as a new level.

        ``handover`` (picklable) reaches the children through :meth:`join`, together with
        the level sizes; the new level becomes the current communicator.
        """
        comm = self.comm
        info = MPI.Info.Create()
        try:
            if hosts:
                info.Set("host", ",".join(hosts))
            if os.environ.get("DMR_SPAWN_WDIR", "1") != "0":
                info.Set("wdir", os.getcwd())
            cmd = command or sys.executable
            argv = args if args is not None else [os.path.abspath(sys.argv[0]), *sys.argv[1:]]
            inter = comm.Spawn(cmd, argv, maxprocs=count, info=info, root=0)
        finally:
            info.Free()
        merged = inter.Merge(high=False)
        index = self.top + 1
        self.sizes.append(merged.Get_size())
        self.levels[index] = Level(index, merged, inter)
        merged.bcast({"sizes": list(self.sizes), "handover": handover}, root=0)

    @classmethod
    def join(cls) -> tuple[World, dict[str, Any]] | None:
        """In a spawned process: merge with the parents; returns the world and the handover.

        Returns ``None`` in a process that was not spawned.
        """
        parent = MPI.Comm.Get_parent()
        if parent == MPI.COMM_NULL:
            return None
        merged = parent.Merge(high=True)
        msg = merged.bcast(None, root=0)
        sizes = list(msg["sizes"])
        index = len(sizes) - 1
        return cls(sizes=sizes, levels={index: Level(index, merged, parent)}, base=index), msg["handover"]

    # -- shrink -----------------------------------------------------------------------------
    def level_of_size(self, size: int) -> int | None:
        """The level whose communicator has ``size`` ranks, if any."""
        for i, s in enumerate(self.sizes):
            if s == size:
                return i
        return None

    def shrink_to(self, size: int) -> bool:
        """Collective over the current communicator: drop back to the level of ``size`` ranks.

        Returns True on ranks that stay (their communicator is now that level's) and False
        on ranks that must leave (connected to no staying rank any more).
        """
        target = self.level_of_size(size)
        if target is None:
            raise ValueError(f"cannot shrink to {size} ranks: level sizes are {self.sizes}")
        for index in range(self.top, max(target, self.base - 1), -1):
            level = self.levels.pop(index)
            level.comm.Disconnect()
            if level.inter is not None:
                level.inter.Disconnect()
        del self.sizes[target + 1 :]
        return self.base <= target
