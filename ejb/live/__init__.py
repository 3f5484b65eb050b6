"""Elastic Job Bundling on a live Slurm cluster (paper 004, section 4, Figure 5).

- :mod:`ejb.live.manager` -- the EJB manager: EJB-sched (:mod:`ejb.scheduler`) on the real queue;
- :mod:`ejb.live.probe` -- its showbf probe; :mod:`ejb.live.jobs` -- the sbatch lines it writes;
- :mod:`ejb.live.records` -- what it knows of each application, kept on disk;
- :mod:`ejb.live.control` -- its port for users and pilots; :mod:`ejb.live.daemon` -- ``ejb manager``;
- the EJB worker is ``dmr-run`` in pilot mode (:mod:`dmr.pilot`), in every subjob's batch script;
- ``ejb-submit`` is :mod:`ejb.submit`.
"""
