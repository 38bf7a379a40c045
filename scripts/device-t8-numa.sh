#!/usr/bin/env bash
# Third device call (repo root, release binary in device-bin/burnin, device-bin carried):
# T8 from local shards with the loader first not pinned, then pinned to the GPU's NUMA node
# (train_synthetic.py --numa off / gpu), telemetry on. Results in $OUT/results.tgz.
set -u
B=$PWD/device-bin/burnin
. "$PWD/scripts/device-lib.sh"
O=/tmp/burnin-t8
rm -rf "$O"; mkdir -p "$O/shards"; cd "$O"
make_shards
local_site "$B"
sed -e "s|--steps 300 --pin-loader|--steps 100000 --seconds 40 --pin-loader|" \
    -e "s|^data = \"\"|data = \"$O/shards\"|" plan.toml > p && mv p plan.toml
lscpu | grep -i numa > numa.txt 2>&1
$B run --only T8 --json > run.json 2> run.err; echo "rc=$?" >> run.err
rm -rf shards
tar czf "$OUT/results.tgz" -C "$O" .
tail -n 12 run.err; grep -h '"numa"' burnin-runs/*/logs/T8/h200.log | head -3
