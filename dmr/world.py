"""The application's MPI world: an ordered list of groups, joined through an MPI port.

A *group* is the ranks of one launch: one ``srun`` step (normally the ranks of one node) with
its own ``COMM_WORLD``. The application's communicator merges every group in the order they
joined, so a rank keeps its place among the ranks that stay:

- a group joins with ``Comm.Connect`` on the application's port while every rank of the
  application calls ``Comm.Accept`` (collective), then the intercomm is merged (old ranks
  first) and dropped;
- groups leave with ``Comm.Split`` (the staying ranks, in their order) followed by
  ``Comm.Disconnect`` of the old communicator: the leaving ranks are then connected to no
  staying rank and can finalize and exit on their own, wherever they sat in the order.

Where a group runs (the application's own job, an expander job, an EJB subjob) is the
launcher's and the service's business: the world only knows each group's job and nodes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, cast

from mpi4py import MPI

from slurm_ext.protocol import group_ranks


@dataclass(frozen=True)
class Group:
    """One launch of ranks: its name, the Slurm job hosting it (0 outside Slurm), nodes, rank count."""

    tag: str
    job_id: int
    nodes: tuple[str, ...]
    size: int

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "nodes": list(self.nodes)}

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Group:
        return cls(str(raw["tag"]), int(raw["job_id"]), tuple(raw["nodes"]), int(raw["size"]))


class World:
    """This process's view of the application: the communicator, its group, all groups in rank order."""

    def __init__(self, comm: MPI.Intracomm, home: MPI.Intracomm, groups: list[Group], tag: str) -> None:
        self.comm = comm
        self.home = home  # this group's own COMM_WORLD
        self.groups = groups
        self.tag = tag
        self.left = False

    @classmethod
    def first(cls, group: Group, home: MPI.Intracomm | None = None) -> World:
        """The first group of an application: its world is its own ``COMM_WORLD``."""
        home = home or MPI.COMM_WORLD
        return cls(home, home, [group], group.tag)

    @property
    def size(self) -> int:
        return self.comm.Get_size()

    @property
    def rank(self) -> int:
        return self.comm.Get_rank()

    @property
    def nodes(self) -> list[str]:
        """The application's nodes in rank order (each once)."""
        return list(dict.fromkeys(n for g in self.groups for n in g.nodes))

    def ranks_of(self, tags: set[str]) -> list[int]:
        """Ranks (in the current communicator) of the groups named in ``tags``."""
        return group_ranks([(g.size, g.tag in tags) for g in self.groups])

    # -- joining ------------------------------------------------------------------------------
    def accept(
        self,
        port: str | None,
        count: int,
        handover: dict[str, Any],
        release: Callable[[int], None] | None = None,
    ) -> None:
        """Collective over the current communicator: admit ``count`` groups, one by one.

        ``port`` and ``release`` matter on rank 0 only: ``release(i)`` lets the i-th group
        connect, just before rank 0 accepts it. Every new group receives ``handover`` and
        takes part in admitting the groups after it.
        """
        for i in range(count):
            if release is not None and self.comm.Get_rank() == 0:
                release(i)
            self._admit(port, count - i - 1, handover)

    def _admit(self, port: str | None, remaining: int, handover: dict[str, Any]) -> None:
        old = self.comm
        # the port name counts on the root only (mpi4py reads it there; its stub asks for a str everywhere)
        inter = old.Accept(port if old.Get_rank() == 0 else None, root=0)  # type: ignore[arg-type]
        merged = inter.Merge(high=False)
        inter.Disconnect()
        group = Group.from_dict(merged.bcast(None, root=old.Get_size()))
        self.groups = [*self.groups, group]
        state = {"groups": [g.to_dict() for g in self.groups], "remaining": remaining, "handover": handover}
        merged.bcast(state, root=0)
        self._replace(merged)

    @classmethod
    def connect(
        cls, port: str, group: Group, home: MPI.Intracomm | None = None
    ) -> tuple[World, dict[str, Any]]:
        """In a new group (collective over its ``COMM_WORLD``): join the application at ``port``.

        Returns the world and the application's handover; the new ranks have then also taken
        part in admitting every group that joins in the same operation after them.
        """
        home = home or MPI.COMM_WORLD
        inter = home.Connect(port, root=0)
        merged = inter.Merge(high=True)
        inter.Disconnect()
        merged.bcast(
            group.to_dict() if home.Get_rank() == 0 else None, root=merged.Get_size() - home.Get_size()
        )
        state = merged.bcast(None, root=0)
        world = cls(merged, home, [Group.from_dict(g) for g in state["groups"]], group.tag)
        world.accept(None, int(state["remaining"]), state["handover"])
        return world, state["handover"]

    # -- leaving ------------------------------------------------------------------------------
    def remove(self, tags: set[str]) -> bool:
        """Collective over the current communicator: the groups in ``tags`` leave.

        Returns True on staying ranks (their communicator now holds only the staying groups,
        in their old order) and False on leaving ranks (connected to no staying rank any more:
        they may finalize and exit).
        """
        unknown = tags - {g.tag for g in self.groups}
        if unknown or len(tags) >= len(self.groups):
            raise ValueError(f"cannot remove groups {sorted(tags)} from {[g.tag for g in self.groups]}")
        stays = self.tag not in tags
        old = self.comm
        new = cast(MPI.Intracomm, old.Split(0 if stays else 1, old.Get_rank()))  # mpi4py's stub: a Comm
        if old is not self.home:
            old.Disconnect()
        if not stays:
            new.Disconnect()
            self.left = True
            return False
        self.comm = new
        self.groups = [g for g in self.groups if g.tag not in tags]
        return True

    def _replace(self, comm: MPI.Intracomm) -> None:
        old, self.comm = self.comm, comm
        if old is not self.home:
            old.Disconnect()
