//! Thin PyO3 bindings over the pure-Rust modules. Logic lives in the parent modules.

pub mod anthropic;
pub mod channel;
pub mod checkpoint;
pub mod codec;
pub mod concat;
pub mod errors;
pub mod event_loop;
pub mod fast_paths;
pub mod message;
pub mod recv_awaitable;
pub mod responses;
pub mod sse;
pub mod stream;

/// The ImportError raised when rillet is loaded in a subinterpreter.
pub const ONLY_MAIN_INTERPRETER: &str = "rillet supports only the main interpreter: its native \
    caches are process-wide and hold the objects of the interpreter that filled them, so it \
    cannot be imported in a subinterpreter. Import rillet in the main interpreter, or use a \
    separate process (multiprocessing, concurrent.futures.ProcessPoolExecutor).";

/// Refuses any interpreter but the main one (see [`ONLY_MAIN_INTERPRETER`]).
pub fn require_main_interpreter(_py: pyo3::Python<'_>) -> pyo3::PyResult<()> {
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
