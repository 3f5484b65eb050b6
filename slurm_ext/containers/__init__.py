"""The dockerized Slurm test cluster: images, compose file, life cycle."""
