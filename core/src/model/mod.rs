//! The values operations take and return, by domain.

mod hosts;
mod lease;
mod seed;
mod stats;

pub use hosts::*;
pub use lease::*;
pub use seed::*;
pub use stats::*;
