#!/usr/bin/env bash
# Build every release artefact of crawlq into dist/ (or --out DIR), with SHA-256 sums:
#
#   python/  abi3 wheels (CPython >= 3.9): manylinux2014 x86_64 and aarch64, musllinux_1_2
#            x86_64 (maturin --zig), and the sdist
#   npm/     crawlq-<v>.tgz (the JavaScript, the types, optionalDependencies on the platform
#            packages), crawlq-linux-x64-gnu, crawlq-linux-arm64-gnu, crawlq-linux-x64-musl
#            (one stripped release .node each), crawlq-wasm-<v>.tgz
#   php/     php_crawlq-<v>_php8.2-x86_64-linux-glibc-nts.tgz (the prebuilt extension, named
#            as PIE's pre-packaged-binary method looks for it) and crawlq-php-<v>.zip (the
#            composer php-ext package: composer.json, stub, README, licences) and
#            crawlq-laravel-<v>.zip (the Laravel queue driver, a composer library package)
#   cli/     crawlq-<v>-x86_64-unknown-linux-gnu.tar.gz (the binary, shell completions)
#
#   tools/release.sh              everything (cross builds: about 25 min on 2 cores from cold)
#   tools/release.sh --host-only  only what runs on this machine (linux x86_64 glibc): what
#                                 tools/test.sh builds and installs to test the packages
#
# Needs what tools/setup.sh installs plus, fetched here on first use: the Rust targets
# aarch64-unknown-linux-gnu and x86_64-unknown-linux-musl, and maturin, ziglang and
# cargo-zigbuild from PyPI in a virtualenv under the target dir.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$ROOT"

HOST_ONLY=0
OUT="$ROOT/dist"
while (($#)); do
  case "$1" in
    --host-only) HOST_ONLY=1 ;;
    --out) OUT="$(mkdir -p "$2" && cd "$2" && pwd)"; shift ;;
    -h|--help) sed -n '2,/^set -e/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "release.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done

started=$SECONDS
"$ROOT/tools/version.py" --check
VERSION="$("$ROOT/tools/version.py")"
STAGE="$CARGO_TARGET_DIR/release-stage"
rm -rf "$OUT" "$STAGE"
mkdir -p "$OUT"/{python,npm,php,cli} "$STAGE"
copy_licenses

# --- tools: maturin, zig (for manylinux/musllinux and cross links) and cargo-zigbuild ---------
TOOLS="$RELEASE_TOOLS"
if [ ! -x "$TOOLS/venv/bin/cargo-zigbuild" ]; then
  say "release tools: maturin, ziglang, cargo-zigbuild (PyPI)"
  prepare_release_tools
fi
mkdir -p "$TOOLS/bin"
printf '#!/bin/sh\nexec "%s" -m ziglang "$@"\n' "$TOOLS/venv/bin/python" >"$TOOLS/bin/zig"
chmod +x "$TOOLS/bin/zig"
export PATH="$TOOLS/bin:$TOOLS/venv/bin:$PATH"
# a Node.js addon is a shared library: on musl it must link the C library dynamically
export CARGO_TARGET_X86_64_UNKNOWN_LINUX_MUSL_RUSTFLAGS="-C target-feature=-crt-static"

if ((HOST_ONLY)); then
  NODE_TARGETS=(x86_64-unknown-linux-gnu)
  WHEELS=("x86_64-unknown-linux-gnu manylinux2014")
else
  NODE_TARGETS=(x86_64-unknown-linux-gnu aarch64-unknown-linux-gnu x86_64-unknown-linux-musl)
  WHEELS=("x86_64-unknown-linux-gnu manylinux2014" "aarch64-unknown-linux-gnu manylinux2014" "x86_64-unknown-linux-musl musllinux_1_2")
  for target in aarch64-unknown-linux-gnu x86_64-unknown-linux-musl; do
    rustup target list --installed | grep -qx "$target" || rustup target add "$target"
  done
fi

# --- Python ----------------------------------------------------------------------------------
for wheel in "${WHEELS[@]}"; do
  read -r target compat <<<"$wheel"
  say "python: abi3 wheel for $target ($compat)"
  # a target dir of their own: zig's C compiler settings would otherwise rebuild ring and
  # everything above it for the native builds below, and back again on the next run
  CARGO_TARGET_DIR="$CARGO_TARGET_DIR/zig" maturin build -q --release --strip --zig \
    -m bindings-python/Cargo.toml --target "$target" --compatibility "$compat" -o "$OUT/python"
