//! rillet's native core: data movement for the Python agent framework.
//!
//! Pure-Rust modules (`channel`, `stream`, `message`, `concat`, `sse`, `codec`) hold the
//! logic and are tested by `cargo test`; `py` holds the thin PyO3 bindings, exposed to Python
//! as `rillet._native`. The modules are private: what the crate offers as a Rust library is
//! re-exported below.

mod agentic;
mod channel;
mod codec;
mod concat;
mod message;
mod parts;
mod py;
mod sse;
mod stream;

use pyo3::prelude::*;

// The crate as a Rust library: the pure-Rust cores, without Python. `cargo test` drives them,
// and the fuzz targets (fuzz/) compile the codec core's sources and use the codec's names.
pub use agentic::{
    concat as concat_agentic, AgenticAccumulator, AgenticMessage, BlockKind, ContentBlock,
    ConversionError,
};
pub use channel::Channel;
pub use codec::decode::{decode, Builder};
pub use codec::value::{encode, encode_version, Value, ValueBuilder};
pub use codec::Limits;
pub use concat::{concat_messages, Accumulator, UsagePolicy};
pub use message::Message;
pub use sse::{
    AnthropicStreamParser, ChatStreamParser, ParserOptions, Protocol, ResponsesStreamParser,
    SseDecoder, SseEvent, SseLimits, StreamError, StreamParser,
};
pub use stream::{Pipe, Tee};

/// mimalloc for every Rust allocation of the extension: decoding a checkpoint allocates
/// many small strings and vectors, and glibc's malloc took about a quarter of the decode's
/// instructions (benches/codec_callgrind.py). Python's own objects are unaffected.
#[global_allocator]
static ALLOCATOR: Allocator = Allocator;

/// mimalloc, called without its aligned entry points for word alignment, which every
/// mimalloc block has (as every `malloc` block): its aligned path cost a tenth of a
/// checkpoint decode. Larger alignments (hash tables' 16) take the aligned functions.
struct Allocator;

impl Allocator {
    #[inline]
    fn plain(layout: std::alloc::Layout) -> bool {
        layout.align() <= std::mem::align_of::<usize>()
    }
}

// SAFETY: every block comes from mimalloc and goes back to it; a layout whose alignment a
// plain mimalloc block does not guarantee goes through mimalloc's aligned functions.
unsafe impl std::alloc::GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: std::alloc::Layout) -> *mut u8 {
        use libmimalloc_sys::{mi_malloc, mi_malloc_aligned};
        if Self::plain(layout) {
            mi_malloc(layout.size()).cast()
        } else {
            mi_malloc_aligned(layout.size(), layout.align()).cast()
        }
    }

    unsafe fn alloc_zeroed(&self, layout: std::alloc::Layout) -> *mut u8 {
        use libmimalloc_sys::{mi_zalloc, mi_zalloc_aligned};
        if Self::plain(layout) {
            mi_zalloc(layout.size()).cast()
        } else {
            mi_zalloc_aligned(layout.size(), layout.align()).cast()
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, _layout: std::alloc::Layout) {
        libmimalloc_sys::mi_free(ptr.cast());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: std::alloc::Layout, new_size: usize) -> *mut u8 {
        use libmimalloc_sys::{mi_realloc, mi_realloc_aligned};
        let new = std::alloc::Layout::from_size_align_unchecked(new_size, layout.align());
        if Self::plain(layout) && Self::plain(new) {
            mi_realloc(ptr.cast(), new_size).cast()
        } else {
            mi_realloc_aligned(ptr.cast(), new_size, layout.align()).cast()
        }
    }
}

/// The module's initialisation: the classes, functions and constants of `rillet._native`
/// ([`py::init`]).
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    py::init(m)
}
