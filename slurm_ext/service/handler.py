"""What the protocol server asks of whoever answers the DMR wire protocol: the control service's
:class:`~slurm_ext.service.controller.Controller`, and the EJB manager, which answers its bundled
applications' checks itself. The server calls nothing else on it."""

from __future__ import annotations

from typing import Protocol

from slurm_ext import protocol as p
from slurm_ext.service.auth import Peer
from slurm_ext.service.watcher import SnapshotCache


class Named(Protocol):
    @property
    def name(self) -> str: ...


class Handler(Protocol):
    cache: SnapshotCache  # started and stopped with the server

    @property
    def policy(self) -> Named: ...

    def repair(self) -> None:
        """Settle what a crashed predecessor left half done (before the first request)."""
        ...

    def housekeeping(self) -> None:
        """Periodic: deadlines, sweeps, jobs that left."""
        ...

    def status(self) -> p.Status: ...

    def check(self, req: p.Check, peer: Peer | None = None) -> p.Decision | p.Error: ...

    def check_now(self, req: p.Check, peer: Peer | None = None) -> p.Decision | p.Error | None:
        """An answer given without blocking (on the server's event loop), or None."""
        ...

    def commit(self, req: p.Commit, peer: Peer | None = None) -> p.Done | p.Error: ...

    def ack(self, req: p.Ack, peer: Peer | None = None) -> p.Done | p.Error: ...

    def shrink_ready(self, req: p.ShrinkReady, peer: Peer | None = None) -> p.Done | p.Error: ...
