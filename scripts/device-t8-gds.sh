#!/usr/bin/env bash
# Device call for issue 30's cuFile experiment (repo root, release binary in
# device-bin/burnin, device-bin carried): does a proper cuFile reader read on the lent GPU VM
# (libcufile from CUDA 13, no nvidia_fs, compat mode allowed in /etc/cufile.json)? Run on an
# H100 on 2026-12-05: tests/fixtures/h100-gds (plain) and its compat-read/ (UDEV_STANDIN=1).
# 1. What the machine has: nvidia_fs, libcufile, cufile.json's compat settings, PyTorch's
#    cuFile support.
# 2. A probe: torch.cuda.gds reads one shard into GPU memory and compares it with the bytes
#    read through the page cache.
#    It reads twice: with cufile.json as the machine has it, and with a copy that forbids
#    compat mode (allow_compat_mode false). Reading with compat allowed and failing without it
#    is the trap S4 has to catch: a GPU-direct read that is a CPU bounce buffer. cuFile's own
#    log (logging at INFO in each copy) is kept.
# 3. T8 with data_gds: the GDS column beside the pinned and unpinned loaders, 30 s each
#    (T8_SECONDS).
# Results in $OUT/results.tgz and, small, $OUT/summary.txt.
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
# Two copies of the machine's cufile.json: logging at INFO into this folder, compat mode as it
# is, and compat mode forbidden.
CJ=${CUFILE_ENV_PATH_JSON:-/etc/cufile.json}
[ -f "$CJ" ] || CJ=/usr/local/cuda/gds/cufile.json
for mode in asis nocompat t8; do
  mkdir -p "log-$mode"
  python3 - "$CJ" "$mode" "$O/log-$mode" > "cufile-$mode.json" <<'PY'
import json, re, sys
# cufile.json carries // comments and may carry trailing commas: strip both before
# json.loads. A machine without one (or one this cannot read) starts from {}: cuFile's
# defaults, which allow compat mode.
try:
    text = open(sys.argv[1]).read()
    text = re.sub(r'(?m)^\s*//.*$', '', text)
    text = re.sub(r'(?<!:)//[^"\n]*$', '', text, flags=re.M)
    text = re.sub(r',(\s*[}\]])', r'\1', text)
    cfg = json.loads(text)
except Exception as e:
    print(f"cufile.json {sys.argv[1]}: {e}; starting from cuFile's defaults", file=sys.stderr)
    cfg = {}
# T8's copy keeps the machine's logging: cuFile then logs (at ERROR) into the job's working
# directory, where the workload looks for cuFile's reason.
if sys.argv[2] != "t8":
    cfg.setdefault("logging", {})["level"] = "INFO"
    cfg["logging"]["dir"] = sys.argv[3]
if sys.argv[2] == "nocompat":
    cfg.setdefault("properties", {})["allow_compat_mode"] = False
print(json.dumps(cfg, indent=1))
PY
done 2> cufile-json.err
# The probe, per directory (the /tmp disk, and tmpfs in /dev/shm: cuFile opens a file only
# where it can name the volume, and this VM's /dev/vda has no udev database) and per cufile.json:
# torch.cuda.gds reads a shard and the bytes are compared with a plain read; then the first 16
# shards (128 MiB) are read 3 times each way, through cuFile and as a plain read + copy to the
# GPU; the best in GiB/s.
# Compat mode reads at the plain path's rate: that is the trap.
# UDEV_STANDIN=1: write the udev database entry for /tmp's block device that udevd writes on
# a real node (this VM runs no udevd, and cuFile names a file's volume from udev). Said in
# machine.txt; an entry already there is left alone.
if [ "${UDEV_STANDIN:-0}" = 1 ]; then
  dev=$(python3 -c 'import os, sys; d = os.stat(sys.argv[1]).st_dev; print(f"{os.major(d)}:{os.minor(d)}")' "$O")
  fstype=$(findmnt -no FSTYPE -T "$O")
  mkdir -p /run/udev/data
  if [ ! -e "/run/udev/data/b$dev" ]; then
    printf 'I:1000000\nE:ID_FS_USAGE=filesystem\nE:ID_FS_TYPE=%s\n' "$fstype" > "/run/udev/data/b$dev"
    echo "== udev stand-in: /run/udev/data/b$dev (ID_FS_TYPE=$fstype) written by this script" >> machine.txt
  fi
