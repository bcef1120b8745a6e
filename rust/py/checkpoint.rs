//! Rebuilding a run's events from the records of a checkpoint
//! (`rillet.checkpoint.payload`), the bulk of loading one.
//!
//! Each event is three Python objects (`AgentEvent`, `MessageVariant`, `AgentOutput`).
//! Calling `object.__new__` for each from Python cost about 1,000 instructions an object,
//! half of a 1,000-event load's rebuild; here they are allocated with the type's own
//! `tp_alloc` (what `object.__new__` does after its argument checks) and every field is set
//! through its slot's member descriptor (what `obj.field = v` ends in, without the attribute
//! lookup on the way).

use pyo3::exceptions::{PyIndexError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyList, PyTuple, PyType};

/// The classes an event is made of, and the helpers for the rare parts, from Python.
#[derive(FromPyObject)]
pub struct EventKinds<'py> {
    event: Bound<'py, PyType>,
    variant: Bound<'py, PyType>,
    output: Bound<'py, PyType>,
    run_step: Bound<'py, PyAny>,
    /// `extend_path(base, steps)`: the run path `base` extended by the tuple `steps`.
    extend_path: Bound<'py, PyAny>,
    /// `stream_from_list`, for a streamed message restored as a one-chunk stream.
    one_chunk_stream: Bound<'py, PyAny>,
    /// `apply_extras(event, extras)` for customized output, action, error and branch.
    apply_extras: Bound<'py, PyAny>,
}

/// The events of version-2 records `[agent_name, run_path, message, role, tool_name,
/// is_streaming, extras]` (see payload.py). Events of the same run path share one tuple.
#[pyfunction]
pub fn events_from_records<'py>(
    records: &Bound<'py, PyList>,
    kinds: EventKinds<'py>,
) -> PyResult<Bound<'py, PyList>> {
    let py = records.py();
    let ev_slots = Slots::of(
        &kinds.event,
        [
            "agent_name",
            "run_path",
            "output",
            "action",
            "error",
            "branch",
        ],
    )?;
    let mv_slots = Slots::of(
        &kinds.variant,
        [
            "is_streaming",
            "message",
            "message_stream",
            "role",
            "tool_name",
        ],
    )?;
    let out_slots = Slots::of(&kinds.output, ["message_output", "customized_output"])?;
    let mut paths: Vec<Bound<'py, PyAny>> = Vec::new();
    let shared = PyDict::new(py);
    let events = PyList::empty(py);
    let none = py.None().into_bound(py);
    for (i, record) in records.iter().enumerate() {
        let fields = record
            .cast::<PyList>()
            .map_err(|_| PyTypeError::new_err(format!("event record {i} is not a list")))?;
        if fields.len() != 7 {
            return Err(PyTypeError::new_err(format!(
                "event record {i} has {} items, not 7",
                fields.len()
            )));
        }
        let item = |k: usize| fields.get_item(k);
        let path = run_path(&item(1)?, &mut paths, &shared, &kinds, i)?;
        let msg = item(2)?;
        let output = if msg.is_none() {
            none.clone()
        } else {
            let (streaming, message, stream) = if item(5)?.is_truthy()? {
                let stream = kinds.one_chunk_stream.call1((PyList::new(py, [msg])?,))?;
                (true, none.clone(), stream)
            } else {
                (false, msg, none.clone())
            };
            let streaming = pyo3::types::PyBool::new(py, streaming)
                .to_owned()
                .into_any();
            let mv = mv_slots.make(&[streaming, message, stream, item(3)?, item(4)?])?;
            out_slots.make(&[mv, none.clone()])?
        };
        let ev = ev_slots.make(&[
            item(0)?,
            path,
            output,
            none.clone(),
            none.clone(),
            none.clone(),
        ])?;
        let extras = item(6)?;
        if !extras.is_none() {
            kinds.apply_extras.call1((&ev, extras))?;
        }
        events.append(ev)?;
    }
    Ok(events)
}

/// A record's run path: its names the first time it appears (a new shared tuple of
/// `RunStep`s unless an equal one exists), or (version 3) `[index, name, ...]`, the path at
/// `index` extended by those names; afterwards its index among those.
fn run_path<'py>(
    path: &Bound<'py, PyAny>,
    paths: &mut Vec<Bound<'py, PyAny>>,
    shared: &Bound<'py, PyDict>,
    kinds: &EventKinds<'py>,
    i: usize,
) -> PyResult<Bound<'py, PyAny>> {
    if let Ok(index) = path.cast_exact::<PyInt>() {
        return earlier(paths, index, i).cloned();
    }
    let items = path.try_iter()?.collect::<PyResult<Vec<_>>>()?;
    if let Some(base) = items.first().and_then(|b| b.cast_exact::<PyInt>().ok()) {
        let base = earlier(paths, base, i)?.clone();
        let steps = steps_of(&items[1..], &kinds.run_step)?;
        let extended = kinds.extend_path.call1((base, steps))?;
        paths.push(extended.clone());
        return Ok(extended);
    }
    let names = PyTuple::new(path.py(), items)?;
    let tuple = match shared.get_item(&names)? {
        Some(t) => t,
        None => {
            let t = steps_of(&names.iter().collect::<Vec<_>>(), &kinds.run_step)?.into_any();
            shared.set_item(&names, &t)?;
            t
        }
    };
    paths.push(tuple.clone());
    Ok(tuple)
}

