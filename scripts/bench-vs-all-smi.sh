#!/usr/bin/env bash
# Benchmark (not a test): the console side by side with all-smi over 128 nodes × 8 GPUs at 1 Hz,
# in one run on one machine. Each console runs in its own tmux session of the same size, at the
# same time:
#   all-smi view -i 1 --hostfile hosts.csv   over all-smi's own mock server (128 ports, 8 GPUs)
#   burnin watch                              over 128 `burnin agent --sim --gpus 8` children
# After a warm-up, each console process's own CPU (utime+stime of that process alone, from
# /proc: not the mock server's, not the simulated agents') is read over the same seconds, and
# its peak RSS (VmHWM) at the end. Prints both and the ratios.
#
# Usage: scripts/bench-vs-all-smi.sh [SECONDS=120] [WARMUP=30]
# Needs: cargo, tmux, git, protobuf-compiler and libdrm-dev (to build all-smi).
# ALL_SMI_SRC: an all-smi checkout (default: cloned from GitHub); its tag v0.23.0 is built (the
# last tag that builds with Rust 1.95). ALL_SMI_BIN / BURNIN_BIN: prebuilt binaries instead.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-120}
warmup=${2:-30}
nodes=128
gpus=8
cols=200
rows=50

if [ -n "${BURNIN_BIN:-}" ]; then burnin=$(realpath "$BURNIN_BIN"); else
  cargo build --release --locked --quiet
  burnin=$(realpath "${CARGO_TARGET_DIR:-target}/release/burnin")
fi

work=$(mktemp -d)
session="burnin-vs-all-smi-$$"
cleanup() {
  tmux kill-session -t "$session-a" 2>/dev/null || true
  tmux kill-session -t "$session-b" 2>/dev/null || true
  [ -n "${mock_pid:-}" ] && kill "$mock_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

if [ -n "${ALL_SMI_BIN:-}" ]; then
  all_smi=$(realpath "$ALL_SMI_BIN")
  mock=$(dirname "$all_smi")/all-smi-mock-server
else
  src=${ALL_SMI_SRC:-$work/all-smi}
  [ -d "$src" ] || git clone --quiet https://github.com/lablup/all-smi "$src"
  git -C "$src" checkout --quiet v0.23.0
  (cd "$src" && cargo build --release --locked --quiet --features mock)
  all_smi=$(realpath "$src/target/release/all-smi")
  mock=$(realpath "$src/target/release/all-smi-mock-server")
fi

# A free run of $nodes ports for the mock server.
first=$(python3 -c '
import random, socket, sys
n = int(sys.argv[1])
def free(p):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", p)); return True
    except OSError:
        return False
    finally:
        s.close()
while True:
    p = random.randint(20000, 60000 - n)
    if all(free(q) for q in range(p, p + n)):
        print(p); break' "$nodes")
last=$((first + nodes - 1))
(cd "$work" && exec "$mock" --port-range "$first-$last" -o hosts.csv >"$work/mock.log" 2>&1) &
mock_pid=$!
for _ in $(seq 100); do
  [ -s "$work/hosts.csv" ] && curl -sf "http://127.0.0.1:$last/metrics" >/dev/null && break
  sleep 0.2
done
gpus_per_node=$(curl -sf "http://127.0.0.1:$first/metrics" | grep -c '^all_smi_gpu_utilization{' || true)

cat >"$work/burnin.toml" <<EOF
[[node]]
host = "node[001-$nodes]"
mode = "sim"
gpus = $gpus
EOF

# tmux runs its command through a shell: every path goes in quoted.
q() { printf '%q' "$1"; }
tmux new-session -d -s "$session-a" -x "$cols" -y "$rows" \
  "exec $(q "$all_smi") view -i 1 --hostfile $(q "$work/hosts.csv") 2>$(q "$work/all-smi.err")"
tmux new-session -d -s "$session-b" -x "$cols" -y "$rows" \
  "cd $(q "$work") && exec $(q "$burnin") watch -c $(q "$work/burnin.toml") --log-file $(q "$work/burnin.log")"
sleep 2
pid_of() { tmux list-panes -t "$1" -F '#{pane_pid}'; }
a=$(pid_of "$session-a")
b=$(pid_of "$session-b")

ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hwm() { awk '/^VmHWM/ {print $2}' "/proc/$1/status"; }
sleep "$warmup"
a0=$(ticks "$a"); b0=$(ticks "$b"); t0=$(date +%s.%N)
sleep "$seconds"
a1=$(ticks "$a"); b1=$(ticks "$b"); t1=$(date +%s.%N)
ahwm=$(hwm "$a"); bhwm=$(hwm "$b")
tmux capture-pane -p -t "$session-a" >"$work/all-smi.screen"
tmux capture-pane -p -t "$session-b" >"$work/burnin.screen"

python3 - "$a0" "$a1" "$b0" "$b1" "$t0" "$t1" "$ahwm" "$bhwm" "$(getconf CLK_TCK)" \
  "$nodes" "$gpus" "$gpus_per_node" "$cols" "$rows" "$seconds" <<'PY'
import sys
a0, a1, b0, b1 = (int(x) for x in sys.argv[1:5])
t0, t1 = float(sys.argv[5]), float(sys.argv[6])
ahwm, bhwm, hz = int(sys.argv[7]), int(sys.argv[8]), int(sys.argv[9])
nodes, gpus, mock_gpus, cols, rows, secs = sys.argv[10:16]
wall = t1 - t0
a_cpu = (a1 - a0) / hz / wall * 100
b_cpu = (b1 - b0) / hz / wall * 100
print(f"{nodes} nodes x {gpus} GPUs at 1 Hz (all-smi mock: {mock_gpus} GPUs a node), "
      f"{cols}x{rows} tmux each, {wall:.0f} s measured after the warm-up")
print(f"  all-smi view : CPU {a_cpu:5.2f} % of a core   peak RSS {ahwm / 1024:6.1f} MB")
print(f"  burnin watch : CPU {b_cpu:5.2f} % of a core   peak RSS {bhwm / 1024:6.1f} MB")
cpu_ratio = b_cpu / a_cpu if a_cpu > 0 else float("nan")
print(f"  burnin / all-smi: CPU {cpu_ratio:.2f}x (goal <= 0.5x)   "
      f"RSS {bhwm / ahwm:.2f}x (goal <= 1x)")
PY
echo "last screens: all-smi first 3 lines, burnin first 3 lines"
head -3 "$work/all-smi.screen"
head -3 "$work/burnin.screen"
