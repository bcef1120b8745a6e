//! `AnthropicStreamParser` and `parse_anthropic_message`: Python entry points of
//! [`crate::anthropic`]. Errors are raised as the model errors of `rillet.errors`, through
//! the chat-completions parser's mapping.

use std::borrow::Cow;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::PyList;

use crate::anthropic;
use crate::message as core;
use crate::py::message::Message;
use crate::py::sse::stream_error;
use crate::sse::{SseLimits, StreamError};

struct State {
    parser: anthropic::AnthropicStreamParser,
    /// Once an error was found, every later call raises it.
    error: Option<StreamError>,
}

/// Reads a streamed Anthropic Messages API answer (server-sent events) into rillet Message
/// chunks.
///
/// Feed it the response bytes as they arrive, in any pieces; call `finish()` at the end.
/// Text deltas become `content`, thinking deltas `reasoning_content`, each tool_use block a
/// tool call (index 0, 1, ... in block order; id and name on its first chunk, the
/// `partial_json` pieces as arguments), `message_delta` the finish reason and usage. Thinking
/// signatures and redacted thinking go in `extra["anthropic_thinking"]`, keyed by block index.
/// A line longer than `max_sse_line_bytes`, or an event with more data than
/// `max_sse_event_bytes`, raises `StreamLimitError` before it is buffered.
#[pyclass(frozen, module = "rillet", name = "AnthropicStreamParser")]
pub struct AnthropicStreamParser {
    state: Mutex<State>,
}

impl AnthropicStreamParser {
    fn run<'py>(
        &self,
        py: Python<'py>,
        step: impl FnOnce(
            &mut anthropic::AnthropicStreamParser,
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

// The defaults are spelled out below so that the Python signature shows them.
const _: () = assert!(SseLimits::DEFAULT_MAX_LINE == 4194304);
const _: () = assert!(SseLimits::DEFAULT_MAX_EVENT == 16777216);

#[pymethods]
impl AnthropicStreamParser {
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
        Ok(AnthropicStreamParser {
            state: Mutex::new(State {
                parser: anthropic::AnthropicStreamParser::with_limits(limits),
                error: None,
            }),
        })
    }

    /// Reads `data` and returns the chunks it completes (often none, sometimes several).
    ///
    /// A malformed event raises `MalformedChunkError` naming the line; an `error` event
    /// raises `ModelStreamError` with the error's type as `code` (`overloaded_error`...).
    /// Chunks before the offending line are returned first; the error comes with the next call.
    fn feed<'py>(&self, py: Python<'py>, data: Cow<'_, [u8]>) -> PyResult<Bound<'py, PyList>> {
        self.run(py, |p, out| p.feed(&data, out))
    }

    /// The response has ended: returns the last chunks. Raises `IncompleteStreamError` when
    /// the stream stopped before its stop reason and `message_stop`.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.run(py, |p, out| p.finish(out))
    }

    /// True once `message_stop` was read.
    #[getter]
    fn done(&self, py: Python<'_>) -> bool {
        self.state.lock_py_attached(py).parser.done()
    }

    /// The number of lines read so far.
    #[getter]
    fn lines(&self, py: Python<'_>) -> usize {
        self.state.lock_py_attached(py).parser.lines()
    }
}

/// Reads a whole (non-streamed) Messages API response body into one assistant Message, with
/// the stream's rules (thinking in `reasoning_content` and `extra`, tool calls unindexed).
#[pyfunction]
pub fn parse_anthropic_message(py: Python<'_>, body: Cow<'_, [u8]>) -> PyResult<Message> {
    let text = std::str::from_utf8(&body).map_err(|e| {
        let line = 1 + memchr::memchr_iter(b'\n', &body[..e.valid_up_to()]).count();
        stream_error(py, &StreamError::InvalidUtf8 { line })
    })?;
    anthropic::parse_message(text)
        .map(Message::wrap)
        .map_err(|e| stream_error(py, &e))
}
