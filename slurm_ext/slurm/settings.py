"""What Slurm's own configuration (``scontrol show config``) allows the toolkit: read by
``slurm-ext doctor``, by the adapter when the service picks its expansion strategy, and by the
EJB manager for how a job's files are opened."""

from __future__ import annotations

# select/cons_tres (and cons_res) merge a job's second expansion one node short (found on 22.05;
# docs/admin/slurm.md): there jobs grow with expander jobs, which any select plugin runs.
MERGE_SELECT = ("select/linear",)


def parse_config(text: str) -> dict[str, str]:
    """``scontrol show config``'s ``Key = value`` lines as a dict."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() and " " not in key.strip():
            out[key.strip()] = value.strip()
    return out


def files_appended(conf: dict[str, str]) -> bool:
    """``JobFileAppend=1``: a job's output and error files are opened for appending unless the
    job asks otherwise (``--open-mode``); else they are emptied when it starts."""
    return conf.get("JobFileAppend") == "1"


def scheduler_parameters(conf: dict[str, str]) -> list[str]:
    raw = conf.get("SchedulerParameters", "")
    return [p.strip() for p in raw.split(",") if p.strip() and p.strip() != "(null)"]


def merge_refused(conf: dict[str, str]) -> str | None:
    """Why a running job cannot be grown in place (the ``merge`` strategy) here, or None."""
    if "permit_job_expansion" not in scheduler_parameters(conf):
        return "SchedulerParameters lacks permit_job_expansion"
    select = conf.get("SelectType", "")
    if select not in MERGE_SELECT:
        return f"{select or 'no SelectType'} merges a second expansion one node short"
    return None
