"""Elastic Job Bundling (Liu & Weissman, SC'15; ``shared/papers/004_*``).

A large job ``J_t = (P_t, R_t)`` waiting in an EASY-backfilled queue is decomposed into
smaller subjobs that fit the immediately backfillable slots; the application runs
over-subscribed on them and migrates as subjobs come and go.

Modules (decision code is independent of any backend):

* :mod:`ejb.params` -- the paper's constants (P >= 8, O_max = 8, λ = 120 s, Δ = 1);
* :mod:`ejb.model` -- target job, subjobs, intervals;
* :mod:`ejb.progress` -- progress model, equations (1)-(3), interval lists (§2.2);
* :mod:`ejb.slots` -- type-I/II slots from EASY's view or any Snapshot (§2.3);
* :mod:`ejb.cases` -- WAIT/RUNNING cases 1-3 and the J0 options as pure functions (§3.2-3.3);
* :mod:`ejb.scheduler` -- EJB-sched's event handlers, emitting :mod:`ejb.actions` (§3);
* :mod:`ejb.sim_driver` -- runs EJB-sched inside :class:`slurm_ext.sim.Simulator` (§5);
* :mod:`ejb.experiments` -- Tables 3-6 and Figures 7, 8, 10, 11 (§6);
* :mod:`ejb.live` -- the EJB manager on live Slurm (§4), driving the same EJB-sched;
* :mod:`ejb.submit` -- ``ejb-submit``;
* :mod:`ejb.cli` -- ``ejb simulate ...``, ``ejb manager | status | cancel | demo | bench live|scale``;
  also ``slurm-ext ejb ...`` (the ``slurm_ext.commands`` entry point).
"""
