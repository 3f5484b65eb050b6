"""`slurm-ext demo` on the live cluster: :mod:`.resize` (the Slurm adapter resizes a job), :mod:`.malleable`
(Flexible Sleep under the DMR control service), :mod:`.cli` (the command)."""
