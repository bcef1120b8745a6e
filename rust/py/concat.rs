//! `concat_messages` and `MessageAccumulator`: Python entry points of [`crate::concat`].

use parking_lot::Mutex;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::PyList;

use crate::concat::{self as core, Accumulator, UsagePolicy};
use crate::message::{Map, Value};
use crate::py::errors::{self, Class};
use crate::py::message::{with_chunk, Message};

/// Raises `ConcatError` with the message of `err` and its `field` attribute set.
pub(crate) fn concat_error(py: Python<'_>, err: core::ConcatError) -> PyErr {
    let made = errors::class(py, Class::ConcatError).and_then(|c| c.call1((err.message.as_str(),)));
    match made {
        Ok(exc) => {
            let _ = exc.setattr("field", err.field.as_str());
            PyErr::from_value(exc)
        }
        Err(e) => e,
    }
}

fn parse_policy(usage: &str) -> PyResult<UsagePolicy> {
    UsagePolicy::parse(usage).ok_or_else(|| {
        PyValueError::new_err(format!(
            "usage must be 'max', 'sum' or 'last', not {usage:?}"
        ))
    })
}

/// Pushes one Python chunk (a Message, its dict form, or None, which is an error).
pub(crate) fn push_chunk(acc: &mut Accumulator, chunk: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = chunk.py();
    if chunk.is_none() {
        return Err(concat_error(
            py,
            core::ConcatError::missing_chunk(acc.len()),
        ));
    }
    // A chunk holding Python values is copied out first: merging may release an older
    // Python value, which must not happen under the chunk's lock.
    let pushed = with_chunk(chunk, |m| {
        if holds_python(m) {
            Err(Box::new(m.clone()))
        } else {
            Ok(acc.push(m))
        }
    })?;
    pushed
        .unwrap_or_else(|owned| acc.push(&owned))
        .map_err(|e| concat_error(py, e))
}

fn push_all(acc: &mut Accumulator, chunks: &Bound<'_, PyAny>) -> PyResult<()> {
    if let Ok(list) = chunks.cast::<PyList>() {
        // The common case: iterate the list directly, without an iterator object.
        for chunk in list.iter() {
            push_chunk(acc, &chunk)?;
        }
        return Ok(());
    }
    for chunk in chunks.try_iter()? {
        push_chunk(acc, &chunk?)?;
    }
    Ok(())
}

/// True if `m` carries Python objects (opaque `extra` values), whose release must wait
/// until no lock is held.
fn holds_python(m: &crate::message::Message) -> bool {
    fn value(v: &Value) -> bool {
        match v {
            Value::Opaque(_) => true,
            Value::Map(m) => map(m),
            _ => false,
        }
    }
    fn map(m: &Map) -> bool {
        m.iter().any(|(_, v)| value(v))
    }
    m.extra.as_ref().is_some_and(map)
        || m.tool_calls
            .iter()
            .any(|t| t.extra.as_ref().is_some_and(map))
}

/// Concatenates streamed message chunks into one new Message with Eino's rules.
///
/// `usage` combines the usage counters of several chunks: "max" (per field, Eino's rule and
/// the default), "sum" or "last". Raises ConcatError on conflicting chunks.
#[pyfunction]
#[pyo3(signature = (chunks, *, usage="max"))]
pub fn concat_messages(chunks: &Bound<'_, PyAny>, usage: &str) -> PyResult<Message> {
    let mut acc = Accumulator::new(parse_policy(usage)?);
    push_all(&mut acc, chunks)?;
    Ok(Message::wrap(acc.finish()))
}

/// Concatenates chunks one at a time, e.g. while they stream in.
///
/// A chunk that `push` rejects (ConcatError) is not applied, so the accumulator stays usable.
#[pyclass(frozen, module = "rillet", name = "MessageAccumulator")]
pub struct MessageAccumulator {
    acc: Mutex<Accumulator>,
    policy: UsagePolicy,
}

#[pymethods]
impl MessageAccumulator {
    #[new]
    #[pyo3(signature = (*, usage="max"))]
    fn new(usage: &str) -> PyResult<Self> {
        let policy = parse_policy(usage)?;
        Ok(MessageAccumulator {
            acc: Mutex::new(Accumulator::new(policy)),
            policy,
        })
    }

    /// Adds one chunk (a Message, or its dict form). Raises ConcatError when the chunk
    /// conflicts with the ones before (it is then not applied) or is None.
    pub(crate) fn push(&self, chunk: &Bound<'_, PyAny>) -> PyResult<()> {
        let py = chunk.py();
        if chunk.is_none() {
            let index = self.acc.lock_py_attached(py).len();
            return Err(concat_error(py, core::ConcatError::missing_chunk(index)));
        }
        // Read the chunk before taking the lock: a dict chunk is read from Python (which may
        // run arbitrary code, e.g. `__bool__` of an extra value), a Message is copied under
        // its own lock.
        let chunk = with_chunk(chunk, Clone::clone)?;
        let pushed = if holds_python(&chunk) {
            // Merging may replace a Python value held in `extra`: apply it detached, so that
            // the old value's reference is released after the lock, not under it.
            py.detach(|| self.acc.lock().push(&chunk))
        } else {
            self.acc.lock_py_attached(py).push(&chunk)
        };
        pushed.map_err(|e| concat_error(py, e))
    }

    /// Pushes every chunk of `chunks` in order; stops at the first rejected one (the chunks
    /// before it stay applied). The iterable is read with no lock held, so it may use the
    /// accumulator itself (e.g. `len(acc)`).
    fn push_many(&self, chunks: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Ok(list) = chunks.cast::<PyList>() {
            for chunk in list.iter() {
                self.push(&chunk)?;
            }
            return Ok(());
        }
        for chunk in chunks.try_iter()? {
            self.push(&chunk?)?;
        }
        Ok(())
    }

    /// The message the chunks so far concatenate to; the accumulator goes on.
    fn snapshot(&self, py: Python<'_>) -> Message {
        Message::wrap(self.acc.lock_py_attached(py).snapshot())
    }

    /// The concatenated message; the accumulator starts over empty.
    fn finish(&self, py: Python<'_>) -> Message {
        let fresh = Accumulator::new(self.policy);
        let acc = std::mem::replace(&mut *self.acc.lock_py_attached(py), fresh);
        Message::wrap(acc.finish())
    }

    /// The number of chunks pushed since the last `finish`.
    fn __len__(&self, py: Python<'_>) -> usize {
        self.acc.lock_py_attached(py).len()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!("<rillet.MessageAccumulator of {} chunks>", self.__len__(py))
    }
}
