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
# The burn's series: one figure per interval (params interval, t_s and the telemetry's means
# over the interval), drawn against time, never a row of the table.
TRACE = "gpu.trace"


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
        if f.sample.metric == TRACE:
            continue
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


def _faults(errors: Figure) -> str:
    """What the comparison found, as the probe counted it: the card computes wrong results."""
    p = errors.sample.params
    mismatches, spots = p.get("mismatches"), p.get("spot_check_failures")
    if not isinstance(mismatches, int | float) or not isinstance(spots, int | float):
        return f"{errors.sample.value:.0f} errors: the card computes wrong results"
    of = p.get("compared_elements")
    out = f"{mismatches:.0f} of {of:,.0f} elements compared" if isinstance(of, int | float) else (
        f"{mismatches:.0f} elements")  # fmt: skip
    return (
        f"{out} differ from the first product, {spots:.0f} spot checks failed: "
        "the card computes wrong results"
    )


# nvmlClocksEventReasons (nvml.h): why the SM clock was below its maximum.
CLOCK_EVENT_REASONS = {
    0x1: "GPU idle",
    0x2: "application clocks setting",
    0x4: "SW power cap",
    0x8: "HW slowdown",
    0x10: "sync boost",
    0x20: "SW thermal slowdown",
    0x40: "HW thermal slowdown",
    0x80: "HW power brake",
    0x100: "display clock setting",
}
BURN_COLUMNS = ["GPU", "precision", "TFLOP/s mean", "min–max", "n", "errors", "verdict",
                "SM MHz", "mem MHz", "W mean (max)", "max °C"]  # fmt: skip


def reasons_words(mask: int) -> str:
    """'SW power cap' for 0x4; every bit set, named, in bit order."""
    named = [name for bit, name in CLOCK_EVENT_REASONS.items() if mask & bit]
    unknown = mask & ~sum(CLOCK_EVENT_REASONS)
    return ", ".join(named + ([f"0x{unknown:x}"] if unknown else []))


def _value_cells(f: Figure | None, unit: str) -> list[str]:
    """The figure in ``unit``, its min–max and n from the probe's stats (the measured intervals
    of a burn, the passes or copies of a memory figure)."""
    if f is None:
        return ["–", "–", "–"]
    s = f.sample.stats
    span = n = "–"
    if s is not None and s.min is not None and s.max is not None:
        span = f"{format_value(s.min, unit, 1)}–{format_value(s.max, unit, 1)}"
    if s is not None and s.n:
        n = str(s.n)
    return [format_value(f.sample.value, unit, 1), span, n]


def _burn_row(card: str, precision: str, by_metric: dict[str, Figure], notes: list[str]) -> list:
    flops, errors = by_metric.get("gpu.flops"), by_metric.get("gpu.errors")
    imported = _imported(by_metric) if flops is None and errors is None else None
    count = verdict = "–"
    if errors is not None:
        count = f"{errors.sample.value:.0f}"
        verdict = str(errors.sample.params.get("verdict", "?"))
        if verdict != "OK":
            notes.append(f"GPU {card} {precision}: FAULTY, {_faults(errors)}")
    if imported:
        count, verdict = imported[1], imported[2]
        if IMPORTED_NOTE not in notes:
            notes.append(IMPORTED_NOTE)
    return [
        card,
        precision,
        *_value_cells(flops or (imported and imported[0]) or None, "TFLOP/s"),
        count,
        verdict,
        _span(by_metric.get("gpu.sm_clock"), "MHz"),
        _span(by_metric.get("gpu.mem_clock"), "MHz"),
        _watts(by_metric.get("gpu.power")),
        _hottest(by_metric, imported),
    ]


def _reasons_notes(cards: list[tuple[tuple[Any, str], dict[str, Figure]]]) -> list[str]:
    """One line per card and reason mask: which precisions ran with their clocks held back."""
    held: dict[tuple[str, int], list[str]] = {}
    for (_gpu, precision), by_metric in cards:
        sm = by_metric.get("gpu.sm_clock")
        mask = sm.sample.params.get("clock_event_reasons") if sm else None
        if isinstance(mask, int | float) and mask:
            held.setdefault((_card(sm.sample.params), int(mask)), []).append(precision)
    return [
        f"GPU {card}: clocks held back by {reasons_words(mask)} (NVML clock-event reasons "
        f"0x{mask:x}) in {', '.join(precisions)}"
        for (card, mask), precisions in held.items()
    ]


def burn_table(figures: list[Figure]) -> Table | None:
    """One row per GPU and precision: TFLOP/s mean, min–max and n over the measured intervals,
    errors and verdict, SM and memory clock ranges, power mean (max), hottest temperature;
    why the clocks were held back, once per card."""
    cards = burn_cards(figures)
    if not cards:
        return None
    rows: list[list] = []
    notes: list[str] = []
    for (_gpu, precision), by_metric in cards:
        card = _card(next(iter(by_metric.values())).sample.params)
        rows.append(_burn_row(card, precision, by_metric, notes))
    return Table(
        key="gpu-burn",
        title="GPU sustained GEMM throughput (gpu_burn method: every product checked)",
        columns=BURN_COLUMNS,
        rows=rows,
        notes=notes + _reasons_notes(cards),
    )


