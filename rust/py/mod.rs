//! Thin PyO3 bindings over the pure-Rust modules. Logic lives in the parent modules.

pub mod channel;
pub mod checkpoint;
pub mod codec;
pub mod concat;
pub mod errors;
pub mod event_loop;
pub mod fast_paths;
pub mod message;
pub mod recv_awaitable;
pub mod sse;
pub mod stream;
