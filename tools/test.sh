#!/usr/bin/env bash
# Run every test of the repository: the README's test command, and what CI runs.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

"$ROOT/tools/setup.sh"

say "cargo fmt --check"
cargo fmt --all -- --check

say "core: unit, doc and integration tests (each test binary starts its own redis-server)"
cargo test -p crawlq --target "$CRAWLQ_TARGET"

say "core builds for wasm32 without tokio and redis"
cargo build -p crawlq --no-default-features --target wasm32-unknown-unknown

say "all tests passed"
