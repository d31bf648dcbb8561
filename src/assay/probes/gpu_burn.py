"""GPU sustained GEMM throughput per precision with gpu_burn's error check (native/gpuburn.cu).

Every selected GPU burns at once, precision after precision (fp64, fp32, tf32, fp16, bf16),
for ``duration`` seconds each; each product is compared with the first, and the card is OK
only when none differs. Samples per GPU and precision: ``gpu.flops`` (mean over the measured
intervals, min/max in stats), ``gpu.errors`` (params ``verdict`` OK/FAULTY), the NVML
telemetry ``gpu.sm_clock``, ``gpu.mem_clock``, ``gpu.power``, ``gpu.temperature``, and the
series ``gpu.trace`` (each interval's rate with the telemetry's means over it, warm-up
intervals too). A FAULTY card exits 3: the job fails with the probe's message and its samples
are kept. ``corrupt_for_test`` flips one bit of one product per precision: the check must
catch it (docs/gpu.md; caught on an H100, tests/probes/test_gpu_h100.py).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from assay.model import Job
from assay.probes.base import ProbeParams
from assay.probes.cuda import GpuProbe

GpuPrecision = Literal["fp64", "fp32", "tf32", "fp16", "bf16"]
ALL_PRECISIONS: list[GpuPrecision] = ["fp64", "fp32", "tf32", "fp16", "bf16"]
# Per precision beyond its duration: allocation, reference product, calibration, checks.
SETUP_ALLOWANCE_S = 60.0


class GpuBurnParams(ProbeParams):
    duration: float = Field(default=30.0, gt=0, le=86400, description="seconds per precision")
    precisions: list[GpuPrecision] = Field(default_factory=lambda: list(ALL_PRECISIONS))
    interval: float = Field(default=1.0, gt=0, le=3600, description="seconds per interval")
    warmup: int = Field(default=2, ge=0, description="first intervals not counted")
    mem_fraction: float = Field(default=0.9, gt=0, lt=1, description="of free GPU memory")
    n: int = Field(default=8192, ge=64, le=65536, description="matrix order")
    gpus: list[int] | None = Field(default=None, description="device indices; default all")
    corrupt_for_test: bool = Field(
        default=False, description="flip one bit of one product: proves the check catches it"
    )


class GpuBurnProbe(GpuProbe):
    name = "gpu_burn"
    summary = "GPU: sustained GEMM TFLOP/s per precision, error check (gpu_burn), clocks/power"
    Params = GpuBurnParams
    default_timeout = 900.0
    source = "gpuburn.cu"
    libs = ("-lcublas", "-ldl")

    def expected_seconds(self, job: Job) -> float | None:
        # ``duration`` per precision, one precision after the other (setup not counted)
        precisions = job.argv[job.argv.index("--precisions") + 1].split(",")
        return float(job.params["duration_s"]) * len(precisions)

    def probe_argv(self, params: GpuBurnParams) -> list[str]:
        argv = [
            "--duration", repr(params.duration),
            "--precisions", ",".join(_precisions(params)),
            "--interval", repr(params.interval),
            "--warmup", str(params.warmup),
            "--mem-fraction", repr(params.mem_fraction),
            "--n", str(params.n),
        ]  # fmt: skip
        if params.corrupt_for_test:
            argv.append("--corrupt-for-test")
        return argv

    def label(self, params: GpuBurnParams) -> str:
        return f"{','.join(_precisions(params))} {params.duration:g} s"

    def job_params(self, params: GpuBurnParams, devices: list[int]) -> dict[str, Any]:
        return {"duration_s": params.duration, "n": params.n, "gpus": devices}

    def timeout(self, params: GpuBurnParams) -> float:
        return len(_precisions(params)) * (params.duration + SETUP_ALLOWANCE_S) + 120


def _precisions(params: GpuBurnParams) -> list[str]:
    return list(dict.fromkeys(params.precisions))
