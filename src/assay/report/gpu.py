"""The GPU tables: sustained GEMM throughput per card and precision with the error verdict and
what the card ran at (clocks, power, temperature), and the GPU memory and transfer figures.

Built from the figures of the ``gpu_burn`` and ``gpu_mem`` probes alone; the lead's report
build calls :func:`gpu_tables` and appends what it returns.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from assay.analysis.statistics.stats import Figure
from assay.report.table import Table
from assay.units import format_value, human_bytes

PRECISION_ORDER = ("fp64", "fp32", "tf32", "fp16", "bf16")
KERNEL_ORDER = ("copy", "scale", "add", "triad")
TELEMETRY = ("gpu.sm_clock", "gpu.mem_clock", "gpu.power", "gpu.temperature")


def _card(params: dict[str, Any]) -> str:
    name = params.get("name") or params.get("gpu_name")  # gpu_name: an imported gpu_burn file
    return f"{params.get('gpu', '?')}: {name}" if name else str(params.get("gpu", "?"))


def _span(figure: Figure | None, unit: str, digits: int = 0) -> str:
    """'min–max' of a sampled quantity (its mean when only one sample), else '–'."""
    if figure is None:
        return "–"
    stats = figure.sample.stats
    if stats is None or stats.min is None or stats.max is None or stats.min == stats.max:
        return format_value(figure.sample.value, unit, digits)
    return f"{format_value(stats.min, unit, digits)}–{format_value(stats.max, unit, digits)}"


def _of(figures: Iterable[Figure], probe: str) -> list[Figure]:
    return [f for f in figures if f.sample.probe == probe]


def burn_cards(figures: list[Figure]) -> list[tuple[tuple[Any, str], dict[str, Figure]]]:
    """The gpu_burn figures by (card, precision), each as {metric: figure}: cards in order,
    each card's precisions in ``PRECISION_ORDER`` (the table's rows, the chart's bars)."""
    keyed: dict[tuple[Any, str], dict[str, Figure]] = {}
    for f in _of(figures, "gpu_burn"):
        p = f.sample.params
        keyed.setdefault((p.get("gpu"), str(p.get("precision"))), {})[f.sample.metric] = f
    order = {p: i for i, p in enumerate(PRECISION_ORDER)}
    return sorted(keyed.items(), key=lambda kv: (str(kv[0][0]), order.get(kv[0][1], 99)))


IMPORTED_NOTE = (
    "Imported gpu_burn output (gpu.sgemm / gpu.dgemm): the TFLOP/s column holds the median of the "
    "intervals gpu_burn printed, its first (start-up) interval left out; min–max over those "
    "intervals; errors and verdict as gpu_burn printed them (a FAULTY GPU gives no rate)."
)


def _imported(by_metric: dict[str, Figure]) -> tuple[Figure, str, str] | None:
    """An imported gpu_burn figure (``assay import --format gpu-burn``: ``gpu.sgemm`` or
    ``gpu.dgemm`` with its error count and verdict in its params): (figure, errors, verdict)."""
    fig = by_metric.get("gpu.sgemm") or by_metric.get("gpu.dgemm")
    if fig is None:
        return None
    p = fig.sample.params
    return fig, str(p.get("errors", "–")), str(p.get("verdict", "–"))


def _watts(power: Figure | None) -> str:
    """'mean (max)' of the power samples, else '–'."""
    if power is None:
        return "–"
    pmax = power.sample.stats.max if power.sample.stats else None
    watts = format_value(power.sample.value, "W", 0)
    return watts + (f" ({format_value(pmax, 'W', 0)})" if pmax is not None else "")


def _hottest(by_metric: dict[str, Figure], imported: tuple[Figure, str, str] | None) -> str:
    """The hottest temperature: the sampled one, or what an imported gpu_burn file printed."""
    temp = by_metric.get("gpu.temperature")
    if temp is not None:
        hottest = temp.sample.stats.max if temp.sample.stats else None
        return format_value(hottest if hottest is not None else temp.sample.value, "C", 0)
    if imported and imported[0].sample.params.get("temp_max_c") is not None:
        return format_value(imported[0].sample.params["temp_max_c"], "C", 0)
    return "–"