def burn_traces(figures: list[Figure]) -> dict[tuple[Any, str], list[Figure]]:
    """The series of each (card, precision): its intervals in time order."""
    traces: dict[tuple[Any, str], list[Figure]] = {}
    for f in _of(figures, "gpu_burn"):
        if f.sample.metric == TRACE and isinstance(f.sample.params.get("t_s"), int | float):
            p = f.sample.params
            traces.setdefault((p.get("gpu"), str(p.get("precision"))), []).append(f)
    for series in traces.values():
        series.sort(key=lambda f: f.sample.params["t_s"])
    return traces


MEMORY_COLUMNS = ["GPU", "measurement", "GB/s", "min–max", "n", "of theoretical"]
MEMORY_NOTE = (
    "STREAM: the best pass (STREAM's rule), min–max and n over the passes after the first. "
    "Copies: the median copy, min–max and n over the timed copies."
)
TRANSFER_ORDER = {("gpu.h2d", "pinned"): 0, ("gpu.h2d", "pageable"): 1,
                  ("gpu.d2h", "pinned"): 2, ("gpu.d2h", "pageable"): 3}  # fmt: skip


def _stream_rows(mem: list[Figure], notes: list[str]) -> list[list[str]]:
    kernel_order = {k: i for i, k in enumerate(KERNEL_ORDER)}

    def key(f: Figure) -> tuple:
        return (str(f.sample.params.get("gpu")), kernel_order.get(f.sample.params.get("kernel"), 9))

    rows = []
    for f in sorted((f for f in mem if f.sample.metric == "gpu.bandwidth"), key=key):
        p = f.sample.params
        share = p.get("peak_fraction")
        shown = f"{100 * share:.1f}%" if isinstance(share, float) else "–"
        if isinstance(share, float) and share > 1:
            shown += " (above theoretical)"
            notes.append(f"GPU {_card(p)} {p.get('kernel')}: above the theoretical bandwidth")
        if p.get("validated") == "no":
            notes.append(f"GPU {_card(p)}: STREAM validation failed: the figures are not valid")
        rows.append([_card(p), f"STREAM {p.get('kernel')}", *_value_cells(f, "GB/s"), shown])
    return rows


def _transfer_rows(mem: list[Figure]) -> list[list[str]]:
    def key(f: Figure) -> tuple:
        p = f.sample.params
        order = TRANSFER_ORDER.get((f.sample.metric, str(p.get("memory"))), 9)
        return (str(p.get("gpu")), order, int(p.get("size") or 0))

    rows = []
    for f in sorted((f for f in mem if f.sample.metric in ("gpu.h2d", "gpu.d2h")), key=key):
        p = f.sample.params
        what = "host→device" if f.sample.metric == "gpu.h2d" else "device→host"
        size = human_bytes(int(p.get("size") or 0))
        rows.append([_card(p), f"{what} {p.get('memory')} {size}", *_value_cells(f, "GB/s"), "–"])
    return rows


def _peer_rows(mem: list[Figure]) -> list[list[str]]:
    def key(f: Figure) -> tuple:
        return (int(f.sample.params.get("src", 0)), int(f.sample.params.get("dst", 0)))

    rows = []
    for f in sorted((f for f in mem if f.sample.metric == "gpu.d2d"), key=key):
        p = f.sample.params
        peer = "peer" if p.get("peer_access") == "yes" else "via host"
        size = human_bytes(int(p.get("size") or 0))
        what = f"GPU {p.get('src')}→GPU {p.get('dst')} ({peer}) {size}"
        rows.append(["–", what, *_value_cells(f, "GB/s"), "–"])
    return rows


def memory_table(figures: list[Figure]) -> Table | None:
    """Device STREAM per kernel (best rate, share of theoretical), then host↔device copies
    (pinned, then pageable, by size), then GPU↔GPU copies; min–max and n beside each."""
    mem = _of(figures, "gpu_mem")
    if not mem:
        return None
    notes = [MEMORY_NOTE]
    rows = _stream_rows(mem, notes) + _transfer_rows(mem) + _peer_rows(mem)
    return Table(
        key="gpu-memory",
        title="GPU memory bandwidth (STREAM on device memory) and transfers",
        columns=MEMORY_COLUMNS,
        rows=rows,
        notes=notes,
    )


def gpu_figures(figures: Iterable[Figure]) -> list[Figure]:
    """The figures the GPU tables show (gpu-burn's and the GPU memory probe's)."""
    return [f for f in figures if f.sample.probe in ("gpu_burn", "gpu_mem")]


def gpu_tables(figures: list[Figure]) -> list[Table]:
    """The GPU tables a run has figures for (none for a run without GPU jobs)."""
    return [t for t in (burn_table(figures), memory_table(figures)) if t is not None]
