"""The extension point for external controllers such as Elastic Job Bundling (``004_*``).

An EJB-like controller sits *beside* the batch scheduler: the simulator's base scheduler
(EASY in the EJB paper) stays unchanged and treats every subjob as an ordinary job.

Writing a controller
--------------------
Subclass :class:`SimController` and override what you need::

    class Ejb(SimController):
        def on_submit(self, sim, job_id):          # a workload job arrives
            if not self.is_target(job_id):
                return False                       # let it queue as usual
            view = sim.easy_view()                 # shadow, extra, free (EasyView)
            sub = sim.submit(view.extra, time_limit=..., run_time=math.inf)
            sim.set_timer(sim.now + 60, ("check", job_id))
            return True                            # claimed: the job never enters the queue

        def on_start(self, sim, job_id): ...       # after the pass that started it
        def on_end(self, sim, job_id): ...         # completed, killed at its limit or cancelled
        def on_timer(self, sim, key): ...
        def after_pass(self, sim): ...             # the queue and free nodes as the pass left them

During a callback the controller may call, on the :class:`~slurm_ext.sim.engine.Simulator`:

- ``sim.now`` (current time), ``sim.free``, ``sim.total_nodes``;
- ``sim.submit(nodes, time_limit, run_time=inf, at=None, malleable=None) -> job_id``: the job
  queues behind the current queue and is considered by a scheduling step at the same instant;
  ``run_time=inf`` makes a job that runs until cancelled or killed at its limit;
- ``sim.cancel(job_id)`` (pending or running; a running job frees its nodes at once and
  ``on_end`` is called for it before ``cancel`` returns);
- ``sim.set_timer(when, key) -> handle`` / ``sim.cancel_timer(handle)``;
- ``sim.easy_view() -> EasyView(now, free, shadow, extra, head, head_nodes)``, EASY's view of the
  queue head (``slurm_ext.sim.snapshot.easy_view(snapshot)`` gives the same from any Snapshot);
- ``sim.snapshot()``, ``sim.job_state(id)``, ``sim.job_times(id) -> (submit, start, end)``,
  ``sim.expected_end(id)``, ``sim.work_done(id)``;
- ``sim.needs_pass``: whether something freed nodes or left the queue since the last pass
  (``after_pass`` may stop offering slots then: another pass and ``after_pass`` follow);
- ``sim.stop()`` to end the run after the current instant.

Order at one instant: job ends (``on_end``), arrivals (``on_submit``), timers (``on_timer``),
then the scheduling step: a base pass (and the policy, if any), ``on_start`` for each job it
started, then ``after_pass``. Anything that frees nodes or removes a queued job during the step
(a cancel or shrink from ``on_start`` or ``after_pass``) leads to another pass at the same instant
before ``after_pass`` is called, so ``after_pass`` always sees the queue and free nodes as a pass
left them. ``on_start`` is not called for a job that an earlier callback of the step already
ended. Jobs submitted during the step arrive, and are scheduled, at the same instant too.

Starting from the baseline state at time t (EJB experiment 1)
-------------------------------------------------------------
The simulator is deterministic and its state is plain lists, so a baseline run can be paused
and cloned::

    base = Simulator(workload, "easy")
    for t, target in sorted(targets):
        base.advance(until=t)        # every event before t handled; arrivals at t not yet
        trial = base.copy()          # ~1 ms for a 28K-job trace; the baseline is untouched
        trial.attach(Ejb(target))    # on_submit(target) will fire at t
        trial.run()                  # or stop() once the target has finished
    baseline = base.run()            # finish the baseline itself

:func:`baseline_at` wraps the first two lines.
"""

from __future__ import annotations

from slurm_ext.sim.engine import SimHooks, Simulator


class SimController(SimHooks):
    """Base class with no-op callbacks (:class:`~slurm_ext.sim.engine.SimHooks`'s); override the
    ones you need.

    Named apart from the control service's :class:`slurm_ext.service.Controller`, which drives a
    live cluster: this one rides along a simulation, beside its base scheduler."""

    sim: Simulator | None = None

    def attach(self, sim: Simulator) -> None:
        """Called once by ``Simulator.attach``; remembers the simulator."""
        self.sim = sim


def baseline_at(base: Simulator, t: float) -> Simulator:
    """Advance ``base`` to just before ``t`` and return an independent copy of it."""
    base.advance(until=t)
    return base.copy()
