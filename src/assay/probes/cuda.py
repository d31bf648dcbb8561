"""What the GPU probes share: the nvcc build for the GPUs present, why a job is skipped, and the
probe base class (``GpuProbe``) that drafts the one job and reads its JSON Lines.

The compute capabilities come from the plan context (``nvidia-smi --query-gpu=compute_cap``,
read by ``assay.system.gpu``), so the binary holds exactly the cards' SASS: ``-gencode
arch=compute_XY,code=sm_XY`` per distinct capability. They are part of the build flags and so
of the cache key: a node with other cards gets its own build.
"""

from __future__ import annotations

import re
from abc import abstractmethod
from pathlib import Path
from typing import Any, ClassVar

from assay.model import Build, Job, MpiInfo, Sample, System
from assay.probes.base import JobDraft, PlanContext, Probe, ProbeParams, parse_jsonl

# Compiled when no GPU is present, only to prove the sources build (the compile-only test):
# one architecture keeps it quick.
COMPILE_CHECK_CAPS: tuple[str, ...] = ("9.0",)
NVCC_FLAGS: tuple[str, ...] = ("-O3", "-std=c++17")


def gencode_flags(caps: list[str | None]) -> tuple[str, ...]:
    """``-gencode`` pairs for each distinct capability ("9.0" -> compute_90/sm_90).

    A card whose capability is unknown (a driver too old for the ``compute_cap`` query) makes
    nvcc query the cards itself (``-arch=native``, nvcc >= 11.5).
    """
    if not caps or any(c is None or not re.fullmatch(r"\d+\.\d+", str(c)) for c in caps):
        return ("-arch=native",)
    flags: list[str] = []
    for cap in sorted({str(c) for c in caps}, key=lambda c: tuple(map(int, c.split(".")))):
        xy = cap.replace(".", "")
        flags += ["-gencode", f"arch=compute_{xy},code=sm_{xy}"]
    return tuple(flags)


def cuda_build(source: str, caps: list[str | None], libs: tuple[str, ...] = ()) -> Build:
    return Build(source, "nvcc", (*NVCC_FLAGS, *gencode_flags(caps)), libs)


def gpu_caps(system: System) -> list[str | None]:
    return [g.get("compute_cap") for g in system.gpus]


def no_gpu_reason(system: System) -> str | None:
    """Why GPU jobs cannot run here, or None when there is a GPU."""
    if system.gpus:
        return None
    if "nvidia-smi" in system.tools:
        return "no GPU found (nvidia-smi lists none: driver not loaded?): GPU job skipped"
    return "no GPU found (nvidia-smi not found): GPU job skipped"


def select_gpus(system: System, wanted: list[int] | None) -> tuple[list[int], str | None]:
    """The device indices a job uses, and a skip reason when one asked for is not here."""
    present = [int(g.get("index", i)) for i, g in enumerate(system.gpus)]
    if wanted is None:
        return present, None
    missing = [g for g in wanted if g not in present]
    if missing:
        return wanted, f"GPU {', '.join(map(str, missing))} not found (found: {present})"
    return wanted, None


def on_gpus(devices: list[int]) -> str:
    """The end of a job label: ' on GPU 0,1', or nothing where there is none."""
    return f" on GPU {','.join(map(str, devices))}" if devices else ""


class GpuProbe(Probe):
    """A native CUDA probe: one job on the GPUs chosen (``params.gpus``, default all), its
    source built for the cards here; skipped without a GPU or with one asked for missing. A
    subclass says its options, label and what else the job records."""

    source: ClassVar[str]  # the .cu file in assay/native
    libs: ClassVar[tuple[str, ...]] = ()

    @abstractmethod
    def probe_argv(self, params: Any) -> list[str]:
        """The binary's own options (``--gpus`` is added here, when the params chose)."""

    @abstractmethod
    def label(self, params: Any) -> str:
        """The job label, before `` on GPU ...``."""

    def job_params(self, params: Any, devices: list[int]) -> dict[str, Any]:
        return {"gpus": devices}

    def skip(self, params: Any, devices: list[int]) -> str | None:
        """Why this probe cannot run on these (present) devices, beyond having none."""
        return None

    def timeout(self, params: Any) -> float | None:
        return None

    def drafts(
        self, params: ProbeParams, ctx: PlanContext, *, mpis: list[MpiInfo], ranks: int | None
    ) -> list[JobDraft]:
        assert isinstance(params, self.Params)
        p: Any = params
        system = ctx.system
        devices, missing = select_gpus(system, p.gpus)
        argv = ["{exe}", *self.probe_argv(p)]
        # Only when chosen: without --gpus the binary takes every GPU it sees.
        if p.gpus is not None:
            argv += ["--gpus", ",".join(map(str, devices))]
        return [
            JobDraft(
                argv=argv,
                params=self.job_params(p, devices),
                build=cuda_build(self.source, gpu_caps(system), self.libs),
                label=self.label(p) + on_gpus(devices),
                timeout=self.timeout(p),
                skip_reason=no_gpu_reason(system) or missing or self.skip(p, devices),
            )
        ]

    def parse(self, stdout: str, job: Job, *, job_dir: Path | None = None) -> list[Sample]:
        # The probe names each GPU itself; the job's list of GPUs would only repeat all of
        # them on every sample.
        base = {k: v for k, v in job.params.items() if k != "gpus"}
        return parse_jsonl(stdout, self.name, base)
