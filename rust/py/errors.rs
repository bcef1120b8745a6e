//! The Python exception hierarchy of rillet, rooted at `RilletError`.
//!
//! Every error raised from Rust is one of these (or a builtin such as ValueError where the
//! stdlib convention is clearer), so `except rillet.RilletError` catches what rillet raises.

use pyo3::create_exception;
use pyo3::exceptions::PyException;

create_exception!(
    rillet,
    RilletError,
    PyException,
    "Base class of every error rillet raises."
);
create_exception!(
    rillet,
    ChannelClosed,
    RilletError,
    "The channel was closed: nothing more can be sent, and every item has been received."
);
create_exception!(
    rillet,
    StreamEOF,
    RilletError,
    "The stream has ended: every item has been received. Raised again by every later receive."
);

static CONCAT_ERROR: pyo3::sync::PyOnceLock<pyo3::Py<pyo3::types::PyType>> =
    pyo3::sync::PyOnceLock::new();

/// `ConcatError(RilletError, ValueError)`: chunks that cannot be concatenated. It has two
/// bases, which `create_exception!` cannot express, so the class is built once at runtime.
pub fn concat_error_type(
    py: pyo3::Python<'_>,
) -> pyo3::PyResult<&pyo3::Bound<'_, pyo3::types::PyType>> {
    use pyo3::prelude::*;
    let cls = CONCAT_ERROR.get_or_try_init(py, || -> PyResult<_> {
        let bases = (
            py.get_type::<RilletError>(),
            py.get_type::<pyo3::exceptions::PyValueError>(),
        );
        let ns = pyo3::types::PyDict::new(py);
        ns.set_item("__module__", "rillet")?;
        ns.set_item(
            "__doc__",
            "Message chunks that cannot be concatenated; `field` names the offending field.",
        )?;
        let cls = py
            .get_type::<pyo3::types::PyType>()
            .call1(("ConcatError", bases, ns))?;
        Ok(cls.cast_into::<pyo3::types::PyType>()?.unbind())
    })?;
    Ok(cls.bind(py))
}
