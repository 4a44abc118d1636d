#!/usr/bin/env bash
# Run every test of the repository: the README's test command, and what CI runs.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
started=$SECONDS

"$ROOT/tools/setup.sh"

say "cargo fmt --check; one version everywhere (tools/version.py --check)"
cargo fmt --all -- --check
tools/version.py --check

say "core and CLI: unit, doc, integration and vector tests (each test binary starts its own redis-server)"
cargo test -p crawlq -p crawlq-cli --target "$CRAWLQ_TARGET"

say "one queue over several shards: the invariant and limit suites with 3 shards on one Redis, then with 8 shards on a 3-master Redis Cluster"
CRAWLQ_TEST_SHARDS=3 cargo test -q -p crawlq --target "$CRAWLQ_TARGET" --test invariants --test limits --test catalog --test hosts --test in_flight --test delay_after --test host_turn --test ack_with_links --test seen_cache
start_cluster 3 0
export CRAWLQ_CLUSTER_URL="$CLUSTER_URL"
CRAWLQ_TEST_URL="$CLUSTER_URL" CRAWLQ_TEST_SHARDS=8 cargo test -q -p crawlq --target "$CRAWLQ_TARGET" --test invariants --test limits --test catalog --test hosts --test in_flight --test delay_after --test host_turn --test ack_with_links --test seen_cache

say "core builds for wasm32 without tokio and redis"
cargo build -p crawlq --no-default-features --target wasm32-unknown-unknown

say "python: build the wheel, install it in a fresh virtualenv, run the suite"
PY_VENV="$(mktemp -d /tmp/crawlq-py.XXXXXX)/venv"
on_exit 'rm -rf "$(dirname "$PY_VENV")"'
build_python_venv "$PY_VENV"
(cd bindings-python && "$PY_VENV/bin/python" -m pytest -q -p no:cacheprovider tests)

say "vectors: the generated files are what tests/vectors/generate.py writes"
"$PY_VENV/bin/python" tests/vectors/generate.py --check

say "node: build the addon, check the committed index.d.ts, run the suite"
build_node_addon
if ! git diff --quiet -- bindings-node/index.d.ts; then
  git --no-pager diff -- bindings-node/index.d.ts
  echo "bindings-node/index.d.ts differs from what the build generates: commit the new one" >&2
  exit 1
fi
(cd bindings-node && node --test test/)

say "php: build the extension, check it against its stub, run the PHPUnit suite"
build_php_extension
(cd bindings-php && CRAWLQ_PHP_EXTENSION="$PHP_EXT" php -d extension="$PHP_EXT" "$(command -v phpunit)")

say "wasm: build the package, run the Node.js suite against it unchanged, then its own tests"
build_wasm_package
CRAWLQ_JS_MODULE=bindings-wasm/pkg node --test bindings-node/test/
node --test bindings-wasm/test/

say "packages: tools/release.sh --host-only, then each package installed where no Rust is on PATH (tests/packages/run.sh)"
PKG_DIST="$(mktemp -d /tmp/crawlq-dist.XXXXXX)"
on_exit 'rm -rf "$PKG_DIST"'
./tools/release.sh --host-only --out "$PKG_DIST"
tests/packages/run.sh "$PKG_DIST"

say "interop: workers of every language on one redis-server, then on the Redis Cluster (tests/interop/run.py)"
cargo build -q -p crawlq --target "$CRAWLQ_TARGET" --example interop_worker
export CRAWLQ_RUST_WORKER="$CARGO_TARGET_DIR/$CRAWLQ_TARGET/debug/examples/interop_worker"
CRAWLQ_PHP_EXTENSION="$PHP_EXT" "$PY_VENV/bin/python" tests/interop/run.py
CRAWLQ_PHP_EXTENSION="$PHP_EXT" "$PY_VENV/bin/python" tests/interop/run.py --cluster "$CLUSTER_URL"

say "faults: workers and Redis killed, stopped, filled, failed over mid-drain (tests/faults/run.py, short run)"
CRAWLQ_PHP_EXTENSION="$PHP_EXT" "$PY_VENV/bin/python" tests/faults/run.py

say "frameworks: 3 Scrapy spider processes, 2 Crawlee (JavaScript) and 2 Crawlee for Python crawler processes, 2 Laravel queue:work workers: each crawls a local site of 330 pages through one frontier; a request through every pair of adapters; all four frameworks on one queue, then again with one killed mid-crawl; 3 Scrapy processes on a site with a slow, a rate-limited and a robots.txt Crawl-delay host, one request at a time per host, paced after the answer; 2 Crawlee and 2 Crawlee for Python processes on a site of redirects, each redirect followed after its host's turn or seeded into the frontier (tests/frameworks/run.py)"
CRAWLQ_PHP_EXTENSION="$PHP_EXT" "$PY_VENV/bin/python" tests/frameworks/run.py

say "demo: the mixed-language crawl of tools/demo.sh (it checks its own result)"
start_private_redis
CRAWLQ_PHP_EXTENSION="$PHP_EXT" CRAWLQ_JS_MODULE="$ROOT/bindings-node" "$PY_VENV/bin/python" demo/run.py

say "bench: smoke run of bench/run.py (N = 1,000, one round: every runner and peer handles every item; no timing is judged)"
install_bench_peers "$PY_VENV"
cargo build -q -p crawlq-bench --target "$CRAWLQ_TARGET"
CRAWLQ_BENCH_BIN="$CARGO_TARGET_DIR/$CRAWLQ_TARGET/debug/crawlq-bench" CRAWLQ_PHP_EXTENSION="$PHP_EXT" \
  "$PY_VENV/bin/python" bench/run.py --smoke
say "bench: one small run of bench/cost.py (every phase runs and checks its counts; no figure is judged)"
CRAWLQ_BENCH_BIN="$CARGO_TARGET_DIR/$CRAWLQ_TARGET/debug/crawlq-bench" "$PY_VENV/bin/python" bench/cost.py --runs 1 --n 2000

say "all tests passed in $((SECONDS - started)) s"
