//! Helpers the bindings share: timeouts and blocking waits, the asyncio look-ups (the running
//! loop, the refusal to block one, the error a done future raises), resolving a parked
//! waiter's future, `EMPTY`, generic aliases and type names for error messages.
//!
//! Binding modules import their helpers from here, never from each other.

use std::time::{Duration, Instant};

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

// ---------------------------------------------------------------------------------------
// Timeouts

/// How long a blocked wait sleeps before re-checking for Ctrl-C.
pub(crate) const SIGNAL_CHECK_INTERVAL: Duration = Duration::from_millis(50);

/// How long one blocking wait may sleep before the caller re-checks Ctrl-C and the deadline.
pub(crate) fn wait_slice(deadline: Option<Instant>) -> Duration {
    match deadline {
        None => SIGNAL_CHECK_INTERVAL,
        Some(d) => d
            .saturating_duration_since(Instant::now())
            .min(SIGNAL_CHECK_INTERVAL),
    }
}

/// The deadline `timeout` seconds from now: None waits forever.
pub(crate) fn deadline_after(timeout: Option<f64>) -> PyResult<Option<Instant>> {
    let Some(secs) = timeout else { return Ok(None) };
    // NaN fails every comparison, so it is rejected here too.
    if secs.is_nan() || secs < 0.0 {
        return Err(PyValueError::new_err(format!(
            "timeout must be None or a non-negative number of seconds, got {secs}"
        )));
    }
    // A timeout too large to represent means "wait forever".
    Ok(Duration::try_from_secs_f64(secs)
        .ok()
        .and_then(|d| Instant::now().checked_add(d)))
}

/// `timeout=`: None or a real number of seconds (checked by `deadline_after`).
pub(crate) fn timeout_arg(timeout: Option<&Bound<'_, PyAny>>) -> PyResult<Option<f64>> {
    let Some(timeout) = timeout.filter(|t| !t.is_none()) else {
        return Ok(None);
    };
    if let Ok(secs) = timeout.extract::<f64>() {
        return Ok(Some(secs));
    }
    Err(PyTypeError::new_err(format!(
        "timeout must be None or a number of seconds, got {}",
        type_name(timeout)
    )))
}

// ---------------------------------------------------------------------------------------
// asyncio

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

/// Whether a wakeup of a future of `event_loop` may resolve it here and now rather than
/// through `call_soon_threadsafe`: when the loop is the one running on this thread, or runs
/// nowhere (no thread to wake). `parked_here`, the waiter parked on this thread, is the cheap
/// test of the common case: its loop then runs here unless it moved (a loop's turns may run
/// on different threads, as Temporal's do). Checked by the loop, never by the thread alone.
pub fn wakes_directly(
    py: Python<'_>,
    event_loop: &Bound<'_, PyAny>,
    parked_here: bool,
) -> PyResult<bool> {
    let running = asyncio_attr(py, &PEEK_RUNNING_LOOP, "_get_running_loop")?.call0()?;
    if running.is(event_loop) {
        return Ok(true);
    }
    if parked_here && running.is_none() {
        // this thread runs no loop: the waiter's loop is stopped, or went on elsewhere
        return Ok(!event_loop
            .call_method0(pyo3::intern!(py, "is_running"))?
            .is_truthy()?);
    }
    Ok(false)
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

/// Resolves a parked receiver's future. A future that is already done was cancelled: its
/// receiver passes the wakeup on itself (see `_unpark`), so that still counts as delivered.
pub(crate) fn resolve_future(fut: &Bound<'_, PyAny>) {
    let py = fut.py();
    // Calling set_result and ignoring InvalidStateError is one call instead of done() first.
    let _ = fut.call_method1(pyo3::intern!(py, "set_result"), (py.None(),));
}

#[pyfunction]
fn _resolve_future(fut: &Bound<'_, PyAny>) {
    resolve_future(fut);
}

static RESOLVER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

pub(crate) fn resolver(py: Python<'_>) -> &Bound<'_, PyAny> {
    RESOLVER
        .get_or_init(py, || {
            wrap_pyfunction!(_resolve_future, py)
                .expect("creating the wakeup callback")
                .into_any()
                .unbind()
        })
        .bind(py)
}

// ---------------------------------------------------------------------------------------
// Small shared pieces

/// The type of the `EMPTY` sentinel that `try_recv` returns when nothing is queued.
#[pyclass(frozen, module = "rillet")]
pub struct Empty;

#[pymethods]
impl Empty {
    fn __repr__(&self) -> &'static str {
        "rillet.EMPTY"
    }

    fn __bool__(&self) -> bool {
        false
    }
}

static EMPTY: PyOnceLock<Py<Empty>> = PyOnceLock::new();

pub fn empty(py: Python<'_>) -> &Py<Empty> {
    EMPTY.get_or_init(py, || {
        Py::new(py, Empty).expect("allocating the EMPTY sentinel")
    })
}

/// `Cls[item]` in annotations: a `types.GenericAlias`.
pub(crate) fn generic_alias<'py>(
    cls: &Bound<'py, PyType>,
    item: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyAny>> {
    cls.py()
        .import("types")?
        .getattr("GenericAlias")?
        .call1((cls, item))
}

/// The name of `obj`'s type, for error messages.
pub(crate) fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map_or_else(|_| "an object".to_owned(), |n| n.to_string())
}
