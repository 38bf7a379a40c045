#!/usr/bin/env bash
# One device call (scripts/device-bin.sh first, then carry device-bin): the agent's CPU per
# GPU-sample on the H200 with 1 GPU slot and with 8 (`burnin bench agent --slots 8`: every call
# of an eight-GPU node, made on the one GPU), at 100 ms and 1 s, idle and under a bf16 GEMM,
# one run at a time; the tick split at 8 slots. Results go to $OUT.
set -u
. "$PWD/scripts/device-lib.sh"
B=./device-bin/burnin
O=${OUT:-/tmp/out}
mkdir -p "$O"
runs() { # $1 = idle or load
  for s in 1 8; do
    $B bench agent --slots $s --interval 100ms --frames 300 > "$O/slots$s-100ms-$1.txt" 2>&1
    $B bench agent --slots $s --interval 1s --frames 30 > "$O/slots$s-1s-$1.txt" 2>&1
  done
  $B bench agent --slots 8 --interval 100ms --frames 200 --split > "$O/slots8-100ms-split-$1.txt" 2>&1
}
runs idle
gemm_load 150 > "$O/gemm.txt" 2>&1 &
sleep 5
runs load
wait
for f in "$O"/slots*.txt; do echo "== $(basename "$f")"; cat "$f"; done
cat "$O/gemm.txt"
