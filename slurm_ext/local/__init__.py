"""A real multi-node Slurm cluster on one host: munged, MariaDB, slurmdbd, slurmctld, N x slurmd.

Used by the tests, the demo and the container image (docker/ runs the same code).
"""
