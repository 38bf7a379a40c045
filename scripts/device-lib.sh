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
