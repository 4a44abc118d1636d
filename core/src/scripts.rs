//! The Lua scripts, one per atomic operation, each prefixed with the shared prelude
//! (`scripts/common/`, its files joined in order). Loaded with `include_str!`. The same code
//! runs two ways (docs/PROTOCOL.md, section 4): as a Redis Functions library ([`library`], `FUNCTION LOAD` once, then `FCALL`:
//! the prelude's helpers are defined once per server, not on every call), or script by script
//! with EVALSHA and an EVAL fallback, where functions cannot be loaded.

use std::sync::OnceLock;

/// One operation script.
pub struct Script {
    pub name: &'static str,
    /// Redis 7 script flags (the `#!lua flags=...` line): decided before the script runs, so a
    /// script is refused as a whole (never half-applied) when memory is full.
    pub flags: &'static str,
    /// The script file: its steps (if it has any) and its body, the code each call runs.
    text: &'static str,
    /// Other operations this one runs first-class, each as a local function of its own
    /// (`local function <name>(ARGV) <body> end`) defined before the body, which calls them
    /// with the arguments that operation takes: one call that does several operations in turn,
    /// with each operation's code written once.
    parts: &'static [(&'static str, &'static Script)],
    source: OnceLock<String>,
    sha1: OnceLock<String>,
    function_name: OnceLock<String>,
}

/// The line that ends a script's steps: what is above it (helper functions in a table named after
/// the operation, `LEASE`, `SEED`) is defined once, beside the prelude, and what is below it is
/// the body each call runs. In a functions library the steps are then created once per server,
/// not on every call as functions written in the body would be (core/README.md, "Writing
/// scripts"). A script without the line is all body.
pub const STEPS_END: &str = "--- per call ---\n";

/// What every operation runs first, in both forms: [`Script::source`] and [`library`].
const BEGIN_CALL: &str =
    "local begin_error = begin(KEYS, ARGV)\nif begin_error then return begin_error end\n";

/// The prelude, kept in files by concern (`scripts/common/`, numbered in the order they are
/// joined): what they define is used by the files after them and by every operation.
const COMMON: &str = concat!(
    include_str!("../scripts/common/1-prelude.lua"),
    include_str!("../scripts/common/2-checks.lua"),
    include_str!("../scripts/common/3-records.lua"),
    include_str!("../scripts/common/4-counts.lua"),
    include_str!("../scripts/common/5-sets.lua"),
    include_str!("../scripts/common/6-lanes.lua"),
    include_str!("../scripts/common/7-flight.lua"),
    include_str!("../scripts/common/7-crawl-limits.lua"),
    include_str!("../scripts/common/8-leases.lua"),
    include_str!("../scripts/common/8-removals.lua"),
    include_str!("../scripts/common/9-begin.lua")
);

impl Script {
    const fn new(
        name: &'static str,
        flags: &'static str,
        text: &'static str,
        parts: &'static [(&'static str, &'static Script)],
    ) -> Script {
        Script {
            name,
            flags,
            text,
            parts,
            source: OnceLock::new(),
            sha1: OnceLock::new(),
            function_name: OnceLock::new(),
        }
    }

    /// The full source sent with EVAL: the flags line, the prelude, the steps of the operation
    /// and of its parts, then the operation.
    pub fn source(&self) -> &str {
        self.source.get_or_init(|| {
            let shebang = if self.flags.is_empty() {
                "#!lua".to_string()
            } else {
                format!("#!lua flags={}", self.flags)
            };
            let mut steps = String::new();
            for script in self.parts.iter().map(|(_, part)| *part).chain([self]) {
                if !steps.contains(script.steps()) {
                    steps.push_str(script.steps());
                }
            }
            format!("{shebang}\n{COMMON}\n{steps}{BEGIN_CALL}{}", self.code())
        })
    }

    /// The script's steps: the text above [`STEPS_END`], or nothing.
    fn steps(&self) -> &'static str {
        match self.text.find(STEPS_END) {
            Some(at) => &self.text[..at],
            None => "",
        }
    }

    /// The code each call runs: the text below [`STEPS_END`], or all of it.
    fn body(&self) -> &'static str {
        match self.text.find(STEPS_END) {
            Some(at) => &self.text[at + STEPS_END.len()..],
            None => self.text,
        }
    }

    /// The operation's code after the prelude: its parts as local functions, then its body.
    fn code(&self) -> String {
        let mut code = String::new();
        for (function, part) in self.parts {
            code.push_str(&part_function(function, part));
        }
        code.push_str(self.body());
        code
    }

    /// The name of this operation's function in [`library`]: `<library name>_<operation>`.
    ///
    /// ```
    /// let name = crawlq::scripts::LEASE.function_name();
    /// assert!(name.starts_with(crawlq::scripts::library().name) && name.ends_with("_lease"));
    /// ```
    pub fn function_name(&self) -> &str {
        self.function_name
            .get_or_init(|| format!("{}_{}", library().name, self.name))
    }

    /// Lowercase hex SHA-1 of [`Script::source`], the name EVALSHA uses.
    ///
    /// ```
    /// assert_eq!(crawlq::scripts::LEASE.sha1().len(), 40);
    /// ```
    pub fn sha1(&self) -> &str {
        self.sha1
            .get_or_init(|| sha1_smol::Sha1::from(self.source()).digest().to_string())
    }
}

