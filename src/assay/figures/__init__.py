"""A run's figures: its stored samples folded (and cached beside the run) for every reader."""
