//! What the decoder's value stack holds on the Python side: Python objects, and, while the
//! state of one of rillet's message types is read, plain Rust values that become the
//! message's fields without a Python object in between (a message's content goes from the
//! input bytes into its Rust `String` in one copy).

use std::rc::Rc;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyString};

use crate::py::codec::checked::{new_dict, new_list, new_str};

/// The key texts of a record shape. Behind a thin pointer, so that a `Val` is 32 bytes, not
/// 40: every value read is moved on and off the decoder's stack.
pub type ShapeTexts = Rc<Box<[Box<str>]>>;

/// A decoded value.
#[derive(Clone)]
pub enum Val<'py> {
    Py(Bound<'py, PyAny>),
    Nil,
    Bool(bool),
    Int(i64),
    UInt(u64),
    Float(f64),
    Str(String),
    List(Vec<Val<'py>>),
    /// A map whose keys are strs (Python or Rust), distinct, in the order read.
    Map(Vec<(Val<'py>, Val<'py>)>),
    /// A format-2 record: the keys of its shape (shared by every record of that shape) and
    /// one value per key.
    Record(ShapeTexts, Vec<Val<'py>>),
}

impl<'py> Val<'py> {
    /// The Python object this value stands for. Outside message states nearly every value
    /// already is one: that case is inlined, and only the Rust values take the call.
    #[inline(always)]
    pub fn into_py(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        match self {
            Val::Py(o) => Ok(o),
            other => other.make_py(py),
        }
    }

    /// A Python object made from a Rust value.
    #[inline(never)]
    fn make_py(self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        // SAFETY (C API arms): constructors returning a new reference or NULL with an
        // exception set, which `from_owned_ptr_or_err` turns into an error.
        unsafe {
            Ok(match self {
                Val::Py(o) => o,
                Val::Nil => py.None().into_bound(py),
                Val::Bool(v) => PyBool::new(py, v).to_owned().into_any(),
                Val::Int(v) => Bound::from_owned_ptr_or_err(py, ffi::PyLong_FromLongLong(v))?,
                Val::UInt(v) => {
                    Bound::from_owned_ptr_or_err(py, ffi::PyLong_FromUnsignedLongLong(v))?
                }
                Val::Float(v) => Bound::from_owned_ptr_or_err(py, ffi::PyFloat_FromDouble(v))?,
                Val::Str(s) => new_str(py, &s)?,
                Val::List(items) => new_list(py, items.into_iter().map(|v| v.into_py(py)))?,
                Val::Map(pairs) => {
                    let d = new_dict(py)?;
                    for (k, v) in pairs {
                        d.set_item(k.into_py(py)?, v.into_py(py)?)?;
                    }
                    d.into_any()
                }
                Val::Record(keys, values) => {
                    let d = new_dict(py)?;
                    for (k, v) in keys.iter().zip(values) {
                        d.set_item(new_str(py, k)?, v.into_py(py)?)?;
                    }
                    d.into_any()
                }
            })
        }
    }

    /// The text of a str value (None for anything else, or a str with lone surrogates).
    #[inline]
    pub fn text(&self) -> Option<&str> {
        match self {
            Val::Str(s) => Some(s),
            Val::Py(o) => o.cast_exact::<PyString>().ok()?.to_str().ok(),
            _ => None,
        }
    }

    /// The Python type name of the value, for error messages.
    pub fn kind(&self) -> String {
        match self {
            Val::Py(o) => super::kind_of(o),
            Val::Nil => "NoneType".into(),
            Val::Bool(_) => "bool".into(),
            Val::Int(_) | Val::UInt(_) => "int".into(),
            Val::Float(_) => "float".into(),
            Val::Str(_) => "str".into(),
            Val::List(_) => "list".into(),
            Val::Map(_) | Val::Record(..) => "dict".into(),
        }
    }

    pub fn is_none(&self) -> bool {
        match self {
            Val::Nil => true,
            Val::Py(o) => o.is_none(),
            _ => false,
        }
    }
}

/// Whether the keys of the flat `key, value, key, value...` items are distinct strs:
/// compared pairwise for the few keys a state has, hashed beyond that.
pub fn str_keys_distinct(flat: &[Val<'_>]) -> bool {
    let keys = flat.iter().step_by(2).map(Val::text);
    if flat.len() <= 32 {
        let mut seen: [&str; 16] = [""; 16];
        for (i, k) in keys.enumerate() {
            let Some(k) = k else { return false };
            if seen[..i].contains(&k) {
                return false;
            }
            seen[i] = k;
        }
        true
    } else {
        let mut seen = std::collections::HashSet::with_capacity(flat.len() / 2);
        keys.into_iter().all(|k| k.is_some_and(|k| seen.insert(k)))
    }
}

const _: () = assert!(std::mem::size_of::<Val<'static>>() == 32);
