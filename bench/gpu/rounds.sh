#!/usr/bin/env bash
# bench/gpu/rounds.sh: assay's burn and gpu_burn alternated on one card (A B A B), the same
# seconds per precision, FP64, FP32 and TF32; outputs in $RES (default /tmp/gpu-rounds).
set -u
RES=${RES:-/tmp/gpu-rounds}
SECS=${SECS:-10}
mkdir -p "$RES"
# shellcheck source=bench/gpu/common.sh
source "$(dirname "$0")/common.sh"
for r in 1 2; do
    log "assay r$r"
    assay run gpu --only gpu_burn --label "alternated round $r, $SECS s" \
        --set gpu_burn.duration="$SECS" --set 'gpu_burn.precisions=["fp64","fp32","tf32"]' \
        >"$RES/assay-r$r.out" 2>"$RES/assay-r$r.err"
    for p in fp64 fp32 tf32; do
        log "gpu_burn $p r$r"
        burn "$p" "$SECS" >"$RES/gpuburn-$p-$SECS-r$r.out" 2>&1
    done
done
log "all rounds done"
