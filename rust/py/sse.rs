//! `ChatStreamParser` and `parse_chat_completion`: Python entry points of [`crate::sse`].
//!
//! Bytes go in and `Message` chunks come out; the JSON is read in Rust, so no Python code
//! runs per token. Errors are raised as the model errors of `rillet.errors`.

use std::borrow::Cow;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyDict, PyList};

use crate::message as core;
use crate::py::errors::{self, Class};
use crate::py::message::Message;
use crate::sse::{self, ParserOptions, SseLimits, StreamError};

/// The Python exception for `err`: `MalformedChunkError` (bad JSON or UTF-8),
/// `ModelStreamError` (an error object from the server), `IncompleteStreamError` (the
/// stream stopped early) or `StreamLimitError` (a line or event over its limit, with
/// `limit` set to the keyword that raises it), each with `line` set.
pub(crate) fn stream_error(py: Python<'_>, err: &StreamError) -> PyErr {
    let (class, code) = match err {
        StreamError::InvalidUtf8 { .. } | StreamError::Malformed { .. } => {
            (Class::MalformedChunkError, None)
        }
        StreamError::Server { code, .. } => (Class::ModelStreamError, code.as_deref()),
        StreamError::Truncated { .. } | StreamError::Unfinished { .. } => {
            (Class::IncompleteStreamError, None)
        }
        StreamError::TooLarge { .. } => (Class::StreamLimitError, None),
    };
    let make = || -> PyResult<PyErr> {
        let cls = errors::class(py, class)?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("line", err.line())?;
        if let Some(code) = code {
            kwargs.set_item("code", code)?;
        }
        if let StreamError::TooLarge { limit, .. } = err {
            kwargs.set_item("limit", limit.keyword())?;
        }
        Ok(PyErr::from_value(
            cls.call((err.to_string(),), Some(&kwargs))?,
        ))
    };
    make().unwrap_or_else(|e| e)
}

fn options(think_tags: bool, id_prefix: &str) -> ParserOptions {
    ParserOptions {
        think_tags,
        id_prefix: id_prefix.to_owned(),
    }
}

fn to_list(py: Python<'_>, chunks: Vec<core::Message>) -> PyResult<Bound<'_, PyList>> {
    let items: PyResult<Vec<_>> = chunks
        .into_iter()
        .map(|m| Bound::new(py, Message::wrap(m)))
        .collect();
    PyList::new(py, items?)
}

/// A wire format's chunk parser (chat completions, Anthropic, Responses), as the Python
/// parser classes drive it.
pub(crate) trait WireParser: Send {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<core::Message>) -> Result<(), StreamError>;
    fn finish(&mut self, out: &mut Vec<core::Message>) -> Result<(), StreamError>;
    fn done(&self) -> bool;
    fn lines(&self) -> usize;
}

impl WireParser for sse::ChatStreamParser {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<core::Message>) -> Result<(), StreamError> {
        sse::ChatStreamParser::feed(self, bytes, out)
    }
    fn finish(&mut self, out: &mut Vec<core::Message>) -> Result<(), StreamError> {
        sse::ChatStreamParser::finish(self, out)
    }
    fn done(&self) -> bool {
        sse::ChatStreamParser::done(self)
    }
    fn lines(&self) -> usize {
        sse::ChatStreamParser::lines(self)
    }
}

/// A parser behind the lock of a frozen Python object, with the error that stopped it: the
/// chunks before a bad line are returned, and the error is raised by the next call and by
/// every one after it.
pub(crate) struct Guarded<P> {
    state: Mutex<(P, Option<StreamError>)>,
}

impl<P: WireParser> Guarded<P> {
    pub(crate) fn new(parser: P) -> Self {
        Guarded {
            state: Mutex::new((parser, None)),
        }
    }

    fn run(
        &self,
        py: Python<'_>,
        step: impl FnOnce(&mut P, &mut Vec<core::Message>) -> Result<(), StreamError>,
    ) -> PyResult<Vec<core::Message>> {
        let mut out = Vec::new();
        let error = {
            let mut state = self.state.lock_py_attached(py);
            let (parser, stopped) = &mut *state;
            if let Some(err) = stopped {
                Some(err.clone())
            } else {
                *stopped = step(parser, &mut out).err();
                stopped.clone().filter(|_| out.is_empty())
            }
        };
        match error {
            Some(err) => Err(stream_error(py, &err)),
            None => Ok(out),
        }
    }

    pub(crate) fn feed<'py>(&self, py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyList>> {
        let out = self.run(py, |p, out| p.feed(data, out))?;
        to_list(py, out)
    }

    pub(crate) fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = self.run(py, |p, out| p.finish(out))?;
        to_list(py, out)
    }

    pub(crate) fn done(&self, py: Python<'_>) -> bool {
        self.state.lock_py_attached(py).0.done()
    }

    pub(crate) fn lines(&self, py: Python<'_>) -> usize {
        self.state.lock_py_attached(py).0.lines()
    }
}

