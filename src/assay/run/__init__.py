"""Carrying out the flow (the edges): a planned run's jobs built, launched, parsed and stored,
here or inside an allocation; imports; the checks before a run."""
