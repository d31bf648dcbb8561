"""The driver's two modes over its items: ``workloads`` (each item measured once) and
``curve`` (Vdbench's ``iorate=curve``: uncontrolled, then capped at each percentage)."""

from __future__ import annotations

from typing import Any

from assay.drivers.fio.cells import cells_of
from assay.drivers.fio.curve import curve_targets
from assay.drivers.fio.figures import PointFigures
from assay.drivers.fio.runner import Driver, FioFailed, MeasuredPoint, emit, say
from assay.drivers.fio.spec import Item
from assay.fio.workloads import with_rate
from assay.parsers.fio import ALL_CLIENTS


def run_workloads(driver: Driver, items: list[Item]) -> None:
    for item in items:
        try:
            driver.fill_if_needed(item)
            driver.measure(item, list(item.jobs), item.name, {"mode": "workloads"})
        except FioFailed as exc:
            driver.failures.append(str(exc))
            say(str(exc))


def run_curves(driver: Driver, items: list[Item]) -> None:
    for item in items:
        try:
            one_curve(driver, item)
        except FioFailed as exc:
            driver.failures.append(str(exc))
            say(str(exc))


def job_shares(driver: Driver, item: Item, top: MeasuredPoint) -> dict[str, float]:
    """Each job's part of the item's IOPS in the uncontrolled run (package docstring, "Jobs
    run together")."""
    everywhere = ALL_CLIENTS if driver.hosts else None
    done = {j.name: top.cells.get((j.name, everywhere)) for j in item.jobs}
    total = sum(f.iops for f in done.values() if f)
    if total <= 0:
        return {j.name: 1 / len(item.jobs) for j in item.jobs}
    return {name: (f.iops if f else 0.0) / total for name, f in done.items()}


def one_curve(driver: Driver, item: Item) -> None:
    driver.fill_if_needed(item)
    top = driver.measure(item, list(item.jobs), f"{item.name} max", {"mode": "max"})
    if top.total.iops <= 0:
        raise FioFailed(f"{item.name}: the uncontrolled run did no I/O; no curve")
    shares = job_shares(driver, item, top)
    spread: list[str | None] = [h.address for h in driver.hosts] or [None]
    points: list[tuple[int, PointFigures]] = []
    stopped = ""
    for pct, target in curve_targets(top.total.iops, driver.spec.curve):
        # each job at its part of the total, each host an equal part of the job's
        each = {j.name: target * shares[j.name] / len(spread) for j in item.jobs}
        caps = {(j.name, h): each[j.name] for j in item.jobs for h in spread}
        capped = [with_rate(j, each[j.name]) for j in item.jobs]
        extra = {"mode": "curve", "curve_pct": pct}
        # target_iops (in measure) is a float: derived from a measurement (the max run), so
        # repetitions of a curve whose max runs differ still fold together by curve_pct
        fig = driver.measure(
            item, capped, f"{item.name} {pct}%", extra, caps=caps, maxes=top.cells
        ).total
        points.append((pct, fig))
        bound = driver.spec.max_latency_ms
        if bound and fig.latency_s and fig.latency_s * 1e3 > bound:
            stopped = (
                f"stopped after {pct}%: mean latency {fig.latency_s * 1e3:.3f} ms "
                f"> max_latency_ms {bound:g}"
            )
            say(stopped)
            break
    curve_summary(driver, item, top.total, points, stopped)


def curve_summary(
    driver: Driver,
    item: Item,
    top: PointFigures,
    points: list[tuple[int, PointFigures]],
    stopped: str,
) -> None:
    total_cell = cells_of(item, [h.address for h in driver.hosts])[-1]
    job = item.job
    # what identifies the curve's points (the parser's params of each fio run)
    identity = total_cell.identity or {
        "job": job.name,
        "rw": job.rw,
        "bs": job.bs,
        "numjobs": job.numjobs,
        "iodepth": job.iodepth,
    }
    summary: dict[str, Any] = {
        "workload": item.name,
        "mode": "curve-summary",
        "curve_points": len(points),
        "max_iops": top.iops,
        **identity,
        **driver.base_params(item.jobs),
        "knee_method_requested": driver.spec.knee_method,
    }
    if top.latency_s:
        summary["max_latency_s"] = top.latency_s
    if stopped:
        summary["curve_stopped"] = stopped
    peak = max([f.iops for _, f in points] or [top.iops])
    emit({"metric": "storage.iops", "value": peak, "unit": "op/s", "params": summary})
