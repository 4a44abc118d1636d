//! What the language bindings share, and the Rust API does not need: the JSON boundary every
//! binding converts its values through (`json`), the defaults of bounded calls (`defaults`), the iterator behind `work()` (`work`), calls of one shape in every language (`calls`), the JSON methods of
//! both JavaScript packages declared once (`js`), the
//! leases a client holds for `extend_held` / `release_held` (`held`) and the process-wide
//! runtime of the blocking bindings (`process`) and the long calls that report their progress
//! to a caller's callback (`progress`). Hidden from the crate's documentation; the
//! bindings in this repository are its only users, and it may change with them.

pub mod calls;
pub mod defaults;
pub mod held;
pub mod js;
pub mod json;
#[cfg(feature = "redis-executor")]
pub mod process;
pub mod progress;
pub mod work;

pub use work::{HeldByLoop, LeaseCursor, Popped, Work};
