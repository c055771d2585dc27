#!/usr/bin/env bash
# Sourced by the study scripts: study_sweep DTSIM SWEEP.yaml OUT JOBS runs one sweep
# (resumable) and records its wall time in OUT/wall-time.txt; with TABLES_ONLY=1 it runs
# nothing, so that a script regenerates its pages from the traces already in OUT.
study_sweep() {
  local dtsim=$1 sweep=$2 out=$3 jobs=$4
  if [ "${TABLES_ONLY:-0}" = 1 ]; then
    return 0
  fi
  local start
  start=$(date -u +%s)
  "$dtsim" sweep "$sweep" -o "$out" --jobs "$jobs" --resume
  echo "sweep wall time: $(( $(date -u +%s) - start )) s" | tee "$out/wall-time.txt"
}
