# Sourced by the scripts/device-*.sh: what they share on the GPU machine.

# burnin.toml with this host as a `local` node of 1 GPU, and the shipped plan as plan.toml.
local_site() { # $1 = burnin binary
  printf 'plan = "plan.toml"\n[defaults]\ninterval = "1s"\n[[node]]\nhost = "h200"\nmode = "local"\ngpus = 1\n' > burnin.toml
  "$1" init -c init-test.toml > /dev/null 2>&1; rm -f init-test.toml
}

# 48 shards x 8 MiB of uint16 tokens (~200 M tokens) in shards/: enough that T8 reads from
# disk throughout.
make_shards() {
  mkdir -p shards
  python3 - <<'PY'
import numpy as np
rng = np.random.default_rng(1)
for i in range(48):
    rng.integers(0, 32000, size=4 << 20, dtype=np.uint16).tofile(f"shards/shard-{i:03d}.bin")
PY
}

# A bf16 8192^3 GEMM loop for $1 seconds on GPU 0; its TFLOP/s on stdout at the end.
gemm_load() {
  python3 - "$1" <<'PY'
import sys, time, torch
secs = float(sys.argv[1])
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
t0 = time.time(); n = 0
while time.time() - t0 < secs:
    for _ in range(20): c = a @ b
    torch.cuda.synchronize(); n += 20
dt = time.time() - t0
print(f"{n} GEMMs in {dt:.1f} s: {n * 2 * 8192**3 / dt / 1e12:.0f} TFLOP/s")
PY
}

# A kernel that spins on one SM for $1 seconds on GPU 0 (torch.cuda._sleep): a busy GPU that
# does no work, the busy-idle pattern; the count of kernels on stdout at the end.
spin_kernels() {
  python3 - "$1" <<'PY'
import sys, time, torch
secs = float(sys.argv[1])
torch.cuda.init()
t0 = time.time(); n = 0
while time.time() - t0 < secs:
    torch.cuda._sleep(1_000_000_000)
    torch.cuda.synchronize(); n += 1
print(f"{n} spin kernels in {time.time() - t0:.1f} s")
PY
}