/// One operation as a local function another one calls: `local function <name>(ARGV)`, its
/// body, `end`.
fn part_function(name: &str, part: &Script) -> String {
    format!("local function {name}(ARGV)\n{}\nend\n", part.body())
}

impl std::fmt::Debug for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Script").field("name", &self.name).finish()
    }
}

macro_rules! scripts {
    ($($ident:ident => ($file:literal, $flags:literal $(, [$($part:ident: $of:ident),*])?)),* $(,)?) => {
        $(pub static $ident: Script = Script::new(
            $file,
            $flags,
            include_str!(concat!("../scripts/", $file, ".lua")),
            &[$($((stringify!($part), &$of)),*)?],
        );)*
        /// Every operation script.
        pub static ALL: &[&Script] = &[$(&$ident),*];
    };
}

// Seeding is the one operation refused when Redis is out of memory (it is what grows the
// dataset); draining operations stay allowed so workers can free memory. Reads are
// `no-writes`, so they also run on read-only replicas.
scripts! {
    SEED => ("seed", ""),
    LEASE => ("lease", "allow-oom"),
    ACK => ("ack", "allow-oom"),
    ACK_LEASE => ("ack_lease", "allow-oom", [ack_part: ACK, lease_part: LEASE]),
    ACK_SEED => ("ack_seed", "", [seed_part: SEED, ack_part: ACK]),
    ACK_SEED_LEASE => ("ack_seed_lease", "", [seed_part: SEED, ack_part: ACK, lease_part: LEASE]),
    NACK => ("nack", "allow-oom"),
    EXTEND => ("extend", "allow-oom"),
    RELEASE => ("release", "allow-oom"),
    RECLAIM => ("reclaim", "allow-oom"),
    STATS => ("stats", "no-writes"),
    CRAWL_STATS => ("crawl_stats", "no-writes"),
    CRAWL_CONFIG => ("crawl_config", "allow-oom"),
    CRAWLS_LIST => ("crawls_list", "no-writes"),
    CRAWL_DELETE => ("crawl_delete", "allow-oom"),
    STATS_SHARDS => ("stats_shards", "no-writes,allow-cross-slot-keys", [stats_part: STATS]),
    DEAD_LIST => ("dead_list", "no-writes"),
    LEASED_LIST => ("leased_list", "no-writes"),
    DEAD_REQUEUE => ("dead_requeue", "allow-oom"),
    DEAD_PURGE => ("dead_purge", "allow-oom"),
    HOST_CONFIG => ("host_config", "allow-oom"),
    HOST_TURN => ("host_turn", "allow-oom"),
    PEEK => ("peek", "no-writes"),
    SHARDS => ("shards", "allow-oom"),
    DUE => ("due", "allow-oom"),
    SHARD_STATE => ("shard_state", "no-writes"),
    SHARD_STATE_SHARDS => ("shard_state_shards", "no-writes,allow-cross-slot-keys", [shard_state_part: SHARD_STATE]),
    PAUSE => ("pause", "allow-oom"),
    HOST_BUDGET => ("host_budget", "allow-oom"),
    HOSTS_LIST => ("hosts_list", "no-writes"),
    HOSTS_LIST_SHARDS => ("hosts_list_shards", "no-writes,allow-cross-slot-keys", [hosts_list_part: HOSTS_LIST]),
    HOST_DELETE => ("host_delete", "allow-oom"),
    SEEN_FORGET => ("seen_forget", "allow-oom"),
    QUEUE_REMOVE => ("queue_remove", "allow-oom"),
}

/// Every operation as one Redis Functions library (Redis 7+): `#!lua name=<name>`, the
/// prelude and every script's steps once, then one `redis.register_function` per operation with
/// the script's flags and its body as the callback. The name carries a hash of the code, so clients of different
/// versions share a server without replacing each other's functions.
pub struct Library {
    /// `crawlq_<first 16 hex digits of the SHA-1 of the code>`.
    pub name: &'static str,
    /// The source `FUNCTION LOAD` takes.
    pub source: &'static str,
}

