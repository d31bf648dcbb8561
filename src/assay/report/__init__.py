"""Reports of a run: terminal, Markdown, JSON, CSV (``assay.report.render``).

Nothing is imported here: a command that needs one of this package's modules (a table, the
check's output) must not pay for the whole renderer and its plots on its way."""
