//! Every exception class the bindings raise, in one table.
//!
//! The classes are defined in Python, in `rillet/errors.py` (the whole hierarchy, rooted at
//! `RilletError`, in one readable module). That module hands itself to `_init_errors` when it
//! is imported, which looks up every class of [`Class`] at once: a class that is missing
//! there is an ImportError of `import rillet`, not a failure at the first raise. Bindings
//! raise through [`new_err`] and [`class`], never by importing a class by name.

use pyo3::exceptions::{PyBaseException, PyImportError, PyRuntimeError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;
use pyo3::PyErrArguments;

/// An exception class raised by Rust code; its variant name is its name in `rillet.errors`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Class {
    ChannelClosed,
    StreamEOF,
    ConcatError,
    DecodeError,
    EncodeError,
    MalformedChunkError,
    ModelStreamError,
    IncompleteStreamError,
    StreamLimitError,
    MessageConversionError,
}

const COUNT: usize = 10;

impl Class {
    const ALL: [Class; COUNT] = [
        Class::ChannelClosed,
        Class::StreamEOF,
        Class::ConcatError,
        Class::DecodeError,
        Class::EncodeError,
        Class::MalformedChunkError,
        Class::ModelStreamError,
        Class::IncompleteStreamError,
        Class::StreamLimitError,
        Class::MessageConversionError,
    ];

    /// The class's name in `rillet.errors`.
    pub fn name(self) -> &'static str {
        match self {
            Class::ChannelClosed => "ChannelClosed",
            Class::StreamEOF => "StreamEOF",
            Class::ConcatError => "ConcatError",
            Class::DecodeError => "DecodeError",
            Class::EncodeError => "EncodeError",
            Class::MalformedChunkError => "MalformedChunkError",
            Class::ModelStreamError => "ModelStreamError",
            Class::IncompleteStreamError => "IncompleteStreamError",
            Class::StreamLimitError => "StreamLimitError",
            Class::MessageConversionError => "MessageConversionError",
        }
    }
}

/// The classes, in the order of [`Class::ALL`] (a variant's discriminant is its index).
static CLASSES: PyOnceLock<[Py<PyType>; COUNT]> = PyOnceLock::new();

/// `_native._init_errors(module)`: takes every class of [`Class`] from `module` (rillet.errors
/// calls it once, at its import). Raises ImportError naming a class that is missing or is not
/// an exception class. The first complete table stays: later calls only check theirs.
#[pyfunction]
#[pyo3(name = "_init_errors")]
pub fn init_errors(module: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = module.py();
    let mut found = Vec::with_capacity(COUNT);
    for c in Class::ALL {
        found.push(lookup(module, c)?);
    }
    let table: [Py<PyType>; COUNT] = found.try_into().expect("one class per variant");
    let _ = CLASSES.set(py, table);
    Ok(())
}

fn lookup(module: &Bound<'_, PyAny>, c: Class) -> PyResult<Py<PyType>> {
    let missing = || {
        PyImportError::new_err(format!(
            "rillet.errors has no exception class {:?}, which rillet's native module raises: \
             the Python files and the native extension of rillet are out of step; reinstall \
             rillet",
            c.name()
        ))
    };
    let ty = module
        .getattr(c.name())
        .map_err(|_| missing())?
        .cast_into::<PyType>()
        .map_err(|_| missing())?;
    if !ty.is_subclass_of::<PyBaseException>()? {
        return Err(missing());
    }
    Ok(ty.unbind())
}

/// The class `c`. rillet.errors fills the table when `import rillet` runs, before any user
/// code; should native code raise earlier, the import is done here.
#[inline]
pub fn class(py: Python<'_>, c: Class) -> PyResult<&Bound<'_, PyType>> {
    let table = match CLASSES.get(py) {
        Some(table) => table,
        None => {
            py.import("rillet.errors")?;
            CLASSES.get(py).ok_or_else(|| {
                PyRuntimeError::new_err(
                    "rillet.errors has not registered its exception classes yet (an exception \
                     was raised while it was being imported)",
                )
            })?
        }
    };
    Ok(table[c as usize].bind(py))
}

/// A new exception of class `c` with `args` (a message, usually), made when it is raised.
#[inline]
pub fn new_err<A>(py: Python<'_>, c: Class, args: A) -> PyErr
where
    A: PyErrArguments + Send + Sync + 'static,
{
    match class(py, c) {
        Ok(ty) => PyErr::from_type(ty.clone(), args),
        Err(e) => e,
    }
}

/// Whether `err` is an instance of `c` (or of a subclass).
#[inline]
pub fn is_instance(py: Python<'_>, err: &PyErr, c: Class) -> bool {
    class(py, c).is_ok_and(|ty| err.is_instance(py, ty))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_is_listed_at_its_index() {
        for (i, c) in Class::ALL.iter().enumerate() {
            assert_eq!(*c as usize, i, "{c:?}");
            assert_eq!(format!("{c:?}"), c.name());
        }
    }
}
