#!/usr/bin/env bash
# One device call (repo root, release binary in device-bin/burnin, device-bin carried):
# `burnin run` on the H200 as a `local` node: T1 sanity, T2 gemm.py, T5 train_synthetic.py
# for a few minutes on synthetic data, T8 the same reading token shards from local disk
# through its loader. (Session 2 ran this with the plan of that hour: T5 was one job and T8
# one loader variant; the patterns below follow the plan as shipped now.) Then the baseline
# is saved from that run and T2 is run again against it. Everything lands in
# $OUT/results.tgz.
set -u
B=$PWD/device-bin/burnin
. "$PWD/scripts/device-lib.sh"
O=/tmp/burnin-phases
rm -rf "$O"; mkdir -p "$O/shards"; cd "$O"
nvidia-smi -L > nvidia-smi-L.txt 2>&1
python3 -c 'import torch; print(torch.__version__, torch.version.cuda)' > torch-version.txt 2>&1
make_shards
local_site "$B"
# The shipped plan with run lengths for this session and T8's data set.
# (T5: the 1-GPU job 150 steps, the full job 150 s; T8: each loader variant 30 s.)
sed -e 's|gemm.py --seconds 20|gemm.py --seconds 15|' \
    -e 's|train_synthetic.py --steps 100$|train_synthetic.py --steps 150|' \
    -e 's|train_synthetic.py --steps 300$|train_synthetic.py --steps 100000 --seconds 150|' \
    -e 's|--data {data} --steps 300 --pin-loader|--data {data} --steps 100000 --seconds 30 --pin-loader|' \
    -e "s|^data = \"\"|data = \"$O/shards\"|" plan.toml > plan.site.toml && mv plan.site.toml plan.toml
$B run --only T1,T2,T5,T8 --json > run1.json 2> run1.err; echo "rc=$?" >> run1.err
R1=$(python3 -c 'import json,sys; print(json.load(open("run1.json"))["run_dir"])' 2>/dev/null)
$B baseline save "$R1" > baseline.out 2>&1; echo "rc=$?" >> baseline.out
$B run --only T2 --json > run2.json 2> run2.err; echo "rc=$?" >> run2.err
rm -rf shards
tar czf "$OUT/results.tgz" -C "$O" .
tail -n 30 run1.err run2.err baseline.out
