#!/usr/bin/env bash
# The mixed-language demo crawl: set everything up, build the Python wheel, the Node.js addon and
# the PHP extension, start a private redis-server and run demo/run.py (a Python, a Node.js and a
# PHP crawler sharing one frontier over a generated local website).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

"$ROOT/tools/setup.sh"
say "build: python wheel (into target/demo-venv), node addon, php extension"
build_python_venv "$CARGO_TARGET_DIR/demo-venv"
build_node_addon
build_php_extension
start_private_redis
say "demo crawl (redis at $REDIS_URL)"
CRAWLQ_PHP_EXTENSION="$PHP_EXT" CRAWLQ_JS_MODULE="$ROOT/bindings-node" \
  "$CARGO_TARGET_DIR/demo-venv/bin/python" demo/run.py
