from slurm_ext.cli import app

app()
