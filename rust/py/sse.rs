//! The stream parser classes and whole-body readers of [`crate::sse`]: `ChatStreamParser` and
//! `parse_chat_completion` (chat completions), `ResponsesStreamParser` and `parse_response`
//! (OpenAI's Responses API), `AnthropicStreamParser` and `parse_anthropic_message`
//! (Anthropic's Messages API).
//!
//! Bytes go in and `Message` chunks come out; the JSON is read in Rust, so no Python code
//! runs per token. The three classes have one shape, made by [`stream_parser_class!`] over a
//! [`Guarded`] [`StreamParser`]. Errors are raised as the model errors of `rillet.errors`.

use std::borrow::Cow;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyDict, PyList};

use crate::message as core;
use crate::py::errors::{self, Class};
use crate::py::message::Message;
use crate::sse::{
    anthropic, chat, responses, ParserOptions, Protocol, SseLimits, StreamError, StreamParser,
};

/// The Python exception for `err`: `MalformedChunkError` (bad JSON or UTF-8),
/// `ModelStreamError` (an error object from the server), `IncompleteStreamError` (the
/// stream stopped early) or `StreamLimitError` (a line or event over its limit, with
/// `limit` set to the keyword that raises it), each with `line` set.
fn stream_error(py: Python<'_>, err: &StreamError) -> PyErr {
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

/// A parser behind the lock of a frozen Python object, with the error that stopped it: the
/// chunks before a bad line are returned, and the error is raised by the next call and by
/// every one after it.
struct Guarded<P> {
    state: Mutex<(StreamParser<P>, Option<StreamError>)>,
}

impl<P: Protocol> Guarded<P> {
    fn new(state: P, limits: SseLimits) -> Self {
        Guarded {
            state: Mutex::new((StreamParser::with_limits(state, limits), None)),
        }
    }

    fn run(
        &self,
        py: Python<'_>,
        step: impl FnOnce(&mut StreamParser<P>, &mut Vec<core::Message>) -> Result<(), StreamError>,
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

    fn feed<'py>(&self, py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyList>> {
        let out = self.run(py, |p, out| p.feed(data, out))?;
        to_list(py, out)
    }

    fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
        let out = self.run(py, |p, out| p.finish(out))?;
        to_list(py, out)
    }

    fn done(&self, py: Python<'_>) -> bool {
        self.state.lock_py_attached(py).0.done()
    }

    fn lines(&self, py: Python<'_>) -> usize {
        self.state.lock_py_attached(py).0.lines()
    }
}

// The parser classes spell the defaults out in their signatures, so that Python shows them.
const _: () = assert!(SseLimits::DEFAULT_MAX_LINE == 4194304);
const _: () = assert!(SseLimits::DEFAULT_MAX_EVENT == 16777216);

