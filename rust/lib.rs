//! rillet's native core: data movement for the Python agent framework.
//!
//! Pure-Rust modules (`channel`, ...) hold the logic and are tested by `cargo test`;
//! `py` holds the thin PyO3 bindings, exposed to Python as `rillet._native`.

pub mod anthropic;
pub mod channel;
pub mod codec;
pub mod concat;
pub mod message;
pub mod parts;
pub mod py;
pub mod responses;
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

/// The module's initialisation. rillet's caches (stdlib types, exception classes, event
/// loop helpers, channel and stream statics) are process-wide and hold the objects of the
/// interpreter that filled them, so loading in a second interpreter is refused before any
/// of them is touched (PyO3's multi-phase modules would otherwise load there).
#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    use crate::py::{anthropic, responses, sse, stream};
    use crate::py::{channel, checkpoint, codec, concat, errors, message, recv_awaitable};
    let py = m.py();
    crate::py::require_main_interpreter(py)?;
    m.add_class::<anthropic::AnthropicStreamParser>()?;
    m.add_function(wrap_pyfunction!(anthropic::parse_anthropic_message, m)?)?;
    m.add_class::<channel::Channel>()?;
    m.add_class::<channel::Empty>()?;
    m.add_function(wrap_pyfunction!(checkpoint::events_from_records, m)?)?;
    m.add_function(wrap_pyfunction!(codec::codec_decode, m)?)?;
    m.add_function(wrap_pyfunction!(codec::codec_encode, m)?)?;
    m.add_function(wrap_pyfunction!(concat::concat_messages, m)?)?;
    m.add_class::<concat::MessageAccumulator>()?;
    // set, not added: a private hook for rillet.errors stays out of the module's __all__
    m.setattr("_init_errors", wrap_pyfunction!(errors::init_errors, m)?)?;
    m.add_class::<message::ContentPart>()?;
    m.add_class::<message::FunctionCall>()?;
    m.add_class::<message::Message>()?;
    m.add_class::<message::ResponseMeta>()?;
    m.add_class::<message::ToolCall>()?;
    m.add_class::<message::Usage>()?;
    m.add_class::<recv_awaitable::Recv>()?;
    m.add_function(wrap_pyfunction!(responses::parse_response, m)?)?;
    m.add_class::<responses::ResponsesStreamParser>()?;
    m.add_function(wrap_pyfunction!(sse::parse_chat_completion, m)?)?;
    m.add_class::<sse::ChatStreamParser>()?;
    m.add_function(wrap_pyfunction!(stream::concat_message_stream, m)?)?;
    m.add_function(wrap_pyfunction!(stream::convert_stream, m)?)?;
    m.add_function(wrap_pyfunction!(stream::merge_named_streams, m)?)?;
    m.add_function(wrap_pyfunction!(stream::merge_streams, m)?)?;
    m.add_function(wrap_pyfunction!(stream::pipe, m)?)?;
    m.add_function(wrap_pyfunction!(stream::stream_from_list, m)?)?;
    m.add_class::<stream::NoValue>()?;
    m.add_class::<stream::SourceEOF>()?;
    m.add_class::<stream::StreamReader>()?;
    m.add_class::<stream::StreamWriter>()?;

    recv_awaitable::install_slots(py);
    crate::py::fast_paths::install(py)?;
    m.add("EMPTY", channel::empty(py))?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("NO_VALUE", stream::no_value(py))?;
    Ok(())
}