/// The functions library of this build (see [`Library`]).
///
/// ```
/// let lib = crawlq::scripts::library();
/// assert!(lib.source.starts_with(&format!("#!lua name={}\n", lib.name)));
/// ```
pub fn library() -> &'static Library {
    static LIBRARY: OnceLock<Library> = OnceLock::new();
    LIBRARY.get_or_init(|| {
        let mut code = sha1_smol::Sha1::new();
        code.update(COMMON.as_bytes());
        for script in ALL {
            code.update(script.name.as_bytes());
            code.update(script.flags.as_bytes());
            code.update(script.text.as_bytes());
            for (function, _) in script.parts {
                code.update(function.as_bytes());
            }
        }
        let name: &'static str =
            Box::leak(format!("crawlq_{}", &code.digest().to_string()[..16]).into_boxed_str());
        // (a library's Lua state lives from call to call: its first call marks it, LUA_STATE)
        let mut source = format!("#!lua name={name}\n{COMMON}\nLUA_STATE = false\n");
        for script in ALL {
            source.push_str(script.steps());
        }
        // Operations made of others (ack_lease: ack, then lease) call them as functions defined
        // once here, outside the callbacks: a callback reaches every name its nested functions
        // reach, and Lua allows a function 60 of them (ack and lease together have more).
        let mut defined: Vec<&str> = Vec::new();
        for script in ALL {
            for (function, part) in script.parts {
                if !defined.contains(function) {
                    defined.push(function);
                    source.push_str(&part_function(function, part));
                }
            }
        }
        for script in ALL {
            let flags: Vec<String> = script
                .flags
                .split(',')
                .filter(|f| !f.is_empty())
                .map(|f| format!("'{f}'"))
                .collect();
            source.push_str(&format!(
                "redis.register_function{{function_name='{name}_{}', flags={{{}}}, callback=function(KEYS, ARGV)\n{BEGIN_CALL}{}\nend}}\n",
                script.name,
                flags.join(", "),
                script.body()
            ));
        }
        Library {
            name,
            source: Box::leak(source.into_boxed_str()),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The least-privilege ACL line in docs/PROTOCOL.md allows every command the scripts call.
    #[test]
    fn the_documented_acl_allows_every_command_the_scripts_call() {
        let protocol = include_str!("../../docs/PROTOCOL.md");
        let acl = protocol
            .lines()
            .find(|l| l.starts_with("ACL SETUSER crawler "))
            .expect("docs/PROTOCOL.md has the ACL line");
        let allowed: Vec<String> = acl
            .split_whitespace()
            .filter_map(|w| w.strip_prefix('+'))
            .map(str::to_uppercase)
            .collect();
        let mut used = Vec::new();
        for source in ALL.iter().map(|s| s.text).chain([COMMON]) {
            for marker in ["redis.call('", "redis.pcall('", "call_chunked('"] {
                for (at, _) in source.match_indices(marker) {
                    let rest = &source[at + marker.len()..];
                    used.push(rest[..rest.find('\'').unwrap()].to_string());
                }
            }
        }
        used.sort();
        used.dedup();
        assert!(used.len() > 20, "{used:?}");
        for command in used {
            // (a command allowed for one subcommand, `+object|encoding`, is called for it only)
            let subcommand = format!("{command}|");
            assert!(
                allowed.contains(&command) || allowed.iter().any(|a| a.starts_with(&subcommand)),
                "{command} is missing from the ACL line"
            );
        }
    }

    /// Each Lua file documents its flags in its header; the header and the table agree, and
    /// every file starts with the common header shape.
    #[test]
    fn headers_match_the_script_table() {
        for script in ALL {
            let lines: Vec<&str> = script.text.lines().take(6).collect();
            assert_eq!(lines[0], format!("-- crawlq script: {}", script.name));
            assert_eq!(lines[1], "-- protocol: 7");
            let flags = if script.flags.is_empty() {
                "(none)"
            } else {
                script.flags
            };
            assert_eq!(lines[2], format!("-- flags: {flags}"), "{}", script.name);
            assert!(lines[3].starts_with("-- KEYS: "), "{}", script.name);
            assert!(lines[4].starts_with("-- ARGV: "), "{}", script.name);
            assert!(script.text.contains("\n-- reply: "), "{}", script.name);
            assert!(script.source().starts_with("#!lua"));
        }
    }
}
