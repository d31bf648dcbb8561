"""Programs a job runs when one command is not enough.

A probe's job is one command line. Some measurements need a small program around the tool:
``pair`` starts a perftest server and its client and prints both outputs; ``fio`` (the fio
driver) writes job files, fills the target, runs fio once per workload and curve point, and
prints the samples. Each runs as ``python -m assay.drivers.NAME`` in the job's directory; it
knows the tool and the pure model it drives (``assay.fio``), never the store or the report.
"""
