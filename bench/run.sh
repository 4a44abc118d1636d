#!/usr/bin/env bash
# The benchmark, one command: install what is missing, build every crawlq binding in release
# mode, install the peers (BullMQ from npm, RQ from PyPI), start a private redis-server and run
# bench/run.py with the arguments given (see bench/README.md).
set -euo pipefail
source "$(dirname "$0")/../tools/lib.sh"
cd "$ROOT"
export CRAWLQ_PROFILE=release

"$ROOT/tools/setup.sh"
say "build (release): crawlq-bench, python wheel, node addon, php extension, wasm package; install BullMQ and RQ"
cargo build -q --release -p crawlq-bench --target "$CRAWLQ_TARGET"
build_python_venv "$CARGO_TARGET_DIR/bench-venv"
build_node_addon
build_php_extension
build_wasm_package
install_bench_peers "$CARGO_TARGET_DIR/bench-venv"

say "bench/run.py $*"
CRAWLQ_BENCH_BIN="$CARGO_TARGET_DIR/$CRAWLQ_TARGET/release/crawlq-bench" CRAWLQ_PHP_EXTENSION="$PHP_EXT" \
  "$CARGO_TARGET_DIR/bench-venv/bin/python" bench/run.py "$@"