/// The limits of a parser class's keywords, both positive.
fn limits(max_sse_line_bytes: usize, max_sse_event_bytes: usize) -> PyResult<SseLimits> {
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
fn body_text<'a>(py: Python<'_>, body: &'a [u8]) -> PyResult<&'a str> {
    std::str::from_utf8(body).map_err(|e| {
        let line = 1 + memchr::memchr_iter(b'\n', &body[..e.valid_up_to()]).count();
        stream_error(py, &StreamError::InvalidUtf8 { line })
    })
}

/// One parser class: a frozen `$name` holding a [`Guarded`] parser of `$state`, with `feed`,
/// `finish` and the `done` and `lines` getters. What differs between the protocols is given:
/// the class's docstring, its constructor (inside the braces; `$name($state);` for a protocol
/// without options, whose constructor takes the limits only and starts from the default
/// state), and the docstrings of `feed`, `finish` and `done`.
macro_rules! stream_parser_class {
    (
        $(#[$($class:tt)*])*
        $name:ident($state:ty);
        $($methods:tt)*
    ) => {
        stream_parser_class! {
            $(#[$($class)*])*
            $name($state) {
                #[new]
                #[pyo3(signature = (*, max_sse_line_bytes=4194304, max_sse_event_bytes=16777216))]
                fn new(max_sse_line_bytes: usize, max_sse_event_bytes: usize) -> PyResult<Self> {
                    let limits = limits(max_sse_line_bytes, max_sse_event_bytes)?;
                    Ok($name(Guarded::new(<$state>::default(), limits)))
                }
            }
            $($methods)*
        }
    };
    (
        $(#[$($class:tt)*])*
        $name:ident($state:ty) { $($new:tt)* }
        $(#[$($feed:tt)*])* feed;
        $(#[$($finish:tt)*])* finish;
        $(#[$($done:tt)*])* done;
    ) => {
        $(#[$($class)*])*
        #[pyclass(frozen, module = "rillet")]
        pub struct $name(Guarded<$state>);

        #[pymethods]
        impl $name {
            $($new)*

            $(#[$($feed)*])*
            fn feed<'py>(
                &self,
                py: Python<'py>,
                data: Cow<'_, [u8]>,
            ) -> PyResult<Bound<'py, PyList>> {
                self.0.feed(py, &data)
            }

            $(#[$($finish)*])*
            fn finish<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyList>> {
                self.0.finish(py)
            }

            $(#[$($done)*])*
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
    };
}

stream_parser_class! {
    /// Reads a streamed chat completion (server-sent events) into rillet Message chunks.
    ///
    /// Feed it the response bytes as they arrive, in any pieces; call `finish()` at the end.
    /// Chunks have Eino's shape: role on the first, tool-call index on every tool-call delta,
    /// id and name on a call's first delta, finish reason and usage where the server sent them.
    /// `think_tags` moves `<think>...</think>` text from the content to `reasoning_content`;
    /// calls the server sent without an id get `id_prefix` plus their index. A line longer than
    /// `max_sse_line_bytes`, or an event with more data than `max_sse_event_bytes`, raises
    /// `StreamLimitError` before it is buffered (defaults: 4 MiB and 16 MiB).
    ChatStreamParser(chat::State) {
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
            let state = chat::State::new(options(think_tags, id_prefix));
            Ok(ChatStreamParser(Guarded::new(state, limits)))
        }
    }

    /// Reads `data` and returns the chunks it completes (often none, sometimes several).
    ///
    /// A malformed line raises `rillet.models.MalformedChunkError` naming the line; an error
    /// object from the server raises `ModelStreamError`. Chunks before the offending line are
    /// returned first, and the error is raised by the next call (and every one after it).
    feed;

    /// The response has ended: returns the last chunks. Raises `IncompleteStreamError` when
    /// the stream stopped before the model finished (no finish reason and no `[DONE]`).
    finish;

    /// True once `data: [DONE]` was read.
    done;
}

stream_parser_class! {
    /// Reads a streamed OpenAI Responses API answer (`response.*` server-sent events) into
    /// rillet Message chunks.
    ///
    /// Feed it the response bytes as they arrive, in any pieces; call `finish()` at the end.
    /// Chunks have the same shape as `ChatStreamParser`'s. A reasoning item arrives as a chunk
    /// whose `extra["openai_reasoning"]` maps its id to its summary parts and encrypted content,
    /// so the next request can send it back; a function call's item id is in its
    /// `extra["item_id"]`. A line longer than `max_sse_line_bytes`, or an event with more data
    /// than `max_sse_event_bytes`, raises `StreamLimitError` before it is buffered.
    ResponsesStreamParser(responses::State);

    /// Reads `data` and returns the chunks it completes (often none, sometimes several).
    ///
    /// A malformed event raises `MalformedChunkError` naming the line; an `error` or
    /// `response.failed` event raises `ModelStreamError` with the server's code. Chunks
    /// before the offending line are returned first, and the error is raised by the next
    /// call (and every one after it).
    feed;

    /// The response has ended: returns the last chunks. Raises `IncompleteStreamError` when
    /// the stream stopped before `response.completed` or `response.incomplete`.
    finish;

    /// True once a terminal event (`response.completed`, `response.incomplete`) was read.
    done;
}

stream_parser_class! {
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
    AnthropicStreamParser(anthropic::State);

    /// Reads `data` and returns the chunks it completes (often none, sometimes several).
    ///
    /// A malformed event raises `MalformedChunkError` naming the line; an `error` event
    /// raises `ModelStreamError` with the error's type as `code` (`overloaded_error`...).
    /// Chunks before the offending line are returned first; the error comes with the next call.
    feed;

    /// The response has ended: returns the last chunks. Raises `IncompleteStreamError` when
    /// the stream stopped before its stop reason and `message_stop`.
    finish;

    /// True once `message_stop` was read.
    done;
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
    chat::parse_completion(text, options(think_tags, id_prefix))
        .map(Message::wrap)
        .map_err(|e| stream_error(py, &e))
}

/// Reads a whole (non-streamed) Responses API body into one assistant Message: output text,
/// refusal, reasoning summary (and the reasoning items in `extra`), function calls, usage.
#[pyfunction]
pub fn parse_response(py: Python<'_>, body: Cow<'_, [u8]>) -> PyResult<Message> {
    responses::parse_response(body_text(py, &body)?)
        .map(Message::wrap)
        .map_err(|e| stream_error(py, &e))
}

/// Reads a whole (non-streamed) Messages API response body into one assistant Message, with
/// the stream's rules (thinking in `reasoning_content` and `extra`, tool calls unindexed).
#[pyfunction]
pub fn parse_anthropic_message(py: Python<'_>, body: Cow<'_, [u8]>) -> PyResult<Message> {
    anthropic::parse_message(body_text(py, &body)?)
        .map(Message::wrap)
        .map_err(|e| stream_error(py, &e))
}
