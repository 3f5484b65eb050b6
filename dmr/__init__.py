"""DMR for mpi4py: malleable MPI applications on an unmodified Slurm.

The application calls :func:`check_status` (or :func:`icheck_status`) at its reconfiguring
points, or wraps its step loop in :class:`Malleable`; rank 0 asks the control service
(``slurm-ext serve``), which answers expand, shrink or no action and resizes the job.
Configuration: environment variables, see :mod:`dmr.config`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# Loaded on first use: the job agent (python -m dmr, dmr-run) imports this package too, and
# must not load mpi4py (importing it initialises MPI, which fails outside an MPI launch).
_LAZY = {
    "check_status": "dmr.api",
    "comm": "dmr.api",
    "finalize": "dmr.api",
    "icheck_status": "dmr.api",
    "joining": "dmr.api",
    "request_growth": "dmr.api",
    "runtime": "dmr.api",
    "DMRWarning": "dmr.client",
    "DMRArgumentError": "dmr.config",
    "Malleable": "dmr.malleable",
    "Action": "dmr.runtime",
    "Reconfiguration": "dmr.runtime",
}

if TYPE_CHECKING:
    from dmr.api import check_status, comm, finalize, icheck_status, joining, request_growth, runtime
    from dmr.client import DMRWarning
    from dmr.config import DMRArgumentError
    from dmr.malleable import Malleable
    from dmr.runtime import Action, Reconfiguration


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'dmr' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


__all__ = [
    "Action",
    "DMRArgumentError",
    "DMRWarning",
    "Malleable",
    "Reconfiguration",
    "check_status",
    "comm",
    "finalize",
    "icheck_status",
    "joining",
    "request_growth",
    "runtime",
]
