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

say "python: build the wheel, install it in a fresh virtualenv, run the suite"
PY_TMP="$(mktemp -d /tmp/crawlq-py.XXXXXX)"
python3 -m venv "$PY_TMP/venv"
"$PY_TMP/venv/bin/pip" install -q --disable-pip-version-check "maturin>=1.16,<2" pytest mypy
"$PY_TMP/venv/bin/maturin" build -q -m bindings-python/Cargo.toml --target "$CRAWLQ_TARGET" -o "$PY_TMP/dist"
"$PY_TMP/venv/bin/pip" install -q --disable-pip-version-check "$PY_TMP"/dist/crawlq-*.whl
(cd bindings-python && "$PY_TMP/venv/bin/python" -m pytest -q -p no:cacheprovider tests)
rm -rf "$PY_TMP"

say "node: build the addon, check the committed index.d.ts, run the suite"
(cd bindings-node && npm install --no-audit --no-fund --no-save --loglevel=error \
  && npx napi build --platform --target "$CRAWLQ_TARGET" --dts index.d.ts --js native.js)
if ! git diff --quiet -- bindings-node/index.d.ts; then
  git --no-pager diff -- bindings-node/index.d.ts
  echo "bindings-node/index.d.ts differs from what the build generates: commit the new one" >&2
  exit 1
fi
(cd bindings-node && node --test test/)

say "php: build the extension, check it against its stub, run the PHPUnit suite"
cargo build -p crawlq-php --target "$CRAWLQ_TARGET"
PHP_EXT="$(mktemp -d /tmp/crawlq-php.XXXXXX)/crawlq.so"
cp "$CARGO_TARGET_DIR/$CRAWLQ_TARGET/debug/libcrawlq_php.so" "$PHP_EXT"
(cd bindings-php && CRAWLQ_PHP_EXTENSION="$PHP_EXT" php -d extension="$PHP_EXT" "$(command -v phpunit)")
rm -rf "$(dirname "$PHP_EXT")"

say "wasm: build the package, run the Node.js suite against it unchanged, then its own tests"
(cd bindings-wasm && npm install --no-audit --no-fund --no-save --loglevel=error && ./build.sh)
CRAWLQ_JS_MODULE=bindings-wasm/pkg node --test bindings-node/test/
node --test bindings-wasm/test/

say "all tests passed"
