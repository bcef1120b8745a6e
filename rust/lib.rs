//! rillet's native core: data movement for the Python agent framework.
//!
//! Pure-Rust modules (`channel`, ...) hold the logic and are tested by `cargo test`;
//! `py` holds the thin PyO3 bindings, exposed to Python as `rillet._native`.

pub mod channel;
pub mod codec;
pub mod concat;
pub mod message;
pub mod py;
pub mod sse;
pub mod stream;

use pyo3::prelude::*;

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

#[pymodule]
mod _native {
    use super::*;

    #[pymodule_export]
    use crate::py::channel::{Channel, Empty};
    #[pymodule_export]
    use crate::py::checkpoint::events_from_records;
    #[pymodule_export]
    use crate::py::codec::{codec_decode, codec_encode};
    #[pymodule_export]
    use crate::py::concat::{concat_messages, MessageAccumulator};
    #[pymodule_export]
    use crate::py::errors::{ChannelClosed, EndOfStream, RilletError, StreamEOF};
    #[pymodule_export]
    use crate::py::message::{ContentPart, FunctionCall, Message, ResponseMeta, ToolCall, Usage};
    #[pymodule_export]
    use crate::py::recv_awaitable::Recv;
    #[pymodule_export]
    use crate::py::sse::{parse_chat_completion, ChatStreamParser};
    #[pymodule_export]
    use crate::py::stream::{
        concat_message_stream, convert_stream, merge_named_streams, merge_streams, pipe,
        stream_from_list, NoValue, SourceEOF, StreamReader, StreamWriter,
    };

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        crate::py::recv_awaitable::install_slots(m.py());
        crate::py::fast_paths::install(m.py())?;
        m.add("EMPTY", crate::py::channel::empty(m.py()))?;
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        m.add("NO_VALUE", crate::py::stream::no_value(m.py()))?;
        m.add("ConcatError", crate::py::errors::concat_error(m.py()))?;
        m.add("DecodeError", crate::py::errors::decode_error(m.py()))?;
        m.add("EncodeError", crate::py::errors::encode_error(m.py()))?;
        Ok(())
    }
}
