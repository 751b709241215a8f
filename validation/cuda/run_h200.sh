#!/usr/bin/env bash
# Build and run gpusim's CUDA validation programs on a real GPU (written for the lent NVIDIA H200),
# writing everything into $OUT (default ./h200-out):
#   log.txt            this script's log (build, probes, times)
#   env.txt            uname, nvcc version, nvidia-smi -q (clocks, power, performance state), before and after
#   smi.csv            nvidia-smi clocks before/after each program (sm, mem, max sm, temperature, power)
#   dmon.txt           nvidia-smi dmon -s pc while the programs run (1 s samples of clocks and power)
#   microbench.jsonl   microbench.cu's JSON lines
#   kernels.jsonl      kernels.cu's JSON lines
#   block_life.jsonl   block_life.cu's JSON lines (how a block ends: shuffle latency, the gap between
#                      blocks on an SM, blocks overlapping after their warps 1-7 exit; issue 34)
#   sass.txt.gz        cuobjdump --dump-sass of both programs (to count the instructions in each chain)
#
# Usage: validation/cuda/run_h200.sh [BINDIR]
#   BINDIR: a folder with prebuilt `microbench` and `kernels` (built with -O3 -arch=sm_90); they are
#   used when a properties-only probe runs, else both are rebuilt here with nvcc.
# Environment: OUT (output folder), MB_TIMEOUT / K_TIMEOUT / BL_TIMEOUT (seconds per program; 150 /
#   120 / 60), PROGRAMS ("microbench kernels block_life": the programs to run), DRY_RUN=1 (print the steps, run nothing
#   that needs a GPU).
# Never changes clocks, power limits or any other GPU setting.
set -u
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BINDIR="${1:-}"
OUT="${OUT:-$PWD/h200-out}"
MB_TIMEOUT="${MB_TIMEOUT:-150}"
K_TIMEOUT="${K_TIMEOUT:-120}"
BL_TIMEOUT="${BL_TIMEOUT:-60}"
DRY="${DRY_RUN:-0}"
PROGRAMS="${PROGRAMS:-microbench kernels block_life}"
mkdir -p "$OUT"
LOG="$OUT/log.txt"
: > "$LOG"
log() { echo "[$(date +%T)] $*" | tee -a "$LOG" >&2; }
run() {  # run a command (or print it in a dry run), logging it
  log "+ $*"
  if [ "$DRY" = 1 ]; then return 0; fi
  "$@"
}
T0=$(date +%s)
log "start; OUT=$OUT BINDIR=${BINDIR:-none} dry_run=$DRY"

SMI_Q="timestamp,name,driver_version,pstate,clocks.sm,clocks.mem,clocks.max.sm,clocks.max.mem,clocks.applications.graphics,temperature.gpu,power.draw,power.limit,utilization.gpu"
smi() {  # smi LABEL: one csv line of clocks into smi.csv
  if [ "$DRY" = 1 ]; then log "+ nvidia-smi --query-gpu=... ($1)"; return 0; fi
  { printf '%s,' "$1"; nvidia-smi --query-gpu=$SMI_Q --format=csv,noheader 2>&1; } >> "$OUT/smi.csv"
}
if [ "$DRY" != 1 ]; then
  echo "label,$SMI_Q" > "$OUT/smi.csv"
  {
    echo "== date"; date -u +%Y-%m-%dT%H:%M:%SZ
    echo "== uname"; uname -a
    echo "== nvcc"; nvcc --version 2>&1
    echo "== nvidia-smi"; nvidia-smi 2>&1
    echo "== nvidia-smi --query-gpu=clocks.sm,clocks.mem,clocks.max.sm --format=csv (before)"
    nvidia-smi --query-gpu=clocks.sm,clocks.mem,clocks.max.sm --format=csv 2>&1
    echo "== nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE,ECC (before)"
    nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE,ECC 2>&1
  } > "$OUT/env.txt"
fi
smi before

# 1. binaries: prebuilt ones if a properties-only probe runs, else build here
BUILD=/tmp/gpusim-cuda-build
mkdir -p "$BUILD"
use_prebuilt=0
if [ -n "$BINDIR" ] && [ -x "$BINDIR/microbench" ] && [ -x "$BINDIR/kernels" ]; then
  if [ "$DRY" = 1 ]; then
    log "+ $BINDIR/microbench props (probe)"; use_prebuilt=1
  elif timeout 60 "$BINDIR/microbench" props > "$BUILD/probe.json" 2>&1 && grep -q '"section": "properties"' "$BUILD/probe.json"; then
    use_prebuilt=1
    log "prebuilt binaries run: $(head -c 200 "$BUILD/probe.json")"
  else
    log "prebuilt probe failed: $(head -c 400 "$BUILD/probe.json")"
  fi
