"""The paper's published numbers (Liu & Weissman, SC'15, Tables 3-6), printed beside ours.

Keys are the trace labels of Table 2; :func:`paper_trace` maps a workload name to one.
Percentages are fractions (-0.378 = -37.8%).
"""

from __future__ import annotations

# Table 3: target jobs, change of mean t_w, t_r, t_t, and t_t's 95% CI
_T3_KEYS = ("targets", "wait", "run", "tt", "ci_low", "ci_high")
TABLE3: dict[str, dict[str, float]] = {
    trace: dict(zip(_T3_KEYS, row, strict=True))
    for trace, row in {
        "CTC": (16167, -0.504, 0.293, -0.339, -0.347, -0.331),
        "SDSC": (14329, -0.689, 0.576, -0.484, -0.495, -0.473),
        "BLUE": (64090, -0.598, 0.269, -0.361, -0.367, -0.356),
        "KTH": (4399, -0.665, 0.349, -0.378, -0.397, -0.359),
    }.items()
}

# Table 4: subjobs and migrations per elastic job, migration share of run time, resource overhead
TABLE4: dict[str, dict[str, float]] = {
    "CTC": {"subjobs": 3.3, "migrations": 2.1, "migration_share": 0.085, "resource_overhead": 0.197},
    "SDSC": {"subjobs": 2.8, "migrations": 1.7, "migration_share": 0.056, "resource_overhead": 0.164},
    "BLUE": {"subjobs": 2.7, "migrations": 1.5, "migration_share": 0.086, "resource_overhead": 0.182},
    "KTH": {"subjobs": 2.7, "migrations": 1.6, "migration_share": 0.064, "resource_overhead": 0.241},
}

# Table 5 (KTH only here; the other traces are in the paper): n, tt before/after, CI, tw before/after
_T5_KEYS = (
    "n",
    "tt_before",
    "tt_after",
    "tt_ci_low",
    "tt_ci_high",
    "tw_before",
    "tw_after",
    "tr_before",
    "tr_after",
)
TABLE5: dict[str, dict[str, dict[str, float]]] = {
    "KTH": {
        group: dict(zip(_T5_KEYS, row, strict=True))
        for group, row in {
            "elastic": (5811, 32457, 25632, -7347, -6302, 22137, 13673, 10320, 11959),
            "non-elastic": (22392, 11523, 11565, -56, 141, 2982, 3024, 8541, 8541),
            "all": (28203, 15836, 14463, -1509, -1236, 6929, 5218, 8907, 9245),
        }.items()
    },
}

# Table 6: mean idle processors while the queue is non-empty, before and after
TABLE6: dict[str, tuple[float, float]] = {
    "CTC": (33.7, 22.4),
    "SDSC": (13.8, 5.9),
    "BLUE": (129.5, 53.8),
    "KTH": (16.0, 6.6),
}


def paper_trace(workload_name: str) -> str | None:
    """``"KTH"`` for ``KTH-SP2-1996-2.1-cln.swf.gz`` etc.; None for other workloads."""
    name = workload_name.upper()
    if "HEAD" in name or "WINDOW" in name:  # a part of a trace (e.g. the bundled 500 jobs) is not comparable
        return None
    for key in ("KTH", "CTC", "BLUE", "SDSC"):
        if name.startswith(key) or (key == "BLUE" and "BLUE" in name):
            return key
    return None
