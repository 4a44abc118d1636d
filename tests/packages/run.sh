#!/usr/bin/env bash
# Install the packages tools/release.sh built (in DIST, default dist/) the way users do, each in
# a fresh place with no Rust toolchain on PATH, and run a scenario with each against a private
# redis-server: the x86_64 wheel in a new virtualenv (pip --no-index), the npm packages in a new
# directory (npm --offline) from require() and import, the prebuilt PHP extension with php -n.
# Also checks the sizes (wheel and platform npm package <= 5 MB) and the composer package.
set -euo pipefail
source "$(dirname "$0")/../../tools/lib.sh"
DIST="$(cd "${1:-$ROOT/dist}" && pwd)"
HERE="$ROOT/tests/packages"
VERSION="$("$ROOT/tools/version.py")"
LIMIT=$((5 * 1024 * 1024))

# PATH without cargo, rustc or rustup
NO_RUST_PATH="$(tr ':' '\n' <<<"$PATH" | grep -v -e '\.cargo' -e rustup | paste -sd: -)"
if PATH="$NO_RUST_PATH" command -v cargo >/dev/null; then
  echo "packages: cargo is still on PATH ($NO_RUST_PATH)" >&2
  exit 1
fi
start_private_redis
WORK="$(mktemp -d /tmp/crawlq-packages.XXXXXX)"
on_exit 'rm -rf "$WORK"'

size_ok() { # file: print its size, fail above 5 MB
  local bytes
  bytes=$(stat -c %s "$1")
  printf '  %-72s %9s bytes\n' "$(basename "$1")" "$(numfmt --grouping "$bytes")"
  ((bytes <= LIMIT)) || { echo "packages: $(basename "$1") is over 5 MB" >&2; exit 1; }
}

say "packages: the manylinux x86_64 wheel in a fresh virtualenv, no Rust on PATH"
wheel="$(ls "$DIST"/python/crawlq-"$VERSION"-cp39-abi3-manylinux*_x86_64*.whl)"
size_ok "$wheel"
python3 -m venv "$WORK/venv"
PATH="$NO_RUST_PATH" "$WORK/venv/bin/pip" install -q --disable-pip-version-check --no-index "$wheel"
PATH="$NO_RUST_PATH" "$WORK/venv/bin/python" -c "
import crawlq, sys
assert crawlq.__version__ == sys.argv[1], crawlq.__version__
print('import crawlq', crawlq.__version__, 'from', crawlq.__file__)" "$VERSION"
(cd "$WORK" && PATH="$NO_RUST_PATH" "$WORK/venv/bin/python" "$ROOT/bindings-python/examples/typed_usage.py")
# The framework adapters ship in the wheel and say what to install when their framework is not.
PATH="$NO_RUST_PATH" "$WORK/venv/bin/python" -c "
try:
    import crawlq.crawlee
except ImportError as e:
    assert 'pip install' in str(e), e
    print('crawlq.crawlee without Crawlee:', e)
else:
    raise SystemExit('crawlq.crawlee imported without Crawlee installed')"
files="$("$WORK/venv/bin/python" -m pip show -f crawlq)"
grep -q 'licenses/LICENSE-MIT' <<<"$files" || { echo "packages: the wheel has no LICENSE-MIT" >&2; exit 1; }

