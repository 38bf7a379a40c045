#!/usr/bin/env bash
# Put a release build of burnin where the device scripts expect it (device-bin/burnin, an
# ignored folder to `carry`), stripped: unstripped it is ~130 MB, over the device tool's 64 MiB
# carry limit. Also copies T0's command (tests/fixtures/preflight/t0-command.sh) beside it.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release
mkdir -p device-bin
cp target/release/burnin device-bin/burnin
strip device-bin/burnin
cp tests/fixtures/preflight/t0-command.sh device-bin/t0.sh
ls -la device-bin
