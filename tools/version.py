#!/usr/bin/env python3
"""The one version of crawlq, set in Cargo.toml's [workspace.package] and repeated in the
manifests of the other ecosystems.

    tools/version.py            print the version
    tools/version.py --check    exit 1 unless every manifest and CHANGELOG.md carry it
    tools/version.py 0.2.0      set it everywhere (then add its CHANGELOG.md section)

The Python wheel reads its version from Cargo (pyproject.toml says `dynamic = ["version"]`), so
pyproject.toml is checked for that rather than for a number.
"""
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CARGO = ROOT / "Cargo.toml"
JSON_MANIFESTS = [
    ROOT / "bindings-node" / "package.json",
    ROOT / "bindings-wasm" / "package.json",
    ROOT / "bindings-php" / "composer.json",
    ROOT / "bindings-php" / "laravel" / "composer.json",
]
PYPROJECT = ROOT / "bindings-python" / "pyproject.toml"
CHANGELOG = ROOT / "CHANGELOG.md"
# [workspace.package] ... version = "x.y.z" (the first `version =` after the table header)
CARGO_VERSION = re.compile(r'(\[workspace\.package\][^\[]*?\nversion\s*=\s*")([^"]+)(")', re.S)
SEMVER = re.compile(r"^\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$")


def cargo_version() -> str:
    found = CARGO_VERSION.search(CARGO.read_text())
    if not found:
        sys.exit(f"{CARGO}: no version in [workspace.package]")
    return found.group(2)


def problems(version: str) -> list[str]:
    out = []
    for path in JSON_MANIFESTS:
        have = json.loads(path.read_text()).get("version")
        if have != version:
            out.append(f"{path.relative_to(ROOT)}: version {have!r}, Cargo.toml says {version!r}")
    if not re.search(r'^dynamic\s*=\s*\[[^\]]*"version"', PYPROJECT.read_text(), re.M):
        out.append(f"{PYPROJECT.relative_to(ROOT)}: the version must be dynamic (read from Cargo)")
    if not re.search(rf"^## {re.escape(version)}\b", CHANGELOG.read_text(), re.M):
        out.append(f"CHANGELOG.md: no section '## {version}'")
    return out


def set_version(version: str) -> None:
    if not SEMVER.match(version):
        sys.exit(f"not a semantic version: {version!r}")
    CARGO.write_text(CARGO_VERSION.sub(rf"\g<1>{version}\g<3>", CARGO.read_text(), count=1))
    for path in JSON_MANIFESTS:
        # edit the one line, so the file keeps its layout
        text = path.read_text()
        path.write_text(re.sub(r'^(\s*"version":\s*")[^"]*(")', rf"\g<1>{version}\g<2>", text, count=1, flags=re.M))


def main(argv: list[str]) -> int:
    if not argv:
        print(cargo_version())
        return 0
    if argv == ["--check"]:
        version = cargo_version()
        found = problems(version)
        for line in found:
            print(line, file=sys.stderr)
        if not found:
            print(f"version {version}: Cargo, pyproject (dynamic), package.json x2, composer.json x2 and CHANGELOG.md agree")
        return 1 if found else 0
    if len(argv) == 1 and not argv[0].startswith("-"):
        set_version(argv[0])
        left = problems(argv[0])
        for line in left:
            print(line, file=sys.stderr)
        return 0
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