say "packages: the npm packages in a fresh directory (offline), from require() and import"
main_tgz="$DIST/npm/crawlq-$VERSION.tgz"
platform_tgz="$DIST/npm/crawlq-linux-x64-gnu-$VERSION.tgz"
size_ok "$main_tgz"
size_ok "$platform_tgz"
mkdir -p "$WORK/node-app" && cd "$WORK/node-app"
echo '{"name": "app", "private": true}' >package.json
PATH="$NO_RUST_PATH" npm install --offline --no-audit --no-fund --loglevel=error "$main_tgz" "$platform_tgz"
cp "$HERE/scenario.cjs" "$HERE/scenario.mjs" .
PATH="$NO_RUST_PATH" node scenario.cjs
PATH="$NO_RUST_PATH" node scenario.mjs
# the Crawlee adapter ships in the package; without Crawlee installed it says what to install
PATH="$NO_RUST_PATH" node -e "
const { CrawlqRequestManager } = require('crawlq/crawlee')
const m = new CrawlqRequestManager({ lease () {}, seed () {} }, { extendEveryMs: 0, releaseOnSignal: false })
m.addRequest('https://example.com/').then(() => process.exit(1), e => {
  if (!e.message.includes('npm install crawlee')) throw e
  console.log('crawlq/crawlee without Crawlee: ' + e.message)
})"
# without its platform package the loader says what is missing and how to get it
mkdir -p "$WORK/node-bare" && cd "$WORK/node-bare"
echo '{"name": "bare", "private": true}' >package.json
npm install --offline --omit=optional --no-audit --no-fund --loglevel=error "$main_tgz"
node -e "
try { require('crawlq'); process.exit(1) } catch (e) {
  if (e.code !== 'ERR_CRAWLQ_NATIVE_ADDON' || !e.message.includes('npm install crawlq-linux-x64-gnu@$VERSION')) throw e
  console.log('without crawlq-linux-x64-gnu: ' + e.code)
}"

say "packages: the prebuilt PHP extension (php -n: no other ini) and the composer package"
php_tgz="$(ls "$DIST"/php/php_crawlq-"$VERSION"_php*-x86_64-linux-glibc-nts.tgz)"
size_ok "$php_tgz"
mkdir -p "$WORK/php" && tar -xzf "$php_tgz" -C "$WORK/php"
PATH="$NO_RUST_PATH" php -n -d extension="$WORK/php/crawlq.so" "$HERE/scenario.php" "$VERSION"
php -r '
$zip = new PharData($argv[1]);
$composer = json_decode(file_get_contents("phar://" . $argv[1] . "/composer.json"), true, 512, JSON_THROW_ON_ERROR);
if ($composer["type"] !== "php-ext" || $composer["php-ext"]["extension-name"] !== "crawlq" || $composer["version"] !== $argv[2]) {
    fwrite(STDERR, "composer.json: " . json_encode($composer) . "\n"); exit(1);
}
foreach (["crawlq.stub.php", "LICENSE-MIT", "LICENSE-APACHE", "README.md"] as $f) {
    if (!file_exists("phar://" . $argv[1] . "/" . $f)) { fwrite(STDERR, "composer package lacks $f\n"); exit(1); }
}
echo "composer package {$composer["name"]} {$composer["version"]} (php-ext crawlq): ok\n";
' "$DIST/php/crawlq-php-$VERSION.zip" "$VERSION"
# The Laravel driver's package: its classes load with Debian's Laravel and the extension alone.
mkdir -p "$WORK/laravel" && (cd "$WORK/laravel" && python3 -m zipfile -e "$DIST/php/crawlq-laravel-$VERSION.zip" .)
php -n -d extension="$WORK/php/crawlq.so" -r '
require "Illuminate/autoload.php";
$composer = json_decode(file_get_contents($argv[1] . "/composer.json"), true, 512, JSON_THROW_ON_ERROR);
if ($composer["name"] !== "crawlq/laravel" || $composer["version"] !== $argv[2]) { fwrite(STDERR, "composer.json: " . json_encode($composer) . "\n"); exit(1); }
foreach (glob($argv[1] . "/src/*.php") as $file) { require_once $file; }
foreach (["CrawlqServiceProvider", "CrawlqConnector", "CrawlqQueue", "CrawlqJob", "CrawlJob", "CallHandler", "InvalidCrawlJobException"] as $class) {
    if (!class_exists("Crawlq\\Laravel\\$class") && !interface_exists("Crawlq\\Laravel\\$class")) { fwrite(STDERR, "crawlq-laravel lacks $class\n"); exit(1); }
}
echo "composer package crawlq/laravel {$composer["version"]}: ok\n";
' "$WORK/laravel" "$VERSION"

say "packages: SHA256SUMS"
(cd "$DIST" && sha256sum --quiet -c SHA256SUMS && echo "every artefact matches SHA256SUMS")
