"""The Slurm scheduler: one allocation per run, a batch script, srun steps, Slurm's states."""
