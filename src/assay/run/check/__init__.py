"""``assay check``'s orchestration: refuse what cannot work, measure (here or in an
allocation, as ``assay run`` does), judge, re-measure each FAIL, then drain or resume nodes
through the scheduler's node administration. The command (``assay.cli.check``) parses its
options, hands a :class:`~assay.run.check.surface.Surface` for what is said and shown while it
runs, and prints the verdicts.

    flow      the whole check: refusals, the first run, the retest, the node actions
    measure   a check's runs (here or in one allocation) read back as the check's input
    nodes     what to drain or resume (pure), carried out; the hold of drained nodes
    surface   what the check asks of the command that runs it (messages, the store, a run)
"""