fi
if [ "$use_prebuilt" = 1 ]; then
  MB="$BINDIR/microbench"; KB="$BINDIR/kernels"
else
  log "building with nvcc -O3 -arch=sm_90"
  run nvcc -O3 -arch=sm_90 -o "$BUILD/microbench" "$HERE/microbench.cu" >> "$LOG" 2>&1 &
  p1=$!
  run nvcc -O3 -arch=sm_90 -o "$BUILD/kernels" "$HERE/kernels.cu" >> "$LOG" 2>&1
  wait $p1
  MB="$BUILD/microbench"; KB="$BUILD/kernels"
fi
BL="$BUILD/block_life"
case " $PROGRAMS " in *" block_life "*)
  if [ -n "$BINDIR" ] && [ -x "$BINDIR/block_life" ] && [ "$use_prebuilt" = 1 ]; then BL="$BINDIR/block_life"
  else run nvcc -O3 -arch=sm_90 -o "$BL" "$HERE/block_life.cu" >> "$LOG" 2>&1; fi;;
esac
log "binaries: $MB $KB $BL ($(( $(date +%s) - T0 )) s so far)"

# 2. clocks and power sampled once a second while the programs run
DMON_PID=""
if [ "$DRY" != 1 ] && command -v nvidia-smi > /dev/null; then
  nvidia-smi dmon -s pc -d 1 -o T > "$OUT/dmon.txt" 2>&1 &
  DMON_PID=$!
fi

# 3. the programs (each under its own time limit; their JSON lines are flushed as they go)
: > "$OUT/microbench.jsonl"; : > "$OUT/kernels.jsonl"; : > "$OUT/block_life.jsonl"
case " $PROGRAMS " in *" microbench "*)
  smi before_microbench
  run timeout "$MB_TIMEOUT" "$MB" > "$OUT/microbench.jsonl" 2>> "$LOG"
  log "microbench rc=$? ($(( $(date +%s) - T0 )) s so far)"
  smi after_microbench;;
esac
case " $PROGRAMS " in *" kernels "*)
  smi before_kernels
  run timeout "$K_TIMEOUT" "$KB" > "$OUT/kernels.jsonl" 2>> "$LOG"
  log "kernels rc=$? ($(( $(date +%s) - T0 )) s so far)"
  smi after_kernels;;
esac

case " $PROGRAMS " in *" block_life "*)
  smi before_block_life
  run timeout "$BL_TIMEOUT" "$BL" > "$OUT/block_life.jsonl" 2>> "$LOG"
  log "block_life rc=$? ($(( $(date +%s) - T0 )) s so far)"
  smi after_block_life;;
esac

if [ -n "$DMON_PID" ]; then kill "$DMON_PID" 2> /dev/null; wait "$DMON_PID" 2> /dev/null; fi

# 4. disassembly (costs no GPU time; cuobjdump is on the device image)
if [ "$DRY" != 1 ]; then
  if command -v cuobjdump > /dev/null; then
    { echo "=== microbench"; cuobjdump --dump-sass "$MB"; echo "=== kernels"; cuobjdump --dump-sass "$KB"
      if [ -x "$BL" ]; then echo "=== block_life"; cuobjdump --dump-sass "$BL"; fi; } 2>&1 | gzip -9 > "$OUT/sass.txt.gz"
  else
    log "no cuobjdump"
  fi
  {
    echo "== nvidia-smi --query-gpu=clocks.sm,clocks.mem,clocks.max.sm --format=csv (after)"
    nvidia-smi --query-gpu=clocks.sm,clocks.mem,clocks.max.sm --format=csv 2>&1
    echo "== nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE (after)"
    nvidia-smi -q -d CLOCK,PERFORMANCE,POWER,TEMPERATURE 2>&1
  } >> "$OUT/env.txt"
fi
log "done in $(( $(date +%s) - T0 )) s"
# the last lines of each program, for the caller's output tail
if [ "$DRY" != 1 ]; then
  echo "--- microbench: $(wc -l < "$OUT/microbench.jsonl") lines; kernels: $(wc -l < "$OUT/kernels.jsonl") lines"
  grep -h '"error"\|"ok": false' "$OUT/microbench.jsonl" "$OUT/kernels.jsonl" "$OUT/block_life.jsonl" | head -20
  tail -n 3 "$OUT/microbench.jsonl"; tail -n 2 "$OUT/kernels.jsonl"; cat "$OUT/block_life.jsonl"
  cat "$OUT/smi.csv"
fi
