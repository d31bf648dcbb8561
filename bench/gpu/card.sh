#!/usr/bin/env bash
# bench/gpu/card.sh: one lease on a machine with an NVIDIA GPU, as a new user would use assay,
# then assay beside the references on the same card. Everything lands in $RES (default
# /tmp/gpu-card), one file per step (.out/.err) and steps.log with each step's time and exit.
#
# Order: what matters most first, each step under its own timeout, and a step that would end
# past $DEADLINE seconds (default 560) is left out, so a lease of fixed length returns what it
# measured:
#   1. facts: nvidia-smi (clocks, power limit, driver), nvcc, Python
#   2. `assay run gpu` with its defaults (30 s per precision, then gpu_mem), its report
#   3. gpu_burn (wilicc/gpu-burn, built from source) at the same 30 s: FP64, FP32, TF32
#   4. references: PyTorch (cuBLAS GEMM, device copy/triad, H2D/D2H) and BabelStream (CUDA)
#   5. the planted fault: --corrupt-for-test flips one bit in one product
#   6. NCCL: assay's ncclbench and nccl-tests' all_reduce_perf on the GPUs present
#   7. `make run` as the README says (this machine has no network: what does it say?)
#   8. a second round, gpu_burn then assay, at 10 s per precision, while time is left
#
# gpu_burn never exited on the lent machine: common.sh's burn ends it past its duration.
#
# Prerequisites carried with the tree (ignored by git): .whl/ (pydantic and the CLI's other
# wheels for the machine's Python) and .gpuref/ (gpu_burn, BabelStream, nccl-tests,
# ncclbench built for sm_90; .gpuref/SOURCES.md says from which commits).
set -u
RES=${RES:-/tmp/gpu-card}
DEADLINE=${DEADLINE:-560}
mkdir -p "$RES"
# shellcheck source=bench/gpu/common.sh
source "$(dirname "$0")/common.sh"

# step NAME LIMIT CMD...: run CMD under LIMIT seconds unless it would end past the deadline.
step() {
    local name=$1 limit=$2
    shift 2
    if ((SECONDS + limit > DEADLINE)); then
        log "skip $name: ${limit}s would pass the ${DEADLINE}s deadline"
        return 0
    fi
    log "start $name"
    # bash -c: a step may be one of the functions below (exported)
    timeout --kill-after=5 "$limit" bash -c '"$@"' _ "$@" >"$RES/$name.out" 2>"$RES/$name.err"
    log "end $name rc=$?"
}

facts() {
    nvidia-smi
    nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,pstate,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,power.limit,temperature.gpu --format=csv
    nvidia-smi -q -d CLOCK,POWER,TEMPERATURE,PERFORMANCE
    nvcc --version
    python3 -VV
    uname -a
    nproc
    free -g
    ls -l /usr/local/cuda/lib64/libcublas.so* /usr/local/cuda/lib64/libnccl.so* 2>&1
}

# The libraries the carried binaries and assay's nvcc link need: the toolkit's, else those of
# PyTorch's wheels (linked as lib*.so in /tmp/devlibs for the linker).
find_lib() { # name: the directory of the first copy found
    local f
    f=$(find /usr/local/cuda/lib64/ /usr/local/cuda/targets/ /opt/torch/.venv/ /usr/lib/ \
        -name "$1" 2>/dev/null | head -1)
    [[ -n $f ]] && dirname "$f"
}
mkdir -p /tmp/devlibs
for lib in libcublas libcublasLt libnccl; do
    dir=$(find_lib "$lib.so.1[0-9]*" || find_lib "$lib.so.2*")
    [[ -z $dir ]] && { echo "no $lib found" >>"$RES/libs.log"; continue; }
    echo "$lib: $dir" >>"$RES/libs.log"
    LD_EXTRA=${LD_EXTRA:-}:$dir
    [[ -e $dir/$lib.so ]] || ln -sf "$(find "$dir" -name "$lib.so.*" | head -1)" "/tmp/devlibs/$lib.so"
done
export LIBRARY_PATH=/tmp/devlibs${LIBRARY_PATH:+:$LIBRARY_PATH}
export LD_LIBRARY_PATH=/usr/local/cuda/lib64${LD_EXTRA:-}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export NCCL_LD=$LD_LIBRARY_PATH

export -f facts
step facts 30 facts
step assay-gpu 330 assay run gpu --label "first run on the lent card (defaults)"
step assay-gpu-report 60 assay report -f md

for p in fp64 fp32 tf32; do step "gpuburn-$p-30" 60 burn "$p" 30; done

step torch-ref 60 python3 bench/gpu/torch_ref.py
step babelstream 40 "$REF/babelstream/cuda-stream" -s 268435456 -n 20

step fault 60 assay run gpu --only gpu_burn --label "planted fault" \
    --set gpu_burn.corrupt_for_test=true --set gpu_burn.duration=3 \
    --set 'gpu_burn.precisions=["fp64","fp32","bf16"]'

step ncclbench 40 env LD_LIBRARY_PATH="$NCCL_LD" "$REF/assay-probes/ncclbench" \
    --ops all_reduce --min-bytes 8 --max-bytes 1G
step nccl-tests 40 env LD_LIBRARY_PATH="$NCCL_LD" "$REF/nccl-tests/all_reduce_perf" \
    -b 8 -e 1G -f 2 -g 1 -w 5 -n 20
step make-run 25 make run

for p in fp64 fp32 tf32; do step "gpuburn-$p-10-r2" 30 burn "$p" 10; done
step assay-burn-10-r2 90 assay run gpu --only gpu_burn --label "round 2, 10 s" \
    --set gpu_burn.duration=10 --set 'gpu_burn.precisions=["fp64","fp32","tf32"]'
step facts-after 30 facts
step report-all 60 assay report -f md
log "done"
