//! `concat_messages` and `MessageAccumulator`: Python entry points of [`crate::concat`].

use parking_lot::Mutex;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::PyList;

use crate::agentic::{AgenticAccumulator, AgenticMessage as CoreAgentic};
use crate::concat::{self as core, Accumulator, UsagePolicy};
use crate::message::{Map, Value};
use crate::py::agentic::{agentic_chunk, not_agentic, AgenticMessage};
use crate::py::errors::{self, Class};
use crate::py::message::{with_chunk, Message};

/// The accumulator of one stream: of Message chunks, or of AgenticMessage chunks once the
/// first chunk is one (a stream holds one message type).
#[derive(Clone, Debug)]
pub(crate) enum AnyAccumulator {
    Message(Accumulator),
    Agentic(AgenticAccumulator),
}

impl AnyAccumulator {
    pub(crate) fn new(policy: UsagePolicy) -> Self {
        AnyAccumulator::Message(Accumulator::new(policy))
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            AnyAccumulator::Message(a) => a.len(),
            AnyAccumulator::Agentic(a) => a.len(),
        }
    }

    /// The concatenated message: a Message, or an AgenticMessage for agentic chunks.
    pub(crate) fn finish(self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        Ok(match self {
            AnyAccumulator::Message(a) => Py::new(py, Message::wrap(a.finish()))?.into_any(),
            AnyAccumulator::Agentic(a) => Py::new(py, AgenticMessage::wrap(a.finish()))?.into_any(),
        })
    }

    /// The agentic accumulator to push `chunk` into, switching an empty Message accumulator
    /// over; None when the chunk is not an AgenticMessage and the stream is not agentic.
    fn agentic_for(
        &mut self,
        chunk: &Bound<'_, PyAny>,
        policy: UsagePolicy,
    ) -> PyResult<Option<(&mut AgenticAccumulator, CoreAgentic)>> {
        let item = agentic_chunk(chunk);
        if let AnyAccumulator::Message(a) = self {
            match &item {
                None => return Ok(None),
                Some(_) if a.is_empty() => {
                    *self = AnyAccumulator::Agentic(AgenticAccumulator::new(policy))
                }
                Some(_) => {
                    return Err(pyo3::exceptions::PyTypeError::new_err(
                        "a stream of Message chunks got an AgenticMessage chunk: one stream holds one message type",
                    ))
                }
            }
        }
        match (self, item) {
            (AnyAccumulator::Agentic(a), Some(m)) => Ok(Some((a, m))),
            _ => Err(not_agentic(chunk)),
        }
    }
}

/// Pushes one chunk of either message type (see [`AnyAccumulator`]).
pub(crate) fn push_any(
    acc: &mut AnyAccumulator,
    chunk: &Bound<'_, PyAny>,
    policy: UsagePolicy,
) -> PyResult<()> {
    let py = chunk.py();
    if chunk.is_none() {
        return Err(concat_error(
            py,
            core::ConcatError::missing_chunk(acc.len()),
        ));
    }
    match acc.agentic_for(chunk, policy)? {
        // `m` is a copy: merging may release Python values in extras here, with no lock held.
        Some((a, m)) => a.push(&m).map_err(|e| concat_error(py, e)),
        None => match acc {
            AnyAccumulator::Message(a) => push_chunk(a, chunk),
            AnyAccumulator::Agentic(_) => Err(not_agentic(chunk)),
        },
    }
}

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

