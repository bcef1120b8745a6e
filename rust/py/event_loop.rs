//! The asyncio look-ups the bindings need, cached: the running loop, whether this thread is
//! running one (blocking there would freeze every task on the loop), and the error a done
//! future raises when resolved again.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;

static GET_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static PEEK_RUNNING_LOOP: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
static INVALID_STATE_ERROR: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

fn asyncio_attr<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyAny>>,
    name: &str,
) -> PyResult<&'py Bound<'py, PyAny>> {
    let f = cell.get_or_try_init(py, || {
        py.import("asyncio")?.getattr(name).map(Bound::unbind)
    })?;
    Ok(f.bind(py))
}

/// `asyncio.get_running_loop()`: RuntimeError when no loop runs on this thread.
pub fn running_loop(py: Python<'_>) -> PyResult<Bound<'_, PyAny>> {
    asyncio_attr(py, &GET_RUNNING_LOOP, "get_running_loop")?.call0()
}

/// A clear error instead of a frozen event loop: `what` is about to block this thread, which
/// is running an event loop; `instead` names the awaitable to use.
pub fn refuse_inside_event_loop(py: Python<'_>, what: &str, instead: &str) -> PyResult<()> {
    if asyncio_attr(py, &PEEK_RUNNING_LOOP, "_get_running_loop")?
        .call0()?
        .is_none()
    {
        return Ok(());
    }
    Err(PyRuntimeError::new_err(format!(
        "{what} would block the running event loop; use {instead} instead"
    )))
}

/// `asyncio.InvalidStateError`: what `set_result` raises on a future that is already done.
pub fn invalid_state_error(py: Python<'_>) -> PyResult<&Bound<'_, PyAny>> {
    asyncio_attr(py, &INVALID_STATE_ERROR, "InvalidStateError")
}
