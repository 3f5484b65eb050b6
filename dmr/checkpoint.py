"""Checkpoints for ``dmr-run --on-failure continue``: a :class:`dmr.Malleable` application's state,
held in its job's agent.

Every ``DMR_CHECKPOINT_EVERY`` steps (``dmr-run --checkpoint-every``) the ranks gather their
blocks of every array on rank 0 (the block redistribution a shrink to one rank does), which sends
them with the values and the step number to the agent. After a group fails, the agent starts the
application again on the job's other nodes with ``DMR_RESTORE=1``; there :func:`restore` hands each
new rank its block of that state, in the balanced layout over the new size. The state passes
through rank 0 and is held in the agent's memory: it must fit one node.
"""

from __future__ import annotations

import os
import pickle
from typing import TYPE_CHECKING, Any

import numpy as np

from dmr.client import warn_once
from dmr.redistribute import redistribute

if TYPE_CHECKING:
    from dmr.runtime import Runtime


def every() -> int:
    """Steps between two checkpoints; 0: none (the application does not continue after a failure)."""
    raw = os.environ.get("DMR_CHECKPOINT_EVERY", "")
    return int(raw) if raw.isdigit() else 0


def save(runtime: Runtime, step: int, arrays: dict[str, np.ndarray], values: dict[str, Any]) -> None:
    """Collective: the state at the start of ``step`` to the agent (a failure to send is a warning:
    the application goes on, a later failure restarts from the checkpoint before)."""
    comm = runtime.comm
    whole = {name: redistribute(comm, arrays[name], comm.Get_size(), [0]) for name in sorted(arrays)}
    if comm.Get_rank() != 0:
        return
    blob = pickle.dumps({"step": step, "values": values, "arrays": whole}, protocol=pickle.HIGHEST_PROTOCOL)
    try:
        runtime.agent_request("checkpoint", blob, step=step)
    except (OSError, RuntimeError, ConnectionError, ValueError) as exc:
        warn_once("checkpoint", f"dmr: cannot send a checkpoint to the agent ({exc}); going on")


def restore(runtime: Runtime) -> tuple[int, dict[str, np.ndarray], dict[str, Any]] | None:
    """Collective, in a launch the agent started after a failure: (step, this rank's blocks, values)
    of the last checkpoint, or None (not a restart, or none was taken)."""
    comm = runtime.comm
    state: dict[str, Any] | None = None
    if comm.Get_rank() == 0 and os.environ.get("DMR_RESTORE") and runtime.agent:
        reply = runtime.agent_request("restore")
        if reply.get("step") is not None:
            state = pickle.loads(reply["data"])  # noqa: S301 (the agent holds what rank 0 sent it, under its key)
    meta = comm.bcast(None if state is None else (state["step"], state["values"], sorted(state["arrays"])))
    if meta is None:
        return None
    step, values, names = meta
    held = state["arrays"] if state is not None else {}
    arrays = {name: redistribute(comm, held.get(name), [0], comm.Get_size()) for name in names}
    return int(step), arrays, dict(values)
