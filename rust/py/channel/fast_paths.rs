//! Direct CPython entry points for the per-item channel operations.
//!
//! `send`, `try_send`, `for x in ch` and `async for x in ch` run once per event, and PyO3's generic argument
//! handling costs more than the channel operation itself. These functions take the
//! interpreter's own calling conventions (METH_O, tp_iternext, am_anext) and call the same Rust methods
//! the PyO3 bindings call, so the behaviour is identical; only the call overhead goes.
//! They are installed once at module init, before any Channel exists.

use std::ffi::CStr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::{ffi, PyTypeInfo};

use super::Channel;

/// Runs `body` on the Channel behind `slf`, turning errors and panics into a raised
/// exception and a null return, as CPython expects.
unsafe fn with_channel(
    slf: *mut ffi::PyObject,
    body: impl FnOnce(Python<'_>, &Bound<'_, Channel>) -> PyResult<*mut ffi::PyObject>,
) -> *mut ffi::PyObject {
    // SAFETY: CPython calls these with the thread attached and `slf` an instance of Channel
    // or of a subclass (same layout).
    let py = unsafe { Python::assume_attached() };
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let ch = unsafe { Bound::from_borrowed_ptr(py, slf).cast_into_unchecked::<Channel>() };
        body(py, &ch)
    }));
    match outcome {
        Ok(Ok(result)) => result,
        Ok(Err(err)) => {
            err.restore(py);
            ptr::null_mut()
        }
        Err(_) => {
            PyRuntimeError::new_err(
                "rillet: internal error in the channel (a bug: please report it)",
            )
            .restore(py);
            ptr::null_mut()
        }
    }
}

/// `send` and `try_send`, the same operation: True when queued, False once closed.
unsafe extern "C" fn send(slf: *mut ffi::PyObject, item: *mut ffi::PyObject) -> *mut ffi::PyObject {
    unsafe {
        with_channel(slf, |py, ch| {
            let sent = ch
                .get()
                .send_item(py, Bound::from_borrowed_ptr(py, item).unbind())?;
            Ok(pyo3::types::PyBool::new(py, sent).to_owned().into_ptr())
        })
    }
}

/// tp_iternext: null without an exception set means "iteration ended".
unsafe extern "C" fn next(slf: *mut ffi::PyObject) -> *mut ffi::PyObject {
    unsafe {
        with_channel(slf, |py, ch| {
            Ok(ch
                .get()
                .next_item(py)?
                .map_or(ptr::null_mut(), Py::into_ptr))
        })
    }
}

/// am_anext: one step of `async for`.
unsafe extern "C" fn anext(slf: *mut ffi::PyObject) -> *mut ffi::PyObject {
    unsafe { with_channel(slf, |_, ch| Ok(Channel::next_awaitable(ch)?.into_ptr())) }
}

const SEND_DOC: &CStr = c"send($self, item, /)\n--\n\nAppends `item` without blocking and returns True, or returns False (dropping `item`) if\nthe channel is closed. Wakes one waiting receiver, if any.";
const TRY_SEND_DOC: &CStr = c"try_send($self, item, /)\n--\n\nThe same as `send`: appends `item` and returns True, or returns False (dropping `item`)\nif the channel is closed. The name reads well in producers that expect to be ignored.";

/// Replaces Channel's `send`, `try_send`, `tp_iternext` and `am_anext` with the direct entry
/// points.
pub fn install(py: Python<'_>) -> PyResult<()> {
    let tp = Channel::type_object_raw(py);
    for (name, meth, doc) in [
        (c"send", send as ffi::PyCFunction, SEND_DOC),
        (c"try_send", send, TRY_SEND_DOC),
    ] {
        // The method table must outlive the type, which lives until interpreter exit.
        let def = Box::leak(Box::new(ffi::PyMethodDef {
            ml_name: name.as_ptr(),
            ml_meth: ffi::PyMethodDefPointer { PyCFunction: meth },
            ml_flags: ffi::METH_O,
            ml_doc: doc.as_ptr(),
        }));
        // SAFETY: `tp` is Channel's live heap type; we hold the interpreter.
        unsafe {
            let descr = Bound::from_owned_ptr_or_err(py, ffi::PyDescr_NewMethod(tp, def))?;
            let dict = Bound::from_borrowed_ptr(py, (*tp).tp_dict);
            dict.set_item(name.to_str().expect("ASCII name"), descr)?;
        }
    }
    // SAFETY: as above. Channel defines __anext__, so tp_as_async is the heap type's own.
    // Python subclasses get PyO3's equivalent slot functions, which behave the same.
    unsafe {
        (*tp).tp_iternext = Some(next);
        assert!(
            !(*tp).tp_as_async.is_null(),
            "Channel must define __anext__"
        );
        (*(*tp).tp_as_async).am_anext = Some(anext);
        ffi::PyType_Modified(tp);
    }
    Ok(())
}