done
if ((!HOST_ONLY)); then
  say "python: sdist"
  maturin sdist -m bindings-python/Cargo.toml -o "$OUT/python"
fi
# (tools/test.sh starts its Python suites once the wheels are there, while the rest builds)
[ -z "${CRAWLQ_RELEASE_PYTHON_DONE:-}" ] || touch "$CRAWLQ_RELEASE_PYTHON_DONE"

# --- Node.js: one platform package per target, the main package wired to them -----------------
say "node: @napi-rs/cli"
npm_install bindings-node
NAPI="$ROOT/bindings-node/node_modules/.bin/napi"
PLATFORMS=()
for target in "${NODE_TARGETS[@]}"; do
  platform="$(node -e '
    const [arch, , , libc] = process.argv[1].split("-")
    const cpu = { x86_64: "x64", aarch64: "arm64" }[arch]
    console.log(`linux-${cpu}-${libc}`)' "$target")"
  PLATFORMS+=("$platform")
  say "node: release addon for $target (crawlq-$platform)"
  dir="$STAGE/npm/crawlq-$platform"
  mkdir -p "$dir"
  if [ "$target" = "$CRAWLQ_TARGET" ]; then
    # One cargo call for the addon, the PHP extension and the CLI (below): their dependencies
    # are compiled once, with one set of features. napi's --strip would set RUSTFLAGS (and so
    # compile every dependency again for this call alone): the addon is stripped afterwards.
    (cd bindings-node && "$NAPI" build --platform --release --target "$target" -p crawlq-node \
      -o "$STAGE/napi-$platform" --js native.js --dts index.d.ts -- -p crawlq-php -p crawlq-cli >/dev/null)
    strip --strip-unneeded "$STAGE/napi-$platform/crawlq.$platform.node"
  else
    (cd bindings-node && "$NAPI" build --platform --release --strip --target "$target" --cross-compile \
      -o "$STAGE/napi-$platform" --js native.js --dts index.d.ts >/dev/null)
  fi
  cp "$STAGE/napi-$platform/crawlq.$platform.node" "$dir/"
  cp LICENSE-MIT LICENSE-APACHE "$dir/"
  node - "$dir" "$platform" "$VERSION" <<'EOF'
const fs = require('fs')
const [dir, platform, version] = process.argv.slice(2)
const main = require(process.cwd() + '/bindings-node/package.json')
const [os, cpu, abi] = platform.split('-')
fs.writeFileSync(`${dir}/package.json`, JSON.stringify({
  name: `crawlq-${platform}`,
  version,
  description: `The ${platform} native addon of crawlq; installed by the crawlq package, not used alone.`,
  main: `crawlq.${platform}.node`,
  files: [`crawlq.${platform}.node`, 'README.md', 'LICENSE-MIT', 'LICENSE-APACHE'],
  os: [os],
  cpu: [cpu],
  libc: [abi === 'gnu' ? 'glibc' : 'musl'],
  license: main.license,
  author: main.author,
  homepage: main.homepage,
  repository: main.repository,
  bugs: main.bugs,
  engines: main.engines
}, null, 2) + '\n')
fs.writeFileSync(`${dir}/README.md`, `# crawlq-${platform}\n\nThe native addon of [crawlq](${main.homepage}) ` +
  `for ${platform}. Install \`crawlq\`; npm picks this package for matching machines.\n`)
EOF
  (cd "$dir" && npm pack -q --pack-destination "$OUT/npm" >/dev/null)
done

