//! The Python exception hierarchy of rillet, rooted at `RilletError`.
//!
//! Every error raised from Rust is one of these (or a builtin such as ValueError where the
//! stdlib convention is clearer), so `except rillet.RilletError` catches what rillet raises.

use std::ffi::CStr;

use pyo3::create_exception;
use pyo3::exceptions::{PyException, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyTuple, PyType};

create_exception!(
    rillet,
    RilletError,
    PyException,
    "Base class of every error rillet raises."
);
create_exception!(
    rillet,
    EndOfStream,
    RilletError,
    "The end of a stream of items: every item has been received. Raised again by every \
     later receive. `except rillet.EndOfStream` catches the end of a Channel and of a \
     StreamReader."
);
create_exception!(
    rillet,
    ChannelClosed,
    EndOfStream,
    "The channel was closed and every queued item has been received."
);
create_exception!(
    rillet,
    StreamEOF,
    EndOfStream,
    "The stream has ended: every item has been received. Raised again by every later receive."
);

// Errors with two bases (rillet's and the builtin a caller may already catch) are made at
// first use, because `create_exception!` allows one base class only.

/// `rillet.ConcatError`: message chunks that cannot be concatenated (a ValueError).
static CONCAT_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
/// `rillet.codec.DecodeError`: a RilletError and a ValueError.
static DECODE_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();
/// `rillet.codec.EncodeError`: a RilletError and a TypeError.
static ENCODE_ERROR: PyOnceLock<Py<PyType>> = PyOnceLock::new();

pub fn concat_error(py: Python<'_>) -> &Bound<'_, PyType> {
    let doc = c"Message chunks that cannot be concatenated; `field` names the offending field.";
    exception_type(
        py,
        &CONCAT_ERROR,
        c"rillet.ConcatError",
        doc,
        py.get_type::<PyValueError>(),
    )
}

pub fn decode_error(py: Python<'_>) -> &Bound<'_, PyType> {
    let doc = c"The bytes are not a valid rillet checkpoint, or break a decode limit.";
    exception_type(
        py,
        &DECODE_ERROR,
        c"rillet.DecodeError",
        doc,
        py.get_type::<PyValueError>(),
    )
}

pub fn encode_error(py: Python<'_>) -> &Bound<'_, PyType> {
    let doc = c"The object cannot be written as a rillet checkpoint (unregistered type, cycle...).";
    exception_type(
        py,
        &ENCODE_ERROR,
        c"rillet.EncodeError",
        doc,
        py.get_type::<PyTypeError>(),
    )
}

fn exception_type<'py>(
    py: Python<'py>,
    cell: &'static PyOnceLock<Py<PyType>>,
    name: &CStr,
    doc: &CStr,
    builtin: Bound<'py, PyType>,
) -> &'py Bound<'py, PyType> {
    cell.get_or_init(py, || {
        let bases = PyTuple::new(py, [py.get_type::<RilletError>(), builtin])
            .expect("a tuple of two types");
        // SAFETY: valid NUL-terminated strings and a tuple of exception types; the result is
        // a new reference or NULL with an exception set.
        let ty = unsafe {
            let ptr = ffi::PyErr_NewExceptionWithDoc(
                name.as_ptr(),
                doc.as_ptr(),
                bases.as_ptr(),
                std::ptr::null_mut(),
            );
            Bound::from_owned_ptr_or_err(py, ptr)
        };
        ty.and_then(|t| Ok(t.cast_into::<PyType>()?.unbind()))
            .expect("creating a rillet exception type")
    })
    .bind(py)
}