def burn_table(figures: list[Figure]) -> Table | None:
    """One row per GPU and precision: TFLOP/s mean (min–max over the measured intervals),
    errors and verdict, SM and memory clock ranges, power mean (max), hottest temperature."""
    cards = burn_cards(figures)
    if not cards:
        return None
    rows, notes = [], []
    for (_gpu, precision), by_metric in cards:
        flops, errors = by_metric.get("gpu.flops"), by_metric.get("gpu.errors")
        imported = _imported(by_metric) if flops is None and errors is None else None
        flops = flops or (imported and imported[0])
        any_fig = flops or errors or next(iter(by_metric.values()))
        card = _card(any_fig.sample.params)
        rate = mean = span = "–"
        if flops is not None:
            s = flops.sample.stats
            mean = format_value(flops.sample.value, "TFLOP/s", 1)
            if s is not None and s.min is not None and s.max is not None:
                span = f"{format_value(s.min, 'TFLOP/s', 1)}–{format_value(s.max, 'TFLOP/s', 1)}"
            rate = mean
        verdict = "–"
        count = "–"
        if errors is not None:
            count = f"{errors.sample.value:.0f}"
            verdict = str(errors.sample.params.get("verdict", "?"))
            if verdict != "OK":
                notes.append(
                    f"GPU {card} {precision}: FAULTY, {count} products or elements differ from "
                    "the reference: the card computes wrong results"
                )
        if imported:
            count, verdict = imported[1], imported[2]
            if IMPORTED_NOTE not in notes:
                notes.append(IMPORTED_NOTE)
        watts, tmax = _watts(by_metric.get("gpu.power")), _hottest(by_metric, imported)
        sm = by_metric.get("gpu.sm_clock")
        reasons = sm.sample.params.get("clock_event_reasons") if sm else None
        if reasons:
            notes.append(
                f"GPU {card} {precision}: NVML clock-event reasons 0x{int(reasons):x} "
                "(power cap, thermal or other slowdown: see nvmlClocksEventReasons)"
            )
        rows.append(
            [
                card,
                precision,
                rate,
                span,
                count,
                verdict,
                _span(sm, "MHz"),
                _span(by_metric.get("gpu.mem_clock"), "MHz"),
                watts,
                tmax,
            ]
        )
    return Table(
        key="gpu-burn",
        title="GPU sustained GEMM throughput (gpu_burn method: every product checked)",
        columns=[
            "GPU",
            "precision",
            "TFLOP/s mean",
            "min–max",
            "errors",
            "verdict",
            "SM MHz",
            "mem MHz",
            "W mean (max)",
            "max °C",
        ],
        rows=rows,
        notes=notes,
    )


def memory_table(figures: list[Figure]) -> Table | None:
    """Device STREAM per kernel (best rate, share of theoretical), then transfers."""
    mem = _of(figures, "gpu_mem")
    if not mem:
        return None
    rows, notes = [], []
    kernel_order = {k: i for i, k in enumerate(KERNEL_ORDER)}

    def stream_key(f: Figure) -> tuple:
        return (str(f.sample.params.get("gpu")), kernel_order.get(f.sample.params.get("kernel"), 9))

    for f in sorted((f for f in mem if f.sample.metric == "gpu.bandwidth"), key=stream_key):
        p = f.sample.params
        share = p.get("peak_fraction")
        shown = f"{100 * share:.1f}%" if isinstance(share, float) else "–"
        if isinstance(share, float) and share > 1:
            shown += " (above theoretical)"
            notes.append(f"GPU {_card(p)} {p.get('kernel')}: above the theoretical bandwidth")
        if p.get("validated") == "no":
            notes.append(f"GPU {_card(p)}: STREAM validation failed: the figures are not valid")
        rows.append(
            [_card(p), f"STREAM {p.get('kernel')}", format_value(f.sample.value, "GB/s", 1), shown]
        )
    transfers = [f for f in mem if f.sample.metric in ("gpu.h2d", "gpu.d2h")]
    for f in sorted(
        transfers,
        key=lambda f: (
            str(f.sample.params.get("gpu")),
            f.sample.metric,
            str(f.sample.params.get("memory")),
            int(f.sample.params.get("size") or 0),
        ),
    ):
        p = f.sample.params
        what = "host→device" if f.sample.metric == "gpu.h2d" else "device→host"
        size = human_bytes(int(p.get("size") or 0))
        rows.append(
            [
                _card(p),
                f"{what} {p.get('memory')} {size}",
                format_value(f.sample.value, "GB/s", 1),
                "–",
            ]
        )
    for f in sorted(
        (f for f in mem if f.sample.metric == "gpu.d2d"),
        key=lambda f: (int(f.sample.params.get("src", 0)), int(f.sample.params.get("dst", 0))),
    ):
        p = f.sample.params
        peer = "peer" if p.get("peer_access") == "yes" else "via host"
        what = (
            f"GPU {p.get('src')}→GPU {p.get('dst')} ({peer}) {human_bytes(int(p.get('size') or 0))}"
        )
        rows.append(["–", what, format_value(f.sample.value, "GB/s", 1), "–"])
    return Table(
        key="gpu-memory",
        title="GPU memory bandwidth (STREAM on device memory) and transfers",
        columns=["GPU", "measurement", "GB/s", "of theoretical"],
        rows=rows,
        notes=notes,
    )


def gpu_figures(figures: Iterable[Figure]) -> list[Figure]:
    """The figures the GPU tables show (gpu-burn's and the GPU memory probe's)."""
    return [f for f in figures if f.sample.probe in ("gpu_burn", "gpu_mem")]


def gpu_tables(figures: list[Figure]) -> list[Table]:
    """The GPU tables a run has figures for (none for a run without GPU jobs)."""
    return [t for t in (burn_table(figures), memory_table(figures)) if t is not None]
