#!/usr/bin/env bash
# Device call (repo root, release binary in device-bin/burnin, device-bin carried): the
# checkpoint drill D2 on the H200 with the real train_synthetic.py: the job runs and saves its
# checkpoint every 50 steps; after 45 s of steady tokens/s burnin kills it (pkill, the plan's
# `run` step); the loop starts it again, it restores the checkpoint, and the drill times the
# first step after the restore and the return to 90 % of the steady tokens/s. Telemetry on.
# Results in $OUT/results.tgz.
set -u
B=$PWD/device-bin/burnin
. "$PWD/scripts/device-lib.sh"
O=/tmp/burnin-drill
rm -rf "$O"; mkdir -p "$O"; cd "$O"
local_site "$B"
# Shorter windows than the shipped 2m/1m: the device minutes are few.
sed -e 's|^steady = "2m"|steady = "45s"|' -e 's|^settle = "1m"|settle = "30s"|' plan.toml > p && mv p plan.toml
$B run --only D2 --json > run.json 2> run.err < /dev/null; echo "rc=$?" >> run.err
grep -h '"checkpoint"' burnin-runs/*/logs/D2/h200.log | head -6 > checkpoint-lines.txt
tar czf "$OUT/results.tgz" -C "$O" --exclude='*.pt' .
tail -n 15 run.err; cat checkpoint-lines.txt
