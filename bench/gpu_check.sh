#!/usr/bin/env bash
# The real-GPU check (../shared/DEVICE.md), run once on the device machine:
#
#   bench/gpu_wheels.sh                        # here first: .whl/ (textual, nvitop ...)
#   device run, carry [".whl"], timeout_s 540:
#     bash bench/gpu_check.sh                  # every load, in the order below
#     bash bench/gpu_check.sh copy idle-vram   # or some, by name
#
# What it leaves under $OUT (and it keeps what is done if it is stopped at its limit):
#   check.log            what ran, when
#   nvidia-smi.txt       the card and driver (nvidia-smi -q)
#   once-idle.json       gputop-hints --once --json before any load
#   once-bf16-matmul.json  the same during the bf16 matmul load
#   live-cost.txt        bench/live_cost.py during the bf16 matmul load: ms a tick on the
#                        real driver, and GPM's share of it
#   real/LOAD.jsonl.gz   a recording of each load of bench/gpu_loads.py (GPU_CHECK_SECONDS
#                        s at 1 Hz, from its 6th second); copy them into tests/data/real/,
#                        tests/real/test_real_gpu.py then checks them on every CI run
#   real/LOAD.report.txt gputop-hints report of it
#
# The GPM loads come first (issue 14: matmul, memory copy, idle), then the pipeline
# ones. About 45 s a load at the default 30 s.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu-check}
mkdir -p "$OUT/real"
SECONDS_EACH=${GPU_CHECK_SECONDS:-30}
WARM_S=6
log() { echo "[$(date +%T)] $*" | tee -a "$OUT/check.log"; }

if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || { log "installing .whl failed"; exit 2; }
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
export PYTHONUNBUFFERED=1
gth() { python3 -m gputop_hints "$@"; }

log "python $(python3 -V 2>&1), torch $(python3 -c 'import torch; print(torch.__version__)' 2>&1)"
nvidia-smi -q >"$OUT/nvidia-smi.txt" 2>&1
gth --version | tee -a "$OUT/check.log"
gth --once --json --require-gpu >"$OUT/once-idle.json" 2>>"$OUT/check.log"
log "once (idle): rc=$?"

loads=("$@")
if [ ${#loads[@]} -eq 0 ]; then
  loads=(bf16-matmul copy idle-vram fp32-matmul tiny-kernels starved small-batch pcie)
fi

for load in "${loads[@]}"; do
  log "load $load: start"
  python3 bench/gpu_loads.py "$load" --seconds $((SECONDS_EACH + WARM_S + 4)) \
    >"$OUT/real/$load.load.log" 2>&1 &
  pid=$!
  sleep "$WARM_S"
  if ! kill -0 "$pid" 2>/dev/null; then
    log "load $load: exited early (see real/$load.load.log)"
    continue
  fi
  if [ "$load" = bf16-matmul ]; then
    python3 bench/live_cost.py --ticks 10 >"$OUT/live-cost.txt" 2>&1 &
    cost=$!
  fi
  gth record -o "$OUT/real/$load.jsonl.gz" --duration "$SECONDS_EACH" --require-gpu \
    2>>"$OUT/check.log"
  log "load $load: recorded, rc=$?"
  if [ "$load" = bf16-matmul ]; then
    gth --once --json --require-gpu >"$OUT/once-bf16-matmul.json" 2>>"$OUT/check.log"
    wait "$cost"
    log "live cost: $(tr '\n' ' ' <"$OUT/live-cost.txt")"
  fi
  wait "$pid"
  log "load $load: exited rc=$?"
  gth report "$OUT/real/$load.jsonl.gz" >"$OUT/real/$load.report.txt" 2>&1
  grep -E '^ *\[(!|i|x)\]|warning|critical' "$OUT/real/$load.report.txt" | head -5 \
    | tee -a "$OUT/check.log"
done
log "done"