// The parser classes spell the defaults out in their signatures, so that Python shows them.
const _: () = assert!(SseLimits::DEFAULT_MAX_LINE == 4194304);
const _: () = assert!(SseLimits::DEFAULT_MAX_EVENT == 16777216);

/// The limits of a parser class's keywords, both positive.
pub(crate) fn limits(max_sse_line_bytes: usize, max_sse_event_bytes: usize) -> PyResult<SseLimits> {
    if max_sse_line_bytes == 0 || max_sse_event_bytes == 0 {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "max_sse_line_bytes and max_sse_event_bytes must be positive, got \
             {max_sse_line_bytes} and {max_sse_event_bytes}"
        )));
    }
    Ok(SseLimits {
        max_line: max_sse_line_bytes,
        max_event: max_sse_event_bytes,
    })
}

/// A whole response body as text, or `MalformedChunkError` naming the line of bad UTF-8.
pub(crate) fn body_text<'a>(py: Python<'_>, body: &'a [u8]) -> PyResult<&'a str> {
    std::str::from_utf8(body).map_err(|e| {
        let line = 1 + memchr::memchr_iter(b'\n', &body[..e.valid_up_to()]).count();
        stream_error(py, &StreamError::InvalidUtf8 { line })
    })
}

/// Reads a streamed chat completion (server-sent events) into rillet Message chunks.
///
/// Feed it the response bytes as they arrive, in any pieces; call `finish()` at the end.
/// Chunks have Eino's shape: role on the first, tool-call index on every tool-call delta,
/// id and name on a call's first delta, finish reason and usage where the server sent them.
/// `think_tags` moves `<think>...</think>` text from the content to `reasoning_content`;
/// calls the server sent without an id get `id_prefix` plus their index. A line longer than
/// `max_sse_line_bytes`, or an event with more data than `max_sse_event_bytes`, raises
/// `StreamLimitError` before it is buffered (defaults: 4 MiB and 16 MiB).
#[pyclass(frozen, module = "rillet", name = "ChatStreamParser")]
pub struct ChatStreamParser(Guarded<sse::ChatStreamParser>);

#[pymethods]
impl ChatStreamParser {
    #[new]
    #[pyo3(signature = (
        *,
        think_tags=true,
        id_prefix="call_",
        max_sse_line_bytes=4194304,
        max_sse_event_bytes=16777216,
    ))]
    fn new(
        think_tags: bool,
        id_prefix: &str,
        max_sse_line_bytes: usize,
        max_sse_event_bytes: usize,
    ) -> PyResult<Self> {
        let limits = limits(max_sse_line_bytes, max_sse_event_bytes)?;
        let parser = sse::ChatStreamParser::with_limits(options(think_tags, id_prefix), limits);
        Ok(ChatStreamParser(Guarded::new(parser)))
    }

    /// Reads `data` and returns the chunks it completes (often none, sometimes several).
    ///
    /// A malformed line raises `rillet.models.MalformedChunkError` naming the line; an error
    /// object from the server raises `ModelStreamError`. Chunks before the offending line are
    /// returned first, and the error is raised by the next call (and every one after it).
    fn feed<'py>(&self, py: Python<'py>, data: Cow<'_, [u8]>) -> PyResult<Bound<'py, PyList>> {
        self.0.feed(py, &data)
    }

    /// The response has ended: returns the last chunks. Raises `IncompleteStreamError` when
    /// the stream stopped before the model finished (no finish reason and no `[DONE]`).
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.0.finish(py)
    }

    /// True once `data: [DONE]` was read.
    #[getter]
    fn done(&self, py: Python<'_>) -> bool {
        self.0.done(py)
    }

    /// The number of lines read so far.
    #[getter]
    fn lines(&self, py: Python<'_>) -> usize {
        self.0.lines(py)
    }
}

/// Reads a whole (non-streamed) chat-completions response body into one assistant Message,
/// with the stream's dialect rules (reasoning fields, `<think>` tags, generated call ids).
#[pyfunction]
#[pyo3(signature = (body, *, think_tags=true, id_prefix="call_"))]
pub fn parse_chat_completion(
    py: Python<'_>,
    body: Cow<'_, [u8]>,
    think_tags: bool,
    id_prefix: &str,
) -> PyResult<Message> {
    let text = body_text(py, &body)?;
    sse::parse_completion(text, options(think_tags, id_prefix))
        .map(Message::wrap)
        .map_err(|e| stream_error(py, &e))
}
