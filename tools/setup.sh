#!/usr/bin/env bash
# Install what building and testing crawlq needs on a Debian machine. Idempotent: anything
# already present is skipped.
set -euo pipefail
source "$(dirname "$0")/lib.sh"

wanted=(redis-server)
# a Python with venv and pip (Debian splits them out of python3)
if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -m pip --version >/dev/null 2>&1; then
  wanted+=(python3 python3-venv python3-pip)
fi
# PHP 8.2 with headers (ext-php-rs), libclang for its bindgen, PHPUnit; Laravel for the queue
# driver's tests (Debian's packaged framework: no Composer or Packagist needed)
wanted+=(php8.2-dev php8.2-cli libclang-dev clang phpunit php-laravel-framework)
# a browser for the web console's tests (driven by Selenium through Debian's ChromeDriver), and
# a Prometheus that scrapes the exporter for the console's history
wanted+=(chromium chromium-driver prometheus)
command -v node >/dev/null 2>&1 || wanted+=(nodejs)
command -v npm >/dev/null 2>&1 || wanted+=(npm)

missing=()
for p in "${wanted[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
  say "apt-get install ${missing[*]}"
  as_root apt-get update -qq
  DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# the wasm-bindgen CLI at exactly the version of the wasm-bindgen crate (built from source: the
# registry has no binaries to download); without --locked, whose pinned versions do not resolve
WASM_BINDGEN=0.2.130
if [ "$(wasm-bindgen --version 2>/dev/null)" != "wasm-bindgen $WASM_BINDGEN" ]; then
  say "cargo install wasm-bindgen-cli --version =$WASM_BINDGEN (a few minutes, once)"
  cargo install -q wasm-bindgen-cli --version "=$WASM_BINDGEN"
fi

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  say "rustup target add wasm32-unknown-unknown"
  rustup target add wasm32-unknown-unknown
fi
