//! Every place that lists the queue options by hand (type stubs, the TypeScript header, the
//! binding READMEs) lists exactly the options of `Config`'s table, spelled as that language
//! spells them. Adding an option without documenting it everywhere fails here.

use crawlq::{Config, Style};
use std::collections::BTreeSet;
use std::path::Path;

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("..").join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn options(style: Style) -> BTreeSet<String> {
    Config::option_names(style).into_iter().collect()
}

/// The names in a block of `text` from the line containing `start` to the first line
/// containing `end`, as `capture` finds them on each line.
fn names_in(
    text: &str,
    start: &str,
    end: &str,
    capture: impl Fn(&str) -> Option<String>,
) -> Vec<BTreeSet<String>> {
    let mut blocks = Vec::new();
    let mut lines = text.lines();
    while lines.by_ref().any(|l| l.contains(start)) {
        let mut names = BTreeSet::new();
        for line in lines.by_ref() {
            if line.contains(end) {
                break;
            }
            names.extend(capture(line));
        }
        blocks.push(names);
    }
    blocks
}

fn keyword(line: &str) -> Option<String> {
    let (name, rest) = line.trim().split_once(':')?;
    (rest.trim_end().ends_with("= ...,") && !name.contains(' ')).then(|| name.to_string())
}

#[test]
fn python_stubs_list_every_option_of_both_classes() {
    let stub = read("bindings-python/python/crawlq/__init__.pyi");
    let blocks = names_in(&stub, "def __new__(", ") ->", keyword);
    assert_eq!(blocks.len(), 2, "Queue and AsyncQueue");
    for names in blocks {
        assert_eq!(names, options(Style::Snake));
    }
}

#[test]
fn the_php_stub_lists_every_option() {
    let stub = read("bindings-php/crawlq.stub.php");
    let block = stub
        .split("@param array{lease_ttl?")
        .nth(1)
        .and_then(|rest| rest.split("}|null $options").next())
        .expect("the constructor's options array shape");
    let names: BTreeSet<String> = format!("lease_ttl?{block}")
        .split(',')
        .filter_map(|field| field.split('?').next())
        .map(|name| name.trim().trim_start_matches('*').trim().to_string())
        .collect();
    let mut expected = options(Style::Snake);
    expected.remove("fixed_clock"); // test only, not documented in PHP
    assert_eq!(names, expected);
}

#[test]
fn the_typescript_header_lists_every_option() {
    let header = read("bindings-node/types-header.d.ts");
    let blocks = names_in(&header, "export interface QueueOptions {", "}", |line| {
        let line = line.trim();
        (!line.starts_with('/') && !line.starts_with('*'))
            .then(|| line.split('?').next().map(str::to_string))
            .flatten()
    });
    assert_eq!(blocks[0], options(Style::Camel));
}

#[test]
fn every_binding_readme_names_every_option() {
    for (path, style) in [
        ("bindings-python/README.md", Style::Snake),
        ("bindings-php/README.md", Style::Snake),
        ("bindings-node/README.md", Style::Camel),
    ] {
        let readme = read(path);
        for name in options(style) {
            if name == "fixed_clock" || name == "fixedClock" {
                continue; // test only
            }
            assert!(
                readme.contains(&format!("`{name}`")),
                "{path} does not name `{name}`"
            );
        }
    }
}

/// The keys a script builds from its base are found by name on both sides: the prelude's
/// `BASE_KEY_NAMES` (common/9-begin.lua) holds every fixed key of keys.rs but `meta` (the one passed in `KEYS`), and
/// each is a key of docs/PROTOCOL.md section 1, so a key added on one side only fails here.
#[test]
fn the_scripts_key_names_are_the_crates_and_the_protocols() {
    let common = read("core/scripts/common/9-begin.lua");
    let list = common
        .split("local BASE_KEY_NAMES = {")
        .nth(1)
        .expect("common/9-begin.lua has BASE_KEY_NAMES")
        .split('}')
        .next()
        .unwrap();
    let lua: BTreeSet<String> = list
        .split(',')
        .map(|n| n.trim().trim_matches('\'').to_string())
        .filter(|n| !n.is_empty())
        .collect();
    let fixed: BTreeSet<String> = crawlq::keys::FIXED_KEYS
        .iter()
        .filter(|k| **k != "meta")
        .map(|k| k.to_string())
        .collect();
    let missing: Vec<_> = fixed.difference(&lua).collect();
    assert!(
        missing.is_empty(),
        "fixed keys the prelude does not build: {missing:?}"
    );
    let protocol = read("docs/PROTOCOL.md");
    let section = protocol
        .split("\n## 2")
        .next()
        .expect("PROTOCOL.md has section 1");
    for name in lua.iter().chain(["meta".to_string()].iter()) {
        assert!(
            section.contains(&format!("`<base>:{name}`")),
            "PROTOCOL.md section 1 has no key `<base>:{name}`"
        );
    }
}

/// The default limits that Python's and PHP's signatures spell as literals are the core's
/// (`crawlq::binding::defaults`, which the JavaScript bindings and the CLI use directly).
#[test]
fn python_and_php_signatures_default_to_the_cores_limits() {
    use crawlq::binding::defaults::{
        DEAD_PAGE, HOSTS_PAGE, LEASED_PAGE, PEEK_LIMIT, RECLAIM_LIMIT,
    };
    let pyi = read("bindings-python/python/crawlq/__init__.pyi");
    for (method, default) in [
        ("def reclaim(self, limit: int = {}", RECLAIM_LIMIT),
        ("def dead(self, limit: int = {}, offset: int = 0", DEAD_PAGE),
        (
            "def leased_items(self, limit: int = {}, offset: int = 0",
            LEASED_PAGE,
        ),
        (
            "def list_hosts(self, cursor: Optional[str] = None, limit: int = {}",
            HOSTS_PAGE,
        ),
        ("def peek(self, limit: int = {}", PEEK_LIMIT),
    ] {
        let spelled = method.replace("{}", &default.to_string());
        // the blocking Queue and AsyncQueue (async def)
        assert_eq!(pyi.matches(&spelled).count(), 2, "{spelled}");
    }
    let php = read("bindings-php/crawlq.stub.php");
    for (method, default) in [
        ("function reclaim(int $limit = {})", RECLAIM_LIMIT),
        ("function dead(int $limit = {}, int $offset = 0)", DEAD_PAGE),
        (
            "function leasedItems(int $limit = {}, int $offset = 0)",
            LEASED_PAGE,
        ),
        (
            "function listHosts(?string $cursor = null, int $limit = {})",
            HOSTS_PAGE,
        ),
        ("function peek(int $limit = {})", PEEK_LIMIT),
    ] {
        let spelled = method.replace("{}", &default.to_string());
        assert!(php.contains(&spelled), "{spelled}");
    }
}
