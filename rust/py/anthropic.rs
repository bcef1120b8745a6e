//! `AnthropicStreamParser` and `parse_anthropic_message`: Python entry points of
//! [`crate::anthropic`]. Errors are raised as the model errors of `rillet.errors`, through
//! the chat-completions parser's mapping.

use std::borrow::Cow;

use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::anthropic;
use crate::message as core;
use crate::py::message::Message;
use crate::py::sse::{body_text, limits, stream_error, Guarded, WireParser};
use crate::sse::StreamError;

impl WireParser for anthropic::AnthropicStreamParser {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<core::Message>) -> Result<(), StreamError> {
        anthropic::AnthropicStreamParser::feed(self, bytes, out)
    }
    fn finish(&mut self, out: &mut Vec<core::Message>) -> Result<(), StreamError> {
        anthropic::AnthropicStreamParser::finish(self, out)
    }
    fn done(&self) -> bool {
        anthropic::AnthropicStreamParser::done(self)
    }
    fn lines(&self) -> usize {
        anthropic::AnthropicStreamParser::lines(self)
    }
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
pub struct AnthropicStreamParser(Guarded<anthropic::AnthropicStreamParser>);

#[pymethods]
impl AnthropicStreamParser {
    #[new]
    #[pyo3(signature = (*, max_sse_line_bytes=4194304, max_sse_event_bytes=16777216))]
    fn new(max_sse_line_bytes: usize, max_sse_event_bytes: usize) -> PyResult<Self> {
        let limits = limits(max_sse_line_bytes, max_sse_event_bytes)?;
        Ok(AnthropicStreamParser(Guarded::new(
            anthropic::AnthropicStreamParser::with_limits(limits),
        )))
    }

    /// Reads `data` and returns the chunks it completes (often none, sometimes several).
    ///
    /// A malformed event raises `MalformedChunkError` naming the line; an `error` event
    /// raises `ModelStreamError` with the error's type as `code` (`overloaded_error`...).
    /// Chunks before the offending line are returned first; the error comes with the next call.
    fn feed<'py>(&self, py: Python<'py>, data: Cow<'_, [u8]>) -> PyResult<Bound<'py, PyList>> {
        self.0.feed(py, &data)
    }

    /// The response has ended: returns the last chunks. Raises `IncompleteStreamError` when
    /// the stream stopped before its stop reason and `message_stop`.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.0.finish(py)
    }

    /// True once `message_stop` was read.
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

/// Reads a whole (non-streamed) Messages API response body into one assistant Message, with
/// the stream's rules (thinking in `reasoning_content` and `extra`, tool calls unindexed).
#[pyfunction]
pub fn parse_anthropic_message(py: Python<'_>, body: Cow<'_, [u8]>) -> PyResult<Message> {
    anthropic::parse_message(body_text(py, &body)?)
        .map(Message::wrap)
        .map_err(|e| stream_error(py, &e))
}
