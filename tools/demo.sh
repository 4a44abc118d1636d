#!/usr/bin/env bash
# Set everything up, start a private redis-server and run an end-to-end example.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

"$ROOT/tools/setup.sh"
start_private_redis
say "cargo run --example quickstart (redis at $REDIS_URL)"
cargo run -q --release -p crawlq --target "$CRAWLQ_TARGET" --example quickstart
