//! Thin PyO3 bindings over the pure-Rust modules. Logic lives in the parent modules; the
//! helpers the bindings share (timeouts, asyncio look-ups, future resolution) live in `util`,
//! so no binding module imports another for a helper.

mod agentic;
mod channel;
mod checkpoint;
mod codec;
mod concat;
mod errors;
mod handoff;
mod message;
mod sse;
mod stream;
mod util;

use pyo3::prelude::*;

/// The ImportError raised when rillet is loaded in a subinterpreter.
pub const ONLY_MAIN_INTERPRETER: &str = "rillet supports only the main interpreter: its native \
    caches are process-wide and hold the objects of the interpreter that filled them, so it \
    cannot be imported in a subinterpreter. Import rillet in the main interpreter, or use a \
    separate process (multiprocessing, concurrent.futures.ProcessPoolExecutor).";

/// Refuses any interpreter but the main one (see [`ONLY_MAIN_INTERPRETER`]).
fn require_main_interpreter(_py: pyo3::Python<'_>) -> pyo3::PyResult<()> {
    // SAFETY: called with the GIL held (`_py`); both return the live interpreter states.
    let main =
        unsafe { pyo3::ffi::PyInterpreterState_Get() == pyo3::ffi::PyInterpreterState_Main() };
    if main {
        Ok(())
    } else {
        Err(pyo3::exceptions::PyImportError::new_err(
            ONLY_MAIN_INTERPRETER,
        ))
    }
}

/// Fills the module `rillet._native`. rillet's caches (stdlib types, exception classes, event
/// loop helpers, channel and stream statics) are process-wide and hold the objects of the
/// interpreter that filled them, so loading in a second interpreter is refused before any
/// of them is touched (PyO3's multi-phase modules would otherwise load there).
pub fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    require_main_interpreter(py)?;
    m.add_class::<sse::AnthropicStreamParser>()?;
    m.add_function(wrap_pyfunction!(sse::parse_anthropic_message, m)?)?;
    m.add_class::<channel::Channel>()?;
    m.add_class::<util::Empty>()?;
    m.add_function(wrap_pyfunction!(checkpoint::events_from_records, m)?)?;
    m.add_function(wrap_pyfunction!(codec::codec_decode, m)?)?;
    m.add_function(wrap_pyfunction!(codec::codec_encode, m)?)?;
    m.add_function(wrap_pyfunction!(concat::concat_messages, m)?)?;
    m.add_class::<concat::MessageAccumulator>()?;
    // set, not added: a private hook for rillet.errors stays out of the module's __all__
    m.setattr("_init_errors", wrap_pyfunction!(errors::init_errors, m)?)?;
    // set, not added: the worker pool's internals (rillet._core.workers) stay out of __all__
    m.setattr("Handoff", py.get_type::<handoff::Handoff>())?;
    m.setattr("WorkQueue", py.get_type::<handoff::WorkQueue>())?;
    m.add_class::<agentic::AgenticMessage>()?;
    m.add_class::<agentic::ContentBlock>()?;
    m.add_class::<message::ContentPart>()?;
    m.add_class::<message::FunctionCall>()?;
    m.add_class::<message::Message>()?;
    m.add_class::<message::ResponseMeta>()?;
    m.add_class::<message::ToolCall>()?;
    m.add_class::<message::Usage>()?;
    m.add_class::<channel::Recv>()?;
    m.add_function(wrap_pyfunction!(sse::parse_response, m)?)?;
    m.add_class::<sse::ResponsesStreamParser>()?;
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

    channel::install_slots(py);
    channel::install_fast_paths(py)?;
    m.add("EMPTY", util::empty(py))?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("NO_VALUE", stream::no_value(py))?;
    Ok(())
}
