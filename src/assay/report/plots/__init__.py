"""Plots of a run: :mod:`draw` (data → figure, styled once) and :mod:`of_run` (figures → the
charts a run gets). :func:`svg_of` gives a chart as an inline SVG string; :func:`write_plots`
writes every chart as SVG and PNG files (``--plots-dir``)."""

from __future__ import annotations

import hashlib
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
from assay.textutil import slugify

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


# A file name's stem at most this long (file systems allow 255 bytes, with room for ".svg").
STEM_MAX = 120


def file_stems(keys: list[str]) -> list[str]:
    """A file name for each chart key, safe whatever a label or benchmark put in it: letters,
    digits, ".", "_" and "-" kept, every other run of characters one "-" (an IMB benchmark
    "All/toall" is no directory); long keys cut and told apart by a hash; two keys that make one
    name get "-2", "-3" ... A key that was already safe keeps its name."""
    stems, seen = [], set()
    for key in keys:
        stem = slugify(key, lower=False, keep="._-", empty="plot")
        if len(stem) > STEM_MAX:
            digest = hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:10]
            stem = f"{stem[: STEM_MAX - 11]}-{digest}"
        unique, n = stem, 1
        while unique in seen:
            n += 1
            unique = f"{stem}-{n}"
        seen.add(unique)
        stems.append(unique)
    return stems


def write_plots(charts: list[Chart], where: Path) -> list[Path]:
    """``<key>.svg`` and ``<key>.png`` per chart in ``where`` (created), the key made a safe
    file name (:func:`file_stems`); returns the paths."""
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
    for chart, stem in zip(charts, file_stems([c.key for c in charts]), strict=True):
        fig = chart.make()
        path = where / stem
        try:
            with matplotlib.rc_context(STYLE), warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # as in draw.to_svg
                fig.tight_layout()
                for ext in ("svg", "png"):
                    path = where / f"{stem}.{ext}"
                    meta = {"Date": None} if ext == "svg" else {"Software": None}
                    fig.savefig(path, format=ext, metadata=meta)
                    written.append(path)
        except OSError as exc:
            raise AssayError(
                f"cannot write the plot {path}: {exc.strerror or exc}",
                hint="give --plots-dir a directory you can write to",
            ) from exc
        finally:
            pyplot().close(fig)
    return written
