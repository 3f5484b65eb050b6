"""DMR for mpi4py: malleable MPI applications on an unmodified Slurm.

The application calls :func:`check_status` (or :func:`icheck_status`) at its reconfiguring
points, or wraps its step loop in :class:`Malleable`; rank 0 asks the control service
(``slurm-ext serve``), which answers expand, shrink or no action and resizes the job.
Configuration: environment variables, see :mod:`dmr.config`.
"""

from dmr.api import check_status, comm, finalize, icheck_status, joining, runtime
from dmr.client import DMRWarning
from dmr.config import DMRArgumentError
from dmr.malleable import Malleable
from dmr.runtime import Action, Reconfiguration

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
    "runtime",
]