fi
SHM=/dev/shm/burnin-t8-gds
rm -rf "$SHM"; mkdir -p "$SHM"
free_mib=$(df -Pm /dev/shm | awk 'NR==2 {print $4}')
n=$(( (free_mib - 96) / 8 )); [ "$n" -gt 48 ] && n=48
for i in $(seq 0 $((n - 1))); do cp "shards/$(printf 'shard-%03d.bin' "$i")" "$SHM/"; done
echo "== /dev/shm: ${free_mib} MiB free, $(ls "$SHM" | wc -l) shards copied" >> machine.txt
for dir in "$O/shards" "$SHM"; do
for mode in asis nocompat; do
tag=$mode-$(basename "$dir")
CUFILE_ENV_PATH_JSON="$O/cufile-$mode.json" python3 - "$dir" > "probe-$tag.json" 2> "probe-$tag.err" <<'PY'
import json, os, sys, time, torch
d = sys.argv[1]
path = os.path.join(d, "shard-000.bin")
out = {"dir": d}
try:
    import torch.cuda.gds as gds
    size = os.path.getsize(path) // 4096 * 4096
    t = torch.empty(size, dtype=torch.uint8, device="cuda")
    f = gds.GdsFile(path, os.O_RDONLY)
    f.load_storage(t.untyped_storage(), 0)
    torch.cuda.synchronize()
    with open(path, "rb") as fh:
        want = torch.frombuffer(bytearray(fh.read(size)), dtype=torch.uint8)
    out["equal"] = bool(torch.equal(t.cpu(), want))
    # The rate each way over the first shards (up to 128 MiB), best of 3.
    names = sorted(n for n in os.listdir(d) if n.startswith("shard-"))[:16]
    paths = [os.path.join(d, n) for n in names]
    sizes = [os.path.getsize(p) // 4096 * 4096 for p in paths]
    total = sum(sizes)
    # One tensor per shard: load_storage reads into a whole storage (a slice's storage is
    # its base's).
    bufs = [torch.empty(n, dtype=torch.uint8, device="cuda") for n in sizes]
    def via_cufile():
        for p, b in zip(paths, bufs):
            gds.GdsFile(p, os.O_RDONLY).load_storage(b.untyped_storage(), 0)
    hosts = [torch.empty(n, dtype=torch.uint8).pin_memory() for n in sizes]
    def via_cpu():
        for p, h, b in zip(paths, hosts, bufs):
            with open(p, "rb", buffering=0) as fh:
                fh.readinto(memoryview(h.numpy()))
            b.copy_(h, non_blocking=True)
    for name, fn in (("cufile", via_cufile), ("cpu_then_copy", via_cpu)):
        best = None
        for _ in range(3):
            torch.cuda.synchronize(); t0 = time.perf_counter(); fn(); torch.cuda.synchronize()
            dt = time.perf_counter() - t0
            best = dt if best is None else min(best, dt)
        out[f"{name}_gib_s"] = round(total / best / 2**30, 2)
    out["bytes_each_way"] = total
except Exception as e:
    out["error"] = f"{type(e).__name__}: {e}"
print(json.dumps(out))
PY
done
done
# T8's GDS column reads from the first directory cuFile could open with the machine's settings.
GDS_DATA=""
for dir in "$O/shards" "$SHM"; do
  grep -q '"equal": true' "probe-asis-$(basename "$dir").json" && { GDS_DATA=$dir; break; }
done
echo "== T8 data_gds: ${GDS_DATA:-none (no directory cuFile could open); $O/shards, as the first run}" >> machine.txt
GDS_DATA=${GDS_DATA:-$O/shards}
local_site "$B"
sed -e "s|--steps 300 --pin-loader|--steps 100000 --seconds ${T8_SECONDS:-30} --pin-loader|" \
    -e "s|^data = \"\"|data = \"$O/shards\"|" \
    -e "s|^data_gds = \"\"|data_gds = \"$GDS_DATA\"|" plan.toml > p && mv p plan.toml
CUFILE_ENV_PATH_JSON="$O/cufile-t8.json" $B run --only T8 --json > run.json 2> run.err; echo "rc=$?" >> run.err
rm -rf shards "$SHM"
cp "$HOME"/.cache/burnin/runs/*/T8/*/cufile*.log log-t8/ 2>/dev/null
{
  cat machine.txt cufile-json.err
  for f in probe-*.json; do echo "== $f"; cat "$f"; tail -n 3 "${f%.json}.err"; done
  for mode in asis nocompat t8; do echo "-- cufile log $mode (NOTICE, WARN, ERROR)"; cat log-$mode/cufile*.log 2>/dev/null | grep -E 'NOTICE|WARN|ERROR|compat' | sort -u -k5 | head -n 20; done
  echo "== T8"; tail -n 12 run.err
  grep -h '"gds_reader"' burnin-runs/*/logs/T8/*.log | head -3
  for f in burnin-runs/*/logs/T8/*.log; do echo "-- $f"; grep -c '"reader": "gds"' "$f"; grep '"step"' "$f" | tail -n 2; done
} > summary.txt 2>&1
cp summary.txt "$OUT/summary.txt"
tar czf "$OUT/results.tgz" -C "$O" .
cat summary.txt | head -n 150
