"""How SWF fields become simulator jobs: each ambiguous reading is one explicit option.

SWF traces leave several choices to the simulator, and simulators differ on them. The EJB
paper (``004_*`` §5) ran PYSS, whose SWF reading differs from this project's default on every
point below. :class:`SwfReading` names each choice; :data:`DEFAULT` is the project's reading
(unchanged, used by ``slurm-ext sim``), :data:`PYSS` the paper's simulator's, and :data:`PAPER`
(used by the EJB experiments) PYSS's but for missing requested times. Read from the public
PYSS code (``base/prototype.py`` ``_job_input_to_job``, ``base/workload_parser.py``): nothing
there is copied.

``size``
    ``requested``: requested processors (field 8), allocated (field 5) when missing.
    ``allocated``: allocated processors, requested when missing (PYSS).
``oversize`` (larger than the machine)
    ``skip``: left out with a reason. ``clip``: run on the whole machine (PYSS).
``unknown_run`` (run time missing or zero, allocated processors missing, or no submit time)
    ``skip``: left out with a reason. ``tiny``: kept as a 1-second job with a 1-second limit
    on its allocated processors (at least 1), submitted at ``max(submit, 1)`` (PYSS).
``overrun`` (run time longer than the requested time)
    ``kill``: the job is killed at its limit (as Slurm would). ``extend``: the limit is raised
    to the run time and the job runs to its end. ``pyss``: the job stops at its requested
    time but the scheduler plans with the run time (PYSS: estimate ``max(req, run)``,
    actual ``min(req, run)``).
``missing_limit`` (no requested time)
    ``run_time``: the run time is the limit. ``skip``: left out with a reason. ``pyss``: the
    run time is the estimate and the job runs 1 second (PYSS: ``max(min(-1, run), 1)``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, fields

import numpy as np

CHOICES: dict[str, tuple[str, ...]] = {
    "size": ("requested", "allocated"),
    "oversize": ("skip", "clip"),
    "unknown_run": ("skip", "tiny"),
    "overrun": ("kill", "extend", "pyss"),
    "missing_limit": ("run_time", "skip", "pyss"),
}


@dataclass(frozen=True, slots=True)
class SwfReading:
    """One choice per ambiguous SWF field (see the module docstring)."""

    size: str = "requested"
    oversize: str = "skip"
    unknown_run: str = "skip"
    overrun: str = "kill"
    missing_limit: str = "run_time"

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if value not in CHOICES[f.name]:
                valid = ", ".join(CHOICES[f.name])
                raise ValueError(f"SWF reading {f.name}={value!r} is not one of: {valid}")

    def describe(self) -> str:
        return " ".join(f"{f.name}={getattr(self, f.name)}" for f in fields(self))


DEFAULT = SwfReading()
PYSS = SwfReading(size="allocated", oversize="clip", unknown_run="tiny", overrun="pyss", missing_limit="pyss")
# The EJB experiments' reading: PYSS's, except that a missing requested time is the run time.
# Taken literally, PYSS turns every job of a trace without requested times (NASA iPSC,
# lublin_256) into a 1-second job; the paper's four traces have requested times.
PAPER = SwfReading(size="allocated", oversize="clip", unknown_run="tiny", overrun="pyss")
PRESETS: dict[str, SwfReading] = {"default": DEFAULT, "pyss": PYSS, "paper": PAPER}


def parse_reading(spec: str) -> SwfReading:
    """``default``, ``pyss``, or a preset followed by ``,key=value`` overrides
    (``pyss,size=requested``); raises ValueError with a one-line message."""
    head, *rest = [p.strip() for p in spec.split(",") if p.strip()] or ["default"]
    if "=" in head:
        rest.insert(0, head)
        head = "default"
    if head not in PRESETS:
        raise ValueError(f"unknown SWF reading {head!r}; presets: {', '.join(PRESETS)}")
    values = {f.name: getattr(PRESETS[head], f.name) for f in fields(SwfReading)}
    for item in rest:
        key, sep, value = item.partition("=")
        if not sep or key not in CHOICES:
            raise ValueError(f"bad SWF reading override {item!r}; keys: {', '.join(CHOICES)}")
        values[key] = value
    return SwfReading(**values)


@dataclass(frozen=True)
class ReadTimes:
    """Per-job columns after a reading: ``tiny`` marks jobs kept as 1-second jobs,
    ``no_limit`` the (other) jobs without a requested time."""

    submit: np.ndarray
    size: np.ndarray
    limit: np.ndarray
    run: np.ndarray
    tiny: np.ndarray
    no_limit: np.ndarray


def apply_reading(
    reading: SwfReading,
    submit: np.ndarray,
    run: np.ndarray,
    alloc: np.ndarray,
    req_time: np.ndarray,
    size: np.ndarray,
    machine: int,
    procs_per_node: int,
    notes: Counter[str],
) -> ReadTimes:
    """Submit times, sizes (nodes), limits and run times of the SWF columns under ``reading``;
    adjustments are counted in ``notes``. Which jobs are then skipped is the caller's business."""
    limit = np.where(req_time <= 0, run, req_time)
    actual = run.copy()
    # A job PYSS calls problematic (no run time, no allocated processors, no submit time).
    tiny = (run <= 0) | (submit < 0) | (alloc <= 0)
    if reading.unknown_run == "tiny":
        size = np.where(tiny, np.maximum(np.ceil(np.maximum(alloc, 1) / procs_per_node), 1), size)
        limit = np.where(tiny, 1.0, limit)
        actual = np.where(tiny, 1.0, actual)
        submit = np.where(tiny, np.maximum(submit, 1.0), submit)
        if tiny.any():
            notes["run time, size or submit time missing: kept as a 1-second job"] += int(tiny.sum())
    else:
        tiny = np.zeros(len(run), dtype=bool)
    over = ~tiny & (req_time > 0) & (run > req_time)
    if reading.overrun != "kill" and over.any():
        limit = np.where(over, run, limit)
        if reading.overrun == "pyss":
            actual = np.where(over, req_time, actual)
        notes[f"ran past the requested time (overrun={reading.overrun})"] += int(over.sum())
    no_limit = ~tiny & (req_time <= 0)
    if reading.missing_limit == "pyss":
        actual = np.where(no_limit, 1.0, actual)
    if reading.oversize == "clip":
        clipped = size > machine
        if clipped.any():
            notes["larger than the machine: clipped to it"] += int(clipped.sum())
        size = np.minimum(size, machine)
    return ReadTimes(submit, size, limit, actual, tiny, no_limit)