fn push_all(
    acc: &mut AnyAccumulator,
    chunks: &Bound<'_, PyAny>,
    policy: UsagePolicy,
) -> PyResult<()> {
    if let Ok(list) = chunks.cast::<PyList>() {
        // The common case: iterate the list directly, without an iterator object.
        for chunk in list.iter() {
            push_any(acc, &chunk, policy)?;
        }
        return Ok(());
    }
    for chunk in chunks.try_iter()? {
        push_any(acc, &chunk?, policy)?;
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

/// Concatenates streamed message chunks into one new message with Eino's rules: Message
/// chunks into a Message, AgenticMessage chunks (merged by block index) into an
/// AgenticMessage.
///
/// `usage` combines the usage counters of several chunks: "max" (per field, Eino's rule and
/// the default), "sum" or "last". Raises ConcatError on conflicting chunks.
#[pyfunction]
#[pyo3(signature = (chunks, *, usage="max"))]
pub fn concat_messages(
    py: Python<'_>,
    chunks: &Bound<'_, PyAny>,
    usage: &str,
) -> PyResult<Py<PyAny>> {
    let policy = parse_policy(usage)?;
    let mut acc = AnyAccumulator::new(policy);
    push_all(&mut acc, chunks, policy)?;
    acc.finish(py)
}

/// Concatenates chunks one at a time, e.g. while they stream in.
///
/// A chunk that `push` rejects (ConcatError) is not applied, so the accumulator stays usable.
#[pyclass(frozen, module = "rillet", name = "MessageAccumulator")]
pub struct MessageAccumulator {
    acc: Mutex<AnyAccumulator>,
    policy: UsagePolicy,
}

#[pymethods]
impl MessageAccumulator {
    #[new]
    #[pyo3(signature = (*, usage="max"))]
    fn new(usage: &str) -> PyResult<Self> {
        let policy = parse_policy(usage)?;
        Ok(MessageAccumulator {
            acc: Mutex::new(AnyAccumulator::new(policy)),
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
        if let Some(m) = agentic_chunk(chunk) {
            // Merging may release Python values of extras: done detached, with no lock on
            // the accumulator held by this thread while Python runs.
            let policy = self.policy;
            return py
                .detach(|| {
                    let mut acc = self.acc.lock();
                    if let AnyAccumulator::Message(a) = &*acc {
                        if !a.is_empty() {
                            return Err(None);
                        }
                        *acc = AnyAccumulator::Agentic(AgenticAccumulator::new(policy));
                    }
                    match &mut *acc {
                        AnyAccumulator::Agentic(a) => a.push(&m).map_err(Some),
                        AnyAccumulator::Message(_) => Err(None),
                    }
                })
                .map_err(|e| match e {
                    Some(e) => concat_error(py, e),
                    None => pyo3::exceptions::PyTypeError::new_err(
                        "a stream of Message chunks got an AgenticMessage chunk: one stream holds one message type",
                    ),
                });
        }
        // Read the chunk before taking the lock: a dict chunk is read from Python (which may
        // run arbitrary code, e.g. `__bool__` of an extra value), a Message is copied under
        // its own lock.
        let chunk = with_chunk(chunk, Clone::clone)?;
        let push = |acc: &mut AnyAccumulator| match acc {
            AnyAccumulator::Message(a) => Some(a.push(&chunk)),
            AnyAccumulator::Agentic(_) => None,
        };
        let pushed = if holds_python(&chunk) {
            // Merging may replace a Python value held in `extra`: apply it detached, so that
            // the old value's reference is released after the lock, not under it.
            py.detach(|| push(&mut self.acc.lock()))
        } else {
            push(&mut self.acc.lock_py_attached(py))
        };
        match pushed {
            Some(r) => r.map_err(|e| concat_error(py, e)),
            None => Err(pyo3::exceptions::PyTypeError::new_err(
                "a stream of AgenticMessage chunks got a Message chunk: one stream holds one message type",
            )),
        }
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
    fn snapshot(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let acc = self.acc.lock_py_attached(py).clone();
        acc.finish(py)
    }

    /// The concatenated message (an AgenticMessage for agentic chunks); the accumulator
    /// starts over empty.
    fn finish(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let fresh = AnyAccumulator::new(self.policy);
        let acc = std::mem::replace(&mut *self.acc.lock_py_attached(py), fresh);
        acc.finish(py)
    }

    /// `MessageAccumulator[AgenticMessage]` in annotations.
    #[classmethod]
    #[pyo3(signature = (item, /))]
    fn __class_getitem__<'py>(
        cls: &Bound<'py, pyo3::types::PyType>,
        item: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        crate::py::util::generic_alias(cls, item)
    }

    /// The number of chunks pushed since the last `finish`.
    fn __len__(&self, py: Python<'_>) -> usize {
        self.acc.lock_py_attached(py).len()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!("<rillet.MessageAccumulator of {} chunks>", self.__len__(py))
    }
}
