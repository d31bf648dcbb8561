# shellcheck shell=bash
# bench/gpu/common.sh: what card.sh and rounds.sh share (sourced, not run). Needs RES and the
# carried .whl/ and .gpuref/ (see card.sh).
export ASSAY_HOME=$RES/home PYTHONUNBUFFERED=1
export REF=$PWD/.gpuref

# assay's Python needs: the machine's python3 has numpy, matplotlib; the rest comes as wheels.
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl >"$RES/pip.log" 2>&1
export PYTHONPATH=/tmp/site:$PWD/src

log() { echo "[$(date +%T) +${SECONDS}s] $*" | tee -a "$RES/steps.log"; }

assay() { python3 -m assay "$@"; }

# burn PRECISION SECONDS: gpu_burn as its README runs it, carriage returns as newlines. On the
# lent machine (Firecracker) gpu_burn printed its summary and then never exited, in 12 runs of
# 12: it is ended 8 s past its duration, inside the pipe, so tr still writes what it holds.
burn() {
    local flag=
    case $1 in fp64) flag=-d ;; tf32) flag=-tc ;; esac
    (cd "$REF/gpu-burn" && timeout -s KILL $(($2 + 8)) ./gpu_burn $flag "$2" | tr '\r' '\n')
}
export -f assay burn
