//! The defaults of the bindings' bounded calls, the same in every language (the Rust API takes
//! each one explicitly). Python's and PHP's signatures spell them as literals, which
//! `core/tests/surfaces.rs` checks against these.
//!
//! ```
//! use crawlq::binding::defaults;
//! assert!(defaults::PEEK_LIMIT < defaults::DEAD_PAGE);
//! ```

/// `reclaim()`: the most expired leases one call takes back.
pub const RECLAIM_LIMIT: usize = 1000;
/// `dead()`: dead letters per page.
pub const DEAD_PAGE: usize = 100;
/// `leased_items()`: leases per page.
pub const LEASED_PAGE: usize = 100;
/// `list_hosts()`: hosts per page.
pub const HOSTS_PAGE: usize = 100;
/// `peek()`: the most items shown.
pub const PEEK_LIMIT: usize = 10;
