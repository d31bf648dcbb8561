"""Reports of a run: terminal, Markdown, JSON, CSV."""

from assay.report.render import FORMATS, render

__all__ = ["FORMATS", "render"]
