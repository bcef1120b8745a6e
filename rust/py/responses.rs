//! `ResponsesStreamParser` and `parse_response`: Python entry points of [`crate::responses`].
//!
//! Bytes of OpenAI's Responses API go in and `Message` chunks come out, read in Rust; errors
//! are the same model errors as the chat-completions parser's (see [`crate::py::sse`]).

use std::borrow::Cow;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::PyList;

use crate::message as core;
use crate::py::message::Message;
use crate::py::sse::stream_error;
use crate::responses;
use crate::sse::{SseLimits, StreamError};

struct State {
    parser: responses::ResponsesStreamParser,
    /// Once an error was found, every later call raises it.
    error: Option<StreamError>,
}

/// Reads a streamed OpenAI Responses API answer (`response.*` server-sent events) into
/// rillet Message chunks.
///
/// Feed it the response bytes as they arrive, in any pieces; call `finish()` at the end.
/// Chunks have the same shape as `ChatStreamParser`'s. A reasoning item arrives as a chunk
/// whose `extra["openai_reasoning"]` maps its id to its summary parts and encrypted content,
/// so the next request can send it back; a function call's item id is in its
/// `extra["item_id"]`. A line longer than `max_sse_line_bytes`, or an event with more data
/// than `max_sse_event_bytes`, raises `StreamLimitError` before it is buffered.
#[pyclass(frozen, module = "rillet", name = "ResponsesStreamParser")]
pub struct ResponsesStreamParser {
    state: Mutex<State>,
}

impl ResponsesStreamParser {
    fn run<'py>(
        &self,
        py: Python<'py>,
        step: impl FnOnce(
            &mut responses::ResponsesStreamParser,
            &mut Vec<core::Message>,
        ) -> Result<(), StreamError>,
    ) -> PyResult<Bound<'py, PyList>> {
        let mut out = Vec::new();
        let error = {
            let mut state = self.state.lock_py_attached(py);
            if let Some(err) = &state.error {
                Some(err.clone())
            } else {
                let result = step(&mut state.parser, &mut out);
                state.error = result.err();
                // Chunks before the bad line are returned; the error comes with the next call.
                state.error.clone().filter(|_| out.is_empty())
            }
        };
        if let Some(err) = error {
            return Err(stream_error(py, &err));
        }
        let items: PyResult<Vec<_>> = out
            .into_iter()
            .map(|m| Bound::new(py, Message::wrap(m)))
            .collect();
        PyList::new(py, items?)
    }
}

const _: () = assert!(SseLimits::DEFAULT_MAX_LINE == 4194304);
const _: () = assert!(SseLimits::DEFAULT_MAX_EVENT == 16777216);

#[pymethods]
impl ResponsesStreamParser {
    #[new]
    #[pyo3(signature = (*, max_sse_line_bytes=4194304, max_sse_event_bytes=16777216))]
    fn new(max_sse_line_bytes: usize, max_sse_event_bytes: usize) -> PyResult<Self> {
        if max_sse_line_bytes == 0 || max_sse_event_bytes == 0 {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "max_sse_line_bytes and max_sse_event_bytes must be positive, got \
                 {max_sse_line_bytes} and {max_sse_event_bytes}"
            )));
        }
        let limits = SseLimits {
            max_line: max_sse_line_bytes,
            max_event: max_sse_event_bytes,
        };
        Ok(ResponsesStreamParser {
            state: Mutex::new(State {
                parser: responses::ResponsesStreamParser::new(limits),
                error: None,
            }),
        })
    }

    /// Reads `data` and returns the chunks it completes (often none, sometimes several).
    ///
    /// A malformed event raises `MalformedChunkError` naming the line; an `error` or
    /// `response.failed` event raises `ModelStreamError` with the server's code. Chunks
    /// before the offending line are returned first, and the error is raised by the next
    /// call (and every one after it).
    fn feed<'py>(&self, py: Python<'py>, data: Cow<'_, [u8]>) -> PyResult<Bound<'py, PyList>> {
        self.run(py, |p, out| p.feed(&data, out))
    }

    /// The response has ended: returns the last chunks. Raises `IncompleteStreamError` when
    /// the stream stopped before `response.completed` or `response.incomplete`.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.run(py, |p, out| p.finish(out))
    }

    /// True once a terminal event (`response.completed`, `response.incomplete`) was read.
    #[getter]
    fn done(&self, py: Python<'_>) -> bool {
        self.state.lock_py_attached(py).parser.finished()
    }

    /// The number of lines read so far.
    #[getter]
    fn lines(&self, py: Python<'_>) -> usize {
        self.state.lock_py_attached(py).parser.lines()
    }
}

/// Reads a whole (non-streamed) Responses API body into one assistant Message: output text,
/// refusal, reasoning summary (and the reasoning items in `extra`), function calls, usage.
#[pyfunction]
pub fn parse_response(py: Python<'_>, body: Cow<'_, [u8]>) -> PyResult<Message> {
    let text = std::str::from_utf8(&body).map_err(|e| {
        let line = 1 + memchr::memchr_iter(b'\n', &body[..e.valid_up_to()]).count();
        stream_error(py, &StreamError::InvalidUtf8 { line })
    })?;
    responses::parse_response(text)
        .map(Message::wrap)
        .map_err(|e| stream_error(py, &e))
}
