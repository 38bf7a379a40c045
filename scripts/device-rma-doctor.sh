#!/usr/bin/env bash
# On the GPU machine (run by the device tool, device-bin/ carried; scripts/device-bin.sh
# builds it): what identifies each GPU for a return, read by the agent through NVML (its
# hello), against nvidia-smi's own answer; `burnin doctor` on the real node with the shipped
# plan; T1 run and reported, so the report's node table carries the real GPU's identity.
# Everything goes to $OUT.
set -u
cd "$(dirname "$0")/.."
. scripts/device-lib.sh
B="$PWD/device-bin/burnin"
OUT="${OUT:-/tmp/out}"; mkdir -p "$OUT"
work=$(mktemp -d); cd "$work" || exit 1
{
  echo "== nvidia-smi says"
  nvidia-smi --query-gpu=index,name,serial,pci.bus_id,vbios_version,uuid --format=csv
  echo "== the agent's hello (NVML)"
  timeout 20 "$B" agent --interval 1s | head -n 1 | python3 -c 'import json,sys; h=json.loads(sys.stdin.readline()).get("hello", {}); print(json.dumps(h.get("gpus", h), indent=1))'
} > "$OUT/identity.txt" 2>&1
local_site "$B"
timeout 120 "$B" doctor -c burnin.toml > "$OUT/doctor.txt" 2>&1; echo "exit $?" >> "$OUT/doctor.txt"
timeout 120 "$B" doctor -c burnin.toml --json > "$OUT/doctor.json" 2>&1
timeout 300 "$B" run -c burnin.toml --only T1 > "$OUT/run-t1.txt" 2>&1; echo "exit $?" >> "$OUT/run-t1.txt"
run=$(ls -d burnin-runs/* 2>/dev/null | head -n 1)
if [ -n "$run" ]; then
  "$B" report "$run" >> "$OUT/run-t1.txt" 2>&1
  cp "$run/report.md" "$run/summary.json" "$OUT/" 2>/dev/null
fi
ls -la "$OUT"
