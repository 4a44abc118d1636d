//! The Lua scripts, one per atomic operation, each prefixed with the shared prelude
//! `common.lua`. Loaded with `include_str!` and run by EVALSHA with an EVAL fallback.

use std::sync::OnceLock;

/// One operation script.
pub struct Script {
    pub name: &'static str,
    body: &'static str,
    source: OnceLock<String>,
    sha1: OnceLock<String>,
}

const COMMON: &str = include_str!("../scripts/common.lua");

impl Script {
    const fn new(name: &'static str, body: &'static str) -> Script {
        Script {
            name,
            body,
            source: OnceLock::new(),
            sha1: OnceLock::new(),
        }
    }

    /// The full source sent with EVAL: the prelude followed by the operation.
    pub fn source(&self) -> &str {
        self.source
            .get_or_init(|| format!("{COMMON}\n{}", self.body))
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

impl std::fmt::Debug for Script {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Script").field("name", &self.name).finish()
    }
}

macro_rules! scripts {
    ($($ident:ident => $file:literal),* $(,)?) => {
        $(pub static $ident: Script = Script::new($file, include_str!(concat!("../scripts/", $file, ".lua")));)*
        /// Every operation script.
        pub static ALL: &[&Script] = &[$(&$ident),*];
    };
}

scripts! {
    SEED => "seed",
    LEASE => "lease",
    ACK => "ack",
    NACK => "nack",
    EXTEND => "extend",
    RELEASE => "release",
    RECLAIM => "reclaim",
    STATS => "stats",
    DEAD_LIST => "dead_list",
    DEAD_REQUEUE => "dead_requeue",
    DEAD_PURGE => "dead_purge",
    HOST_CONFIG => "host_config",
    PEEK => "peek",
}
