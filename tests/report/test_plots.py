"""Plot functions on synthetic data: each returns one SVG, styled once, data as text only."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from assay.report.plots import draw
from assay.report.plots.draw import to_svg

HOSTILE = "<script>alert(1)</script>| $x$ --> & \"'"

SIZES = [1, 8, 64, 512, 4096, 32768, 262144]


def _lines(scale: float) -> list[draw.Line]:
    return [
        draw.Line(
            name,
            SIZES,
            [scale * (1 + i + s / 1e4) for s in SIZES],
            [scale * (0.9 + i + s / 1e4) for s in SIZES],
            [scale * (1.2 + i + s / 1e4) for s in SIZES],
        )
        for i, name in enumerate(["OpenMPI 4.1", "MPICH 4.0", HOSTILE])
    ]


CASES = {
    "gpu-precision": lambda: draw.bars(
        [
            draw.Bar("FP64", 9.7e12, group="H100"),
            draw.Bar("FP32", 19.5e12, group="H100"),
            draw.Bar(HOSTILE, 60e12, group=HOSTILE),
        ],
        "GPU throughput per precision",
        "Tflop/s",
        1e-12,
        {"FP64 peak": 34e12},
    ),
    "panels": lambda: draw.panels(
        [
            ("SM clock (MHz)", [draw.Line("GPU 0 fp64", [0, 1, 2, 3], [1980, 1755, 1710, 1700])]),
            (HOSTILE, [draw.Line(HOSTILE, [0, 1, 2, 3], [300, 690, 700, 700])]),
        ],
        "GPU clocks and power",
    ),
    "latency": lambda: draw.latency_vs_size(_lines(1e-6), HOSTILE),
    "bandwidth": lambda: draw.bandwidth_vs_size(_lines(1e9), {"OpenMPI 4.1": 12e9, HOSTILE: 9e9}),
    "bars": lambda: draw.bars(
        [draw.Bar("L3 0", 30e9, group="L3"), draw.Bar(HOSTILE, 20e9, True, "L3", note="x")],
        "STREAM",
        "GB/s",
        1e-9,
        {"node Triad": 50e9},
    ),
    "ladder": lambda: draw.latency_ladder(
        [draw.Line("cpu 0", [4096, 65536, 2**20, 2**24], [1e-9, 4e-9, 12e-9, 90e-9])],
        {"L1": 32768, "L2": 2**20},
    ),
    "curves": lambda: draw.response_curves(
        [
            draw.Curve(
                "near", [1e3, 5e3, 9e3], [1e-4, 2e-4, 9e-4], [3e-4, None, 2e-3], (5e3, 2e-4)
            ),
            draw.Curve(HOSTILE, [1e3, 4e3], [3e-4, 6e-4]),
        ]
    ),
    "heatmap": lambda: draw.heatmap(
        draw.Heatmap(
            ["n1", "n2", HOSTILE],
            [[None, 1.1, 1.2], [1.1, None, 3.0], [1.2, 3.0, None]],
            "µs",
            {(1, 2)},
        )
    ),
    "history": lambda: draw.history(
        draw.History(
            [f"run{i}" for i in range(8)], [10, 10.2, 9.9, 10.1, 8, 8.1, 7.9, 8], [4], [10.05, 8.0]
        ),
        "memory.triad",
        "GB/s",
    ),
    "comparison": lambda: draw.comparison(
        [
            draw.VerdictBar("a", 1.1, "better"),
            draw.VerdictBar(HOSTILE, 0.8, "worse"),
            draw.VerdictBar("c", 1.0, "not significant"),
        ]
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_each_plot_is_one_well_formed_svg_with_no_live_markup(name: str):
    svg = to_svg(CASES[name]())
    assert svg.startswith("<svg")
    root = ET.fromstring(svg)  # well formed: a label cannot break the document
    assert root.tag.endswith("svg")
    assert "<script" not in svg and 'href="http' not in svg
    # text is drawn as paths: no font is fetched or needed
    assert "@font-face" not in svg and "<text" not in svg


def test_the_same_data_give_the_same_bytes():
    assert to_svg(CASES["latency"]()) == to_svg(CASES["latency"]())


def test_the_band_and_asymptote_are_drawn():
    """A line with lo/hi gets a filled band; each β a dashed horizontal line."""
    fig = CASES["bandwidth"]()
    ax = fig.axes[0]
    assert len(ax.collections) == 3  # one band per series
    dashed = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert len(dashed) == 2
    assert dashed[0].get_ydata()[0] == pytest.approx(12e3)  # MB/s
    to_svg(fig)


def test_a_flagged_bar_has_the_flag_colour():
    fig = CASES["bars"]()
    from matplotlib.colors import to_hex

    colours = [to_hex(p.get_facecolor()) for p in fig.axes[0].patches[:2]]
    assert colours[1] == draw.FLAG_COLOUR.lower() and colours[0] != colours[1]
    to_svg(fig)


def test_a_dollar_in_a_label_is_text_not_mathtext():
    assert draw.text("$x$") == r"\$x\$"
    to_svg(draw.latency_vs_size([draw.Line("$\\frac{", [1, 2], [1e-6, 2e-6])]))


def test_a_non_utf8_or_control_label_is_drawn_as_its_escape():
    """issue 28: a non-UTF-8 label (a lone surrogate) made FreeType fail: the HTML report and
    the comparison had no page at all."""
    label = "lab\udcff\x1b[2J"
    assert draw.text(label) == "lab\\udcff\\x1b[2J"
    svg = to_svg(draw.latency_vs_size([draw.Line(label, [1, 2], [1e-6, 2e-6])], title=label))
    ET.fromstring(svg.encode())
    assert "\x1b" not in svg and "lab\\udcff" in svg
    to_svg(draw.bars([draw.Bar(label, 1.0, group=label, note=label)], label, label))


def test_assay_help_does_not_import_matplotlib():
    code = "import sys, assay.cli; assert 'matplotlib' not in sys.modules, 'imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def _figures(samples):
    from assay.analysis.derived.derive import derive
    from assay.analysis.statistics.stats import fold_repetitions

    figures = fold_repetitions(samples)
    return figures, derive(figures)


def test_a_slow_domain_is_a_flagged_bar_and_the_node_triad_a_reference():
    from assay.model import Sample
    from assay.report.plots.of_run import charts_of, stream_domain_bars

    samples = [Sample.make("stream", "memory.triad", 100e9, {"scope": "node", "threads": 8})]
    for d, v in enumerate([30e9, 31e9, 30.5e9, 20e9]):
        samples.append(Sample.make("stream", "memory.triad", v, {"scope": "l3", "domain": d}))
    figures, derived = _figures(samples)
    bars = stream_domain_bars(derived.domains)
    assert [b.flagged for b in bars] == [False, False, False, True]
    charts = {c.key: c for c in charts_of(figures, derived)}
    fig = charts["plot-stream-domains"].make()
    refs = [ln for ln in fig.axes[0].get_lines() if ln.get_linestyle() == "--"]
    assert refs and refs[0].get_ydata()[0] == pytest.approx(100)  # GB/s
    to_svg(fig)


def test_the_plot_flags_the_domains_the_table_flags():
    """One derivation for the table and the plot: a domain measured three times whose runs
    the fold cannot group (their ``min_time`` differs) is judged by its median in both; the
    plot once took whichever run came last (30.5 GB/s, not flagged) while the table flagged it.
    """
    from assay.model import Sample
    from assay.report.memory import domain_tables
    from assay.report.plots.of_run import stream_domain_bars

    samples = []
    for d, v in enumerate([30e9, 31e9, 30.5e9]):
        samples.append(Sample.make("stream", "memory.triad", v, {"scope": "l3", "domain": d}))
    for rep, v in enumerate([20e9, 21e9, 30.5e9], start=1):
        params = {"scope": "l3", "domain": 3, "min_time": 0.1 * rep, "repetition": rep}
        samples.append(Sample.make("stream", "memory.triad", v, params))
    figures, derived = _figures(samples)
    (table,) = domain_tables(figures, domains=derived.domains)
    in_table = [row[1] for row in table.rows if row[-1]]
    in_plot = [b.label.split()[-1] for b in stream_domain_bars(derived.domains) if b.flagged]
    assert in_table == in_plot == ["3"]


def test_one_latency_line_per_mpi_with_the_iteration_band():
    from assay.model import Sample, Stats
    from assay.report.plots.of_run import charts_of

    samples = [
        Sample.make(
            "p2p",
            "p2p.latency",
            1e-6 * (i + 1) * (1 + s / 64),
            {"size": s, "mpi": mpi, "iterations": 100},
            Stats(n=100, min=0.5e-6, max=9e-6),
        )
        for i, mpi in enumerate(["OpenMPI", "MPICH"])
        for s in (0, 1, 8, 64)
    ]
    figures, derived = _figures(samples)
    chart = next(c for c in charts_of(figures, derived) if c.key == "plot-p2p-latency")
    assert "OpenMPI 100 it." in chart.title  # the count behind the points
    ax = chart.make().axes[0]
    assert [len(ln.get_xdata()) for ln in ax.get_lines()] == [3, 3]  # size 0: no place on log x
    assert len(ax.collections) == 2  # a min–max band each


def test_a_history_with_a_real_change_point_draws_it():
    from assay.analysis.statistics.changepoint import change_points
    from assay.report.plots import history_chart

    values = [10.0, 10.1, 9.9, 10.05, 9.95, 10.0, 8.0, 8.1, 7.9, 8.05, 7.95, 8.0]
    changes = change_points(values, "higher")
    assert [c.index for c in changes] == [6]
    runs = [f"run{i}" for i in range(len(values))]
    fig = history_chart("k", "memory.triad", "GB/s", runs, values, changes, "s0-").make()
    ax = fig.axes[0]
    vlines = [ln for ln in ax.get_lines() if ln.get_linestyle() == "--"]
    assert vlines and vlines[0].get_xdata()[0] == pytest.approx(5.5)  # between run5 and run6
    to_svg(fig)
