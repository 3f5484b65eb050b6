"""The live Slurm backend: reads through ``squeue/sinfo --json``, writes through the Slurm commands."""

from slurm_ext.slurm.adapter import SlurmCluster

__all__ = ["SlurmCluster"]
