//! Decoder limits: the budget an untrusted input may spend.

/// Bounds for one decode call. Every value, container and byte counts against them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Deepest nesting of containers (arrays, maps and structured ext types).
    pub max_depth: usize,
    /// Largest accepted input, in bytes.
    pub max_size: usize,
    /// Most values (scalars and containers) one input may hold.
    pub max_items: usize,
}

impl Limits {
    pub const DEFAULT_MAX_DEPTH: usize = 512;
    pub const DEFAULT_MAX_SIZE: usize = 1 << 30;
    pub const DEFAULT_MAX_ITEMS: usize = 1 << 26;
    /// The largest `max_depth` an encode or decode accepts. Both walk with an explicit stack
    /// on the heap, so this only bounds what a mistaken argument can cost.
    pub const MAX_DEPTH_LIMIT: usize = 100_000;
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_depth: Self::DEFAULT_MAX_DEPTH,
            max_size: Self::DEFAULT_MAX_SIZE,
            max_items: Self::DEFAULT_MAX_ITEMS,
        }
    }
}