say "node: the main package crawlq-$VERSION.tgz"
main="$STAGE/npm/crawlq"
mkdir -p "$main"
cp bindings-node/{index.js,exports.js,binding.js,protocol.js,crawlee.js,crawlee.d.ts,package.json,README.md,LICENSE-MIT,LICENSE-APACHE} "$main/"
# the loader and types the release build generated (the same on every platform)
cp "$STAGE/napi-${PLATFORMS[0]}/native.js" "$STAGE/napi-${PLATFORMS[0]}/index.d.ts" "$main/"
node - "$main/package.json" "$VERSION" "${PLATFORMS[@]}" <<'EOF'
const fs = require('fs')
const [file, version, ...platforms] = process.argv.slice(2)
const pkg = JSON.parse(fs.readFileSync(file, 'utf8'))
pkg.optionalDependencies = Object.fromEntries(platforms.map(p => [`crawlq-${p}`, version]))
delete pkg.devDependencies
delete pkg.scripts
fs.writeFileSync(file, JSON.stringify(pkg, null, 2) + '\n')
EOF
(cd "$main" && npm pack -q --pack-destination "$OUT/npm" >/dev/null)

say "wasm: crawlq-wasm-$VERSION.tgz"
build_wasm_package >/dev/null
(cd bindings-wasm && npm pack -q --pack-destination "$OUT/npm" >/dev/null)

# --- PHP -------------------------------------------------------------------------------------
say "php: release extension for PHP $(php -r 'echo PHP_MAJOR_VERSION, ".", PHP_MINOR_VERSION;') NTS"
PHP_MINOR="$(php -r 'echo PHP_MAJOR_VERSION, ".", PHP_MINOR_VERSION;')"
[ "$(php -r 'echo PHP_ZTS;')" = 0 ] || { echo "release.sh: this PHP is ZTS; the package is for NTS" >&2; exit 1; }
# (built by the native addon's cargo call above, with the CLI)
mkdir -p "$STAGE/php"
cp "$CARGO_TARGET_DIR/$CRAWLQ_TARGET/release/libcrawlq_php.so" "$STAGE/php/crawlq.so"
strip --strip-unneeded "$STAGE/php/crawlq.so"
cp bindings-php/crawlq.stub.php LICENSE-MIT LICENSE-APACHE "$STAGE/php/"
tar -czf "$OUT/php/php_crawlq-${VERSION}_php${PHP_MINOR}-x86_64-linux-glibc-nts.tgz" \
  -C "$STAGE/php" crawlq.so crawlq.stub.php LICENSE-MIT LICENSE-APACHE
python3 - "$OUT/php/crawlq-php-$VERSION.zip" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    for src, name in [("bindings-php/composer.json", "composer.json"), ("bindings-php/crawlq.stub.php", "crawlq.stub.php"),
                      ("bindings-php/README.md", "README.md"), ("LICENSE-MIT", "LICENSE-MIT"), ("LICENSE-APACHE", "LICENSE-APACHE")]:
        z.write(src, name)
EOF
python3 - "$OUT/php/crawlq-laravel-$VERSION.zip" <<'EOF'
import sys, zipfile
from pathlib import Path
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    laravel = Path("bindings-php/laravel")
    for src in sorted([laravel / "composer.json", laravel / "README.md", *(laravel / "src").glob("*.php")]):
        z.write(src, src.relative_to(laravel).as_posix())
    for licence in ("LICENSE-MIT", "LICENSE-APACHE"):
        z.write(licence, licence)
EOF

# --- CLI -------------------------------------------------------------------------------------
say "cli: release binary and shell completions"
cli="$STAGE/crawlq-$VERSION-$CRAWLQ_TARGET"
mkdir -p "$cli/completions"
cp "$CARGO_TARGET_DIR/$CRAWLQ_TARGET/release/crawlq" "$cli/"
strip "$cli/crawlq"
for shell in bash zsh fish; do "$cli/crawlq" completions "$shell" >"$cli/completions/crawlq.$shell"; done
cp cli/README.md LICENSE-MIT LICENSE-APACHE "$cli/"
tar -czf "$OUT/cli/crawlq-$VERSION-$CRAWLQ_TARGET.tar.gz" -C "$STAGE" "$(basename "$cli")"

# --- sums and the list -----------------------------------------------------------------------
(cd "$OUT" && find . -type f ! -name SHA256SUMS | sort | sed 's|^\./||' | xargs sha256sum >SHA256SUMS)
say "dist: $OUT (version $VERSION, $((SECONDS - started)) s)"
(cd "$OUT" && find . -type f | sort | sed 's|^\./||' | while read -r f; do
  printf '%10s  %s\n' "$(stat -c %s "$f" | numfmt --grouping)" "$f"
done)
