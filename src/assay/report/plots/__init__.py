"""Plots of a run: :mod:`draw` (data → figure, styled once) and :mod:`of_run` (figures → the
charts a run gets). :func:`svg_of` gives a chart as an inline SVG string; :func:`write_plots`
writes every chart as SVG and PNG files (``--plots-dir``)."""

from __future__ import annotations

import warnings
from pathlib import Path

from assay.errors import AssayError
from assay.report.plots.draw import to_svg
from assay.report.plots.of_run import (
    Chart,
    charts_of,
    comparison_chart,
    history_chart,
)

__all__ = [
    "Chart",
    "charts_of",
    "comparison_chart",
    "history_chart",
    "svg_of",
    "write_plots",
]


def svg_of(chart: Chart) -> str:
    return to_svg(chart.make())


def write_plots(charts: list[Chart], where: Path) -> list[Path]:
    """``<key>.svg`` and ``<key>.png`` per chart in ``where`` (created); returns the paths."""
    import matplotlib

    from assay.report.plots.draw import STYLE, pyplot

    try:
        where.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AssayError(
            f"cannot create the plots directory {where}: {exc.strerror or exc}",
            hint="give a directory you can write to",
        ) from exc
    written = []
    for chart in charts:
        fig = chart.make()
        with matplotlib.rc_context(STYLE), warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # as in draw.to_svg
            fig.tight_layout()
            for ext in ("svg", "png"):
                path = where / f"{chart.key}.{ext}"
                meta = {"Date": None} if ext == "svg" else {"Software": None}
                fig.savefig(path, format=ext, metadata=meta)
                written.append(path)
        pyplot().close(fig)
    return written
