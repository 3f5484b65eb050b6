"""Slurm-side of the toolkit: the policies, the Slurm adapter, the control service and the simulator."""

from slurm_ext import compiled

compiled.use()  # an editable install's compiled policies, while they match the sources
