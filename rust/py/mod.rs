//! Thin PyO3 bindings over the pure-Rust modules. Logic lives in the parent modules.

pub mod channel;
pub mod codec;
pub mod errors;
