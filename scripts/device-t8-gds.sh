#!/usr/bin/env bash
# Device call for issue 30's cuFile experiment (repo root, release binary in
# device-bin/burnin, device-bin carried): does a proper cuFile reader read on the H200 VM
# (libcufile from CUDA 13, no nvidia_fs, compat mode allowed in /etc/cufile.json)?
# 1. What the machine has: nvidia_fs, libcufile, cufile.json's compat settings, PyTorch's
#    cuFile support.
# 2. A probe: torch.cuda.gds reads one shard into GPU memory and compares it with the bytes
#    read through the page cache.
# 3. T8 with data_gds: the GDS column beside the pinned and unpinned loaders, 30 s each.
# Results in $OUT/results.tgz. Not yet run: written while no device was lent.
set -u
B=$PWD/device-bin/burnin
. "$PWD/scripts/device-lib.sh"
O=/tmp/burnin-t8-gds
rm -rf "$O"; mkdir -p "$O/shards"; cd "$O"
{
  echo "== nvidia_fs"; ls -d /sys/module/nvidia_fs 2>&1; cat /proc/driver/nvidia-fs/stats 2>&1 | head -n 20
  echo "== libcufile"; ls -l /usr/local/cuda/lib64/libcufile* 2>&1; python3 -c 'import nvidia.cufile, os; print(os.path.dirname(nvidia.cufile.__file__))' 2>&1
  echo "== cufile.json"; grep -nE '"(allow_compat_mode|force_compat_mode|cufile_stats|use_poll_mode)"' "${CUFILE_ENV_PATH_JSON:-/etc/cufile.json}" 2>&1
  echo "== torch"; python3 -c 'import torch; print(torch.__version__, torch.version.cuda, "cufile:", hasattr(torch._C, "_gds_register_buffer"))' 2>&1
  echo "== kvikio"; python3 -c 'import kvikio; print(kvikio.__version__)' 2>&1 | tail -n 1
} > machine.txt 2>&1
make_shards
python3 - > probe.json 2> probe.err <<'PY'
import json, os, time, torch
path = "shards/shard-000.bin"
size = os.path.getsize(path) // 4096 * 4096
out = {"bytes": size}
try:
    import torch.cuda.gds as gds
    t = torch.empty(size, dtype=torch.uint8, device="cuda")
    t0 = time.perf_counter()
    f = gds.GdsFile(path, os.O_RDONLY)
    f.load_storage(t.untyped_storage(), 0)
    torch.cuda.synchronize()
    out["gds_ms"] = round((time.perf_counter() - t0) * 1000, 2)
    with open(path, "rb") as fh:
        want = torch.frombuffer(bytearray(fh.read(size)), dtype=torch.uint8)
    out["equal"] = bool(torch.equal(t.cpu(), want))
except Exception as e:
    out["error"] = f"{type(e).__name__}: {e}"
print(json.dumps(out))
PY
local_site "$B"
sed -e "s|--steps 300 --pin-loader|--steps 100000 --seconds 30 --pin-loader|" \
    -e "s|^data = \"\"|data = \"$O/shards\"|" \
    -e "s|^data_gds = \"\"|data_gds = \"$O/shards\"|" plan.toml > p && mv p plan.toml
$B run --only T8 --json > run.json 2> run.err; echo "rc=$?" >> run.err
rm -rf shards
tar czf "$OUT/results.tgz" -C "$O" .
cat machine.txt probe.json probe.err; tail -n 12 run.err
grep -h '"gds_reader"' burnin-runs/*/logs/T8/*.log | head -3
