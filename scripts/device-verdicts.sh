#!/usr/bin/env bash
# One device call (repo root, release binary in device-bin/burnin, device-bin carried; build with
# scripts/device-bin.sh): the real healthy and broken runs docs/verdicts.md cites.
#
#  1. T0's command as shipped (the preflight fixture, refreshed with the shipped grep).
#  2. `burnin run --only T0,T1,T2,T5,T8` on the H200 as a `local` node (GEMM 10 s, the shipped
#     step counts, T8 reading 48 local shards): the healthy run; its baseline is saved.
#  3. The same phases but T0/T1 again against that baseline: the healthy PASS record.
#  4. The same with another tenant on the GPU (a bf16 GEMM loop started before and killed
#     after): the broken run, which must FAIL on the baseline gates and say by how much.
#  5. LAST, because it leaves the GPU's GPM samplers reading zeros until the machine is given
#     back: GPM streaming switched on and off through NVML, then the agent's frames and
#     `burnin triage` under a GEMM — the real "0 % SM activity at full power" reading.
# Every step leaves its own tarball in $OUT, so a step that runs long loses only itself.
set -u
B=$PWD/device-bin/burnin
. "$PWD/scripts/device-lib.sh"
O=/tmp/burnin-verdicts
rm -rf "$O"; mkdir -p "$O/shards"; cd "$O"

# 1. T0's command, raw.
sh "$OLDPWD/device-bin/t0.sh" > t0-h200.txt 2>&1
cp t0-h200.txt "$OUT/"

make_shards
local_site "$B"
sed -e 's|gemm.py --seconds 20|gemm.py --seconds 10|' \
    -e "s|^data = \"\"|data = \"$O/shards\"|" plan.toml > p && mv p plan.toml
run_dir() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["run_dir"])' "$1" 2>/dev/null; }

# 2. Healthy, then its baseline.
timeout 240 "$B" run --only T0,T1,T2,T5,T8 --json > healthy1.json 2> healthy1.err; echo "rc=$?" >> healthy1.err
R1=$(run_dir healthy1.json)
"$B" baseline save "$R1" > baseline.out 2>&1; echo "rc=$?" >> baseline.out
# 3. Healthy against it.
timeout 200 "$B" run --only T2,T5,T8 --json > healthy2.json 2> healthy2.err; echo "rc=$?" >> healthy2.err
# 4. Broken: another tenant's GEMM on the same GPU all along.
gemm_load 170 > competitor.txt 2>&1 &
COMP=$!
sleep 5
timeout 160 "$B" run --only T2,T5,T8 --json > broken.json 2> broken.err; echo "rc=$?" >> broken.err
kill "$COMP" 2>/dev/null; wait "$COMP" 2>/dev/null
rm -rf shards
tar czf "$OUT/runs.tgz" -C "$O" .
tail -n 25 healthy1.err healthy2.err broken.err baseline.out

# 5. GPM: frames under a GEMM before and after one switch of GPM streaming on and off.
G=$O/gpm; mkdir -p "$G"
printf '[defaults]\nmode = "local"\ngpus = 1\ninterval = "1s"\n[[node]]\nhost = "h200"\n' > "$G/burnin.toml"
gemm_load 75 > "$G/gemm.txt" 2>&1 &
sleep 6
"$B" agent --interval 1s --frames 8 --log-file "$G/agent-before.log" > "$G/agent-load-before-toggle.ndjson" 2>&1
python3 - > "$G/toggle.txt" 2>&1 <<'PY'
import ctypes
n = ctypes.CDLL("libnvidia-ml.so.1")
print("init", n.nvmlInit_v2())
h = ctypes.c_void_p()
print("handle", n.nvmlDeviceGetHandleByIndex_v2(0, ctypes.byref(h)))
print("streaming on", n.nvmlGpmSetStreamingEnabled(h, 1))
print("streaming off", n.nvmlGpmSetStreamingEnabled(h, 0))
print("shutdown", n.nvmlShutdown())
PY
"$B" agent --interval 1s --frames 25 --log-file "$G/agent-after.log" > "$G/agent-load-gpm-zero.ndjson" 2> "$G/agent-after.err" &
"$B" triage --for 20s --json -c "$G/burnin.toml" --log-file "$G/triage.log" > "$G/triage-gpm-zero.json" 2> "$G/triage.err"; echo "rc=$?" >> "$G/triage.err"
wait
tar czf "$OUT/gpm.tgz" -C "$G" .
cat "$G/toggle.txt" "$G/gemm.txt" "$G/triage.err"
