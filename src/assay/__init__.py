"""assay — measure HPC nodes and clusters the way vendors and HPC centres publish their numbers."""

__version__ = "0.1.0"
