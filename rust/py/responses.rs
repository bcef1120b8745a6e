//! `ResponsesStreamParser` and `parse_response`: Python entry points of [`crate::responses`].
//!
//! Bytes of OpenAI's Responses API go in and `Message` chunks come out, read in Rust; errors
//! are the same model errors as the chat-completions parser's (see [`crate::py::sse`]).

use std::borrow::Cow;

use pyo3::prelude::*;
use pyo3::types::PyList;

use crate::message as core;
use crate::py::message::Message;
use crate::py::sse::{body_text, limits, stream_error, Guarded, WireParser};
use crate::responses;
use crate::sse::StreamError;

impl WireParser for responses::ResponsesStreamParser {
    fn feed(&mut self, bytes: &[u8], out: &mut Vec<core::Message>) -> Result<(), StreamError> {
        responses::ResponsesStreamParser::feed(self, bytes, out)
    }
    fn finish(&mut self, out: &mut Vec<core::Message>) -> Result<(), StreamError> {
        responses::ResponsesStreamParser::finish(self, out)
    }
    fn done(&self) -> bool {
        self.finished()
    }
    fn lines(&self) -> usize {
        responses::ResponsesStreamParser::lines(self)
    }
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
pub struct ResponsesStreamParser(Guarded<responses::ResponsesStreamParser>);

#[pymethods]
impl ResponsesStreamParser {
    #[new]
    #[pyo3(signature = (*, max_sse_line_bytes=4194304, max_sse_event_bytes=16777216))]
    fn new(max_sse_line_bytes: usize, max_sse_event_bytes: usize) -> PyResult<Self> {
        let limits = limits(max_sse_line_bytes, max_sse_event_bytes)?;
        Ok(ResponsesStreamParser(Guarded::new(
            responses::ResponsesStreamParser::new(limits),
        )))
    }

    /// Reads `data` and returns the chunks it completes (often none, sometimes several).
    ///
    /// A malformed event raises `MalformedChunkError` naming the line; an `error` or
    /// `response.failed` event raises `ModelStreamError` with the server's code. Chunks
    /// before the offending line are returned first, and the error is raised by the next
    /// call (and every one after it).
    fn feed<'py>(&self, py: Python<'py>, data: Cow<'_, [u8]>) -> PyResult<Bound<'py, PyList>> {
        self.0.feed(py, &data)
    }

    /// The response has ended: returns the last chunks. Raises `IncompleteStreamError` when
    /// the stream stopped before `response.completed` or `response.incomplete`.
    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        self.0.finish(py)
    }

    /// True once a terminal event (`response.completed`, `response.incomplete`) was read.
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

/// Reads a whole (non-streamed) Responses API body into one assistant Message: output text,
/// refusal, reasoning summary (and the reasoning items in `extra`), function calls, usage.
#[pyfunction]
pub fn parse_response(py: Python<'_>, body: Cow<'_, [u8]>) -> PyResult<Message> {
    responses::parse_response(body_text(py, &body)?)
        .map(Message::wrap)
        .map_err(|e| stream_error(py, &e))
}
