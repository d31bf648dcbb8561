"""Independent PyTorch reference numbers for assay's own GPU probes (one GPU).

What it measures (one JSON object per line on stdout):
  gemm  square n x n matmul (default n=8192) through torch.matmul -> cuBLAS/cublasLt,
        in fp64, fp32 (IEEE, TF32 off), tf32, fp16 and bf16; flop = 2 n^3 per product,
        each product timed alone with a pair of CUDA events; median/min/max flop/s.
  copy  device-to-device: dst.copy_(src) of a 2 GiB float64 buffer (STREAM "copy"
        bytes: 2 x size) and triad a = b + 3 c via torch.add(b, c, alpha=3, out=a) on
        2^28 float64 elements (STREAM bytes: 3 x 8 x N); best and median B/s.
  h2d   host<->device copies of 1 MiB, 64 MiB and 1 GiB uint8 tensors from pinned and
        pageable host memory, dst.copy_(src) (blocking), median/min/max B/s.

Why it is a reference: none of assay's code is on this path.  The work is done by
PyTorch's own cuBLAS/cublasLt calls, its copy kernels and cudaMemcpy paths, so a
disagreement with assay's probe points at one of the two implementations.

Run (on the GPU machine, PyTorch venv):
  /opt/torch/.venv/bin/python bench/gpu/torch_ref.py              # everything, < ~30 s
  /opt/torch/.venv/bin/python bench/gpu/torch_ref.py --only gemm --n 4096 --gemm-reps 10
"""

import argparse
import json
import statistics
import sys

import torch

GEMM_DTYPES = {
    "fp64": (torch.float64, False),
    "fp32": (torch.float32, False),
    "tf32": (torch.float32, True),
    "fp16": (torch.float16, False),
    "bf16": (torch.bfloat16, False),
}
STREAM_N = 2**28  # float64 elements: 2 GiB per array
HOST_SIZES = (2**20, 64 * 2**20, 2**30)
CONTEXT = {}  # device/torch description added to every line (filled in by main)


def emit(what, samples, unit, **params):
    """Print one result line; samples are rates (higher is better)."""
    rec = {
        "what": what,
        "value": statistics.median(samples),
        "unit": unit,
        "n": len(samples),
        "median": statistics.median(samples),
        "min": min(samples),
        "max": max(samples),
    }
    rec.update(params)
    rec.update(CONTEXT)
    print(json.dumps(rec), flush=True)


def time_ms(fn, warmup, reps):
    """Run fn warmup times untimed, then reps times, each between two CUDA events."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    out = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        out.append(start.elapsed_time(end))  # milliseconds
    return out


def set_tf32(enabled):
    """Select TF32 for fp32 matmul; new API where present (legacy one warns or errors if mixed)."""
    matmul = torch.backends.cuda.matmul
    if hasattr(matmul, "fp32_precision"):
        matmul.fp32_precision = "tf32" if enabled else "ieee"
        return "fp32_precision=" + matmul.fp32_precision
    matmul.allow_tf32 = enabled
    return "allow_tf32=" + str(enabled)


def gemm_case(name, dtype, tf32, n, reps):
    setting = set_tf32(tf32)
    a = torch.rand(n, n, device="cuda", dtype=dtype)
    b = torch.rand(n, n, device="cuda", dtype=dtype)
    c = torch.empty(n, n, device="cuda", dtype=dtype)
    ms = time_ms(lambda: torch.matmul(a, b, out=c), warmup=3, reps=reps)
    rates = [2.0 * n**3 / (t * 1e-3) for t in ms]
    emit(
        f"gemm_{name}",
        rates,
        "flop/s",
        precision=name,
        size=n,
        dtype=str(dtype),
        tf32_setting=setting,
        warmup=3,
    )


def run_gemm(n, reps):
    for name, (dtype, tf32) in GEMM_DTYPES.items():
        gemm_case(name, dtype, tf32, n, reps)
        torch.cuda.empty_cache()
    set_tf32(False)


def emit_stream(what, nbytes, ms, **params):
    rates = [nbytes / (t * 1e-3) for t in ms]
    emit(
        what,
        rates,
        "B/s",
        best=max(rates),
        bytes_counted=nbytes,
        elements=STREAM_N,
        dtype="float64",
        warmup=2,
        **params,
    )


def copy_case(reps):
    src = torch.rand(STREAM_N, device="cuda", dtype=torch.float64)
    dst = torch.empty_like(src)
    ms = time_ms(lambda: dst.copy_(src), warmup=2, reps=reps)
    emit_stream("d2d_copy", 2 * 8 * STREAM_N, ms, op="dst.copy_(src)")


def triad_case(reps):
    b = torch.full((STREAM_N,), 2.0, device="cuda", dtype=torch.float64)
    c = torch.full((STREAM_N,), 0.5, device="cuda", dtype=torch.float64)
    a = torch.empty_like(b)
    ms = time_ms(lambda: torch.add(b, c, alpha=3.0, out=a), warmup=2, reps=reps)
    emit_stream("d2d_triad", 3 * 8 * STREAM_N, ms, op="torch.add(b, c, alpha=3.0, out=a)")


def run_copy(reps=20):
    copy_case(reps)
    torch.cuda.empty_cache()
    triad_case(reps)
    torch.cuda.empty_cache()


def host_case(dev, memory, reps):
    size = dev.numel()
    host = torch.empty(size, dtype=torch.uint8, pin_memory=(memory == "pinned"))
    host.fill_(1)  # touch every page so pageable memory is really mapped
    for direction, dst, src in (("h2d", dev, host), ("d2h", host, dev)):
        ms = time_ms(lambda d=dst, s=src: d.copy_(s, non_blocking=False), 1, reps)
        rates = [size / (t * 1e-3) for t in ms]
        emit(
            f"{direction}_{memory}",
            rates,
            "B/s",
            direction=direction,
            memory=memory,
            size_bytes=size,
            warmup=1,
        )


def run_h2d(reps=10):
    for size in HOST_SIZES:
        dev = torch.ones(size, dtype=torch.uint8, device="cuda")
        for memory in ("pinned", "pageable"):
            host_case(dev, memory, reps)
        dev = None
        torch.cuda.empty_cache()


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--only", default="gemm,copy,h2d", help="comma-separated parts to run: gemm, copy, h2d"
    )
    p.add_argument("--n", type=int, default=8192, help="GEMM matrix order")
    p.add_argument("--gemm-reps", type=int, default=20, help="timed products per precision")
    args = p.parse_args(argv)
    args.only = {s.strip() for s in args.only.split(",") if s.strip()}
    unknown = args.only - {"gemm", "copy", "h2d"}
    if unknown:
        p.error("unknown part(s): " + ",".join(sorted(unknown)))
    return args


def main(argv=None):
    args = parse_args(argv)
    if not torch.cuda.is_available():
        print("torch_ref: no CUDA device visible to torch", file=sys.stderr)
        return 2
    CONTEXT.update(
        device=torch.cuda.get_device_name(0), torch=torch.__version__, torch_cuda=torch.version.cuda
    )
    if "gemm" in args.only:
        run_gemm(args.n, args.gemm_reps)
    if "copy" in args.only:
        run_copy()
    if "h2d" in args.only:
        run_h2d()
    return 0


if __name__ == "__main__":
    sys.exit(main())