/// The run path written before, at `index`.
fn earlier<'a, 'py>(
    paths: &'a [Bound<'py, PyAny>],
    index: &Bound<'py, PyInt>,
    i: usize,
) -> PyResult<&'a Bound<'py, PyAny>> {
    let at: usize = index.extract().map_err(|_| {
        PyIndexError::new_err(format!("event record {i} refers to run path {index}"))
    })?;
    paths.get(at).ok_or_else(|| {
        PyIndexError::new_err(format!(
            "event record {i} refers to run path {at}, but {} were written before it",
            paths.len()
        ))
    })
}

/// A tuple of `RunStep`s named `names`.
fn steps_of<'py>(
    names: &[Bound<'py, PyAny>],
    run_step: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyTuple>> {
    let steps = names
        .iter()
        .map(|n| run_step.call1((n,)))
        .collect::<PyResult<Vec<_>>>()?;
    PyTuple::new(run_step.py(), steps)
}

/// A `__slots__` class and the member descriptors of the fields it is made with.
struct Slots<'py, const N: usize> {
    cls: Bound<'py, PyType>,
    descriptors: [Bound<'py, PyAny>; N],
}

impl<'py, const N: usize> Slots<'py, N> {
    /// The descriptors of `fields`, which must be every field of `cls`, each a plain slot.
    /// `cls` must be made by `object.__new__` (a subclass of a builtin such as dict needs
    /// its own `__new__`, which `tp_alloc` alone would skip).
    fn of(cls: &Bound<'py, PyType>, fields: [&str; N]) -> PyResult<Self> {
        // SAFETY: reading the tp_new slot of a live type and of the static object type.
        let plain = unsafe {
            // Both are loaded from type objects (libpython's object_new): compare addresses.
            let addr = |f: Option<ffi::newfunc>| f.map(|f| f as usize);
            addr((*cls.as_type_ptr()).tp_new)
                == addr((*std::ptr::addr_of!(ffi::PyBaseObject_Type)).tp_new)
        };
        if !plain {
            return Err(PyTypeError::new_err(format!(
                "{} is not made by object.__new__",
                cls.name()?
            )));
        }
        let mut found = Vec::with_capacity(N);
        for name in fields {
            let d = cls.getattr(name)?;
            // SAFETY: comparing a type pointer with the address of a static type object.
            let is_member = unsafe {
                ffi::Py_TYPE(d.as_ptr()) == std::ptr::addr_of_mut!(ffi::PyMemberDescr_Type)
            };
            if !is_member {
                return Err(PyTypeError::new_err(format!(
                    "{}.{name} is not a __slots__ field",
                    cls.name()?
                )));
            }
            found.push(d);
        }
        let descriptors = found
            .try_into()
            .map_err(|_| PyTypeError::new_err("field count"))?;
        Ok(Slots {
            cls: cls.clone(),
            descriptors,
        })
    }

    /// A new instance with its fields set to `values`, in the order of `of`'s `fields`.
    fn make(&self, values: &[Bound<'py, PyAny>; N]) -> PyResult<Bound<'py, PyAny>> {
        let obj = alloc(&self.cls)?;
        for (d, v) in self.descriptors.iter().zip(values) {
            // SAFETY: `d` is a member descriptor (checked in `of`) of `obj`'s type, and its
            // type's tp_descr_set is the member setter, which checks both again; it takes
            // its own reference to `v` and returns 0, or -1 with an exception set.
            let status = unsafe {
                let set = (*ffi::Py_TYPE(d.as_ptr())).tp_descr_set;
                match set {
                    Some(set) => set(d.as_ptr(), obj.as_ptr(), v.as_ptr()),
                    None => -1,
                }
            };
            if status != 0 {
                return Err(PyErr::take(self.cls.py())
                    .unwrap_or_else(|| PyTypeError::new_err("a slot could not be set")));
            }
        }
        Ok(obj)
    }
}

/// A new instance of `cls` with every field unset, as `object.__new__(cls)` makes it.
fn alloc<'py>(cls: &Bound<'py, PyType>) -> PyResult<Bound<'py, PyAny>> {
    let py = cls.py();
    let tp = cls.as_type_ptr();
    // SAFETY: `tp` is a live type object (`cls` holds it); its tp_alloc (or the generic
    // allocator, which object.__new__ falls back to as well) returns a new reference or
    // NULL with an exception set.
    unsafe {
        let alloc = (*tp).tp_alloc.unwrap_or(ffi::PyType_GenericAlloc);
        Bound::from_owned_ptr_or_err(py, alloc(tp, 0))
    }
}
