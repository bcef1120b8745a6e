//! Checked constructors for the codec. PyO3's own (`PyBytes::new`, `PyString::new`,
//! `PyDict::new`, `PyList::new`) panic when CPython cannot allocate, which loses the
//! MemoryError; these return it, so a failed allocation always raises.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

/// Wraps a new reference returned by the C API (NULL means an exception is set).
///
/// # Safety
/// `ptr` must be the result of a C API call returning a new reference or NULL.
#[inline]
pub unsafe fn owned<'py>(py: Python<'py>, ptr: *mut ffi::PyObject) -> PyResult<Bound<'py, PyAny>> {
    Bound::from_owned_ptr_or_err(py, ptr)
}

pub fn new_bytes<'py>(py: Python<'py>, b: &[u8]) -> PyResult<Bound<'py, PyBytes>> {
    // SAFETY: a valid pointer and length; a new reference or NULL with an exception set.
    unsafe {
        let p = ffi::PyBytes_FromStringAndSize(b.as_ptr().cast(), b.len() as ffi::Py_ssize_t);
        Ok(owned(py, p)?.cast_into_unchecked())
    }
}

pub fn new_str<'py>(py: Python<'py>, s: &str) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: as above; `s` is valid UTF-8.
    unsafe {
        owned(
            py,
            ffi::PyUnicode_FromStringAndSize(s.as_ptr().cast(), s.len() as ffi::Py_ssize_t),
        )
    }
}

pub fn new_dict(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    // SAFETY: a new reference or NULL with an exception set.
    unsafe { Ok(owned(py, ffi::PyDict_New())?.cast_into_unchecked()) }
}

/// A list of `items`.
pub fn new_list<'py>(
    py: Python<'py>,
    items: impl ExactSizeIterator<Item = PyResult<Bound<'py, PyAny>>>,
) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: a new list of n NULL slots, each filled at most once with a stolen reference
    // (a list left with NULL slots by an error is still freed safely).
    unsafe {
        let list = owned(py, ffi::PyList_New(items.len() as ffi::Py_ssize_t))?;
        for (i, v) in items.enumerate() {
            ffi::PyList_SET_ITEM(list.as_ptr(), i as ffi::Py_ssize_t, v?.into_ptr());
        }
        Ok(list)
    }
}

/// `f(*args)`.
pub fn call<'py>(
    f: &Bound<'py, PyAny>,
    args: &[&Bound<'py, PyAny>],
) -> PyResult<Bound<'py, PyAny>> {
    let ptrs: Vec<*mut ffi::PyObject> = args.iter().map(|a| a.as_ptr()).collect();
    // SAFETY: `f` and every argument are live (borrowed for the call); a new reference or
    // NULL with an exception set.
    unsafe {
        let p =
            ffi::PyObject_Vectorcall(f.as_ptr(), ptrs.as_ptr(), ptrs.len(), std::ptr::null_mut());
        owned(f.py(), p)
    }
}

/// `getattr(o, name)`.
pub fn attr<'py>(o: &Bound<'py, PyAny>, name: &std::ffi::CStr) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: a live object and a NUL-terminated name; a new reference or NULL.
    unsafe {
        owned(
            o.py(),
            ffi::PyObject_GetAttrString(o.as_ptr(), name.as_ptr()),
        )
    }
}

/// Whether a caught panic is PyO3's for a NULL from a C API constructor: CPython could not
/// allocate (PyO3 reports the MemoryError as unraisable before panicking).
pub fn is_null_panic(payload: &(dyn std::any::Any + Send)) -> bool {
    let text = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
    text == Some("PyObject pointer is null")
}
