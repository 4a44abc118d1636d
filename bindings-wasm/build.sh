#!/usr/bin/env bash
# Build the WebAssembly package into pkg/: cargo (wasm32-unknown-unknown, no tokio, no redis
# crate), the wasm-bindgen CLI at the crate's exact version for the `nodejs` (CommonJS) and
# `web` (ES module) targets, wasm-opt -Oz, then the JavaScript entries and types.
set -euo pipefail
cd "$(dirname "$0")"
ROOT="$(cd .. && pwd)"
TARGET_DIR="${CARGO_TARGET_DIR:-$ROOT/target}"

cargo build -p crawlq-wasm --target wasm32-unknown-unknown --profile wasm-release
WASM="$TARGET_DIR/wasm32-unknown-unknown/wasm-release/crawlq_wasm.wasm"

rm -rf pkg && mkdir -p pkg/adapters
wasm-bindgen --target nodejs --out-dir pkg/node "$WASM"
wasm-bindgen --target web --out-dir pkg/web "$WASM"
for out in pkg/node/crawlq_wasm_bg.wasm pkg/web/crawlq_wasm_bg.wasm; do
  node_modules/.bin/wasm-opt -Oz --enable-bulk-memory --enable-sign-ext --enable-nontrapping-float-to-int \
    --enable-mutable-globals --enable-reference-types --enable-multivalue "$out" -o "$out"
done

cp js/index.js js/index.mjs js/binding.js js/connect.js pkg/
cp js/adapters/*.js pkg/adapters/
cp ../bindings-node/protocol.js ../bindings-node/exports.js pkg/
node build-types.js ../bindings-node/index.d.ts pkg/index.d.ts

bytes=$(stat -c %s pkg/node/crawlq_wasm_bg.wasm)
gz=$(gzip -9 -c pkg/node/crawlq_wasm_bg.wasm | wc -c)
echo "crawlq_wasm_bg.wasm: $bytes bytes, $gz gzipped"
