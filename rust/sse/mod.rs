//! Server-sent event streams of model APIs, in pure Rust: bytes in, message chunks out.
//!
//! One skeleton reads every protocol: [`SseDecoder`] ([`decoder`]) splits the bytes into
//! events within [`SseLimits`], and a [`StreamParser`] hands each event to a [`Protocol`], the
//! per-protocol state that turns events into [`Message`] chunks in Eino's shape (what
//! [`crate::concat`] expects): OpenAI chat completions ([`chat`]), OpenAI's Responses API
//! ([`responses`]) and Anthropic's Messages API ([`anthropic`]). All three report the same
//! [`StreamError`]s, with line numbers counted by the decoder.

pub mod anthropic;
pub mod chat;
mod decoder;
pub mod responses;

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::message::Message;

pub use anthropic::AnthropicStreamParser;
pub use chat::{ChatStreamParser, ParserOptions};
pub use decoder::{SseDecoder, SseEvent, SseLimits};
pub use responses::ResponsesStreamParser;

// ---------------------------------------------------------------------------------------
// Errors

/// Why a stream could not be read. Line numbers count the stream's lines from 1.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StreamError {
    /// A line is not valid UTF-8.
    InvalidUtf8 { line: usize },
    /// A `data:` payload is not a chat-completions chunk.
    Malformed {
        line: usize,
        reason: String,
        text: String,
    },
    /// The server sent an error object in place of a chunk.
    Server {
        line: usize,
        message: String,
        code: Option<String>,
    },
    /// The stream ended before the model finished (no finish reason and no `[DONE]`).
    Truncated { line: usize },
    /// Another protocol's stream ended before its last event (`missing` names it).
    Unfinished { line: usize, missing: &'static str },
    /// A line, or an event's data, is longer than its limit (see [`SseLimits`]).
    TooLarge {
        line: usize,
        limit: Limit,
        bytes: usize,
    },
}

/// Which of the [`SseLimits`] a stream went over.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Line,
    Event,
}

impl Limit {
    /// The keyword that sets it (on `ChatStreamParser` and `OpenAIChatModel`).
    pub fn keyword(self) -> &'static str {
        match self {
            Limit::Line => "max_sse_line_bytes",
            Limit::Event => "max_sse_event_bytes",
        }
    }
}

impl StreamError {
    /// The line the error was found at (for `Truncated`, the last line read).
    pub fn line(&self) -> usize {
        match self {
            StreamError::InvalidUtf8 { line }
            | StreamError::Malformed { line, .. }
            | StreamError::Server { line, .. }
            | StreamError::Truncated { line }
            | StreamError::Unfinished { line, .. }
            | StreamError::TooLarge { line, .. } => *line,
        }
    }
}

impl fmt::Display for StreamError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StreamError::InvalidUtf8 { line } => {
                write!(f, "line {line} of the event stream is not valid UTF-8")
            }
            StreamError::Malformed { line, reason, text } => write!(
                f,
                "malformed chunk at line {line} of the event stream ({reason}): {text}"
            ),
            StreamError::Server {
                line,
                message,
                code,
            } => {
                write!(f, "the server sent an error at line {line} of the stream")?;
                if let Some(code) = code {
                    write!(f, " ({code})")?;
                }
                write!(f, ": {message}")
            }
            StreamError::Truncated { line } => write!(
                f,
                "the stream ended after line {line} before the model finished (no finish_reason \
                 and no [DONE]): the connection was probably cut"
            ),
            StreamError::Unfinished { line, missing } => write!(
                f,
                "the stream ended after line {line} before {missing}: the connection was \
                 probably cut"
            ),
            StreamError::TooLarge { line, limit, bytes } => {
                let what = match limit {
                    Limit::Line => format!("line {line} of the event stream"),
                    Limit::Event => format!("the data of the event starting at line {line}"),
                };
                write!(
                    f,
                    "{what} is longer than {bytes} bytes, the limit set by {keyword}={bytes}: \
                     raise {keyword}= if the server really sends that much",
                    keyword = limit.keyword()
                )
            }
        }
    }
}

impl std::error::Error for StreamError {}

/// At most this many characters of an offending line are quoted in an error.
const EXCERPT_CHARS: usize = 120;

pub(crate) fn excerpt(text: &str) -> String {
    let mut out: String = text.chars().take(EXCERPT_CHARS).collect();
    if out.len() < text.len() {
        out.push_str("...");
    }
    out
}

/// A quoted `data:` payload that a protocol cannot read.
pub(crate) fn malformed(line: usize, reason: impl Into<String>, data: &str) -> StreamError {
    StreamError::Malformed {
        line,
        reason: reason.into(),
        text: format!("data: {}", excerpt(data)),
    }
}

/// A whole (non-streamed) response body as `T`, or `Malformed` quoting the line at fault.
pub(crate) fn parse_body<'a, T: Deserialize<'a>>(body: &'a str) -> Result<T, StreamError> {
    serde_json::from_str(body).map_err(|e| {
        let at = e.line().max(1);
        StreamError::Malformed {
            line: at,
            reason: e.to_string(),
            text: excerpt(body.lines().nth(at - 1).unwrap_or(body)),
        }
    })
}

// ---------------------------------------------------------------------------------------
// The skeleton: one decoder, a protocol's state

/// What one protocol makes of the events: chat completions ([`chat::State`]), Responses
/// ([`responses::State`]) or Anthropic ([`anthropic::State`]).
pub trait Protocol {
    /// Reads one event, appending the chunks it completes to `out`.
    fn on_event(&mut self, ev: SseEvent<'_>, out: &mut Vec<Message>) -> Result<(), StreamError>;

    /// The bytes have ended after `line` lines: appends the last chunks, or fails when the
    /// stream stopped before the protocol's end.
    fn finish(&mut self, line: usize, out: &mut Vec<Message>) -> Result<(), StreamError>;

    /// The protocol's last event was read.
    fn done(&self) -> bool;
}

/// Bytes of one protocol's stream in, [`Message`] chunks out: the [`SseDecoder`] that frames
/// the events and the [`Protocol`] state that reads them.
#[derive(Debug, Default)]
pub struct StreamParser<P> {
    sse: SseDecoder,
    state: P,
}

impl<P: Protocol> StreamParser<P> {
    /// A parser with the default [`SseLimits`].
    pub fn new(state: P) -> Self {
        Self::with_limits(state, SseLimits::default())
    }

    pub fn with_limits(state: P, limits: SseLimits) -> Self {
        StreamParser {
            sse: SseDecoder::with_limits(limits),
            state,
        }
    }

    /// Reads `bytes` and appends the chunks they complete to `out`. On an error, `out`
    /// holds the chunks before the offending line.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<Message>) -> Result<(), StreamError> {
        let state = &mut self.state;
        self.sse.feed(bytes, |ev| state.on_event(ev, out))
    }

    /// The bytes have ended: reads what is left and appends the last chunks. Fails (with
    /// [`StreamError::Truncated`] or [`StreamError::Unfinished`]) when the stream stopped
    /// before the protocol's end.
    pub fn finish(&mut self, out: &mut Vec<Message>) -> Result<(), StreamError> {
        let state = &mut self.state;
        self.sse.finish(|ev| state.on_event(ev, out))?;
        self.state.finish(self.sse.lines(), out)
    }

    /// The protocol's last event was read.
    pub fn done(&self) -> bool {
        self.state.done()
    }

    /// Lines read so far.
    pub fn lines(&self) -> usize {
        self.sse.lines()
    }
}

// ---------------------------------------------------------------------------------------
// JSON shared by the OpenAI protocols

/// A text field that tolerates what servers put there: a string, null, a list of content
/// parts (their `text` joined) or an object (kept as its JSON text, as Ollama's native API
/// sends tool arguments).
#[derive(Debug, Default)]
pub(crate) struct Text<'a>(Option<Cow<'a, str>>);

impl<'a> Text<'a> {
    pub(crate) fn get(&self) -> &str {
        self.0.as_deref().unwrap_or("")
    }
}

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V<'a>(std::marker::PhantomData<&'a ()>);
        impl<'de: 'a, 'a> Visitor<'de> for V<'a> {
            type Value = Text<'a>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string, null, a list of content parts or an object")
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'a>, E> {
                Ok(Text(Some(Cow::Borrowed(v))))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'a>, E> {
                Ok(Text(Some(Cow::Owned(v.to_owned()))))
            }
            fn visit_string<E: de::Error>(self, v: String) -> Result<Text<'a>, E> {
                Ok(Text(Some(Cow::Owned(v))))
            }
            fn visit_unit<E: de::Error>(self) -> Result<Text<'a>, E> {
                Ok(Text(None))
            }
            fn visit_none<E: de::Error>(self) -> Result<Text<'a>, E> {
                Ok(Text(None))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Text<'a>, A::Error> {
                let mut out = String::new();
                while let Some(part) = seq.next_element::<serde_json::Value>()? {
                    if let Some(t) = part.get("text").and_then(|t| t.as_str()) {
                        out.push_str(t);
                    }
                }
                Ok(Text(Some(Cow::Owned(out))))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Text<'a>, A::Error> {
                let v = serde_json::Value::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Text(Some(Cow::Owned(v.to_string()))))
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

/// The message of an error object: `{"error": {"message": ..., "code": ...}}` or
/// `{"error": "text"}`; and its code or type, when given.
pub(crate) fn error_parts(error: &serde_json::Value) -> (String, Option<String>) {
    match error {
        serde_json::Value::String(s) => (s.clone(), None),
        serde_json::Value::Object(o) => {
            let message = o
                .get("message")
                .and_then(|m| m.as_str())
                .map(str::to_owned)
                .unwrap_or_else(|| error.to_string());
            let code = ["code", "type"].iter().find_map(|k| match o.get(*k) {
                Some(serde_json::Value::String(s)) => Some(s.clone()),
                Some(serde_json::Value::Number(n)) => Some(n.to_string()),
                _ => None,
            });
            (message, code)
        }
        other => (other.to_string(), None),
    }
}

// ---------------------------------------------------------------------------------------
// What the protocols' tests share

#[cfg(test)]
pub(crate) mod testing {
    use super::{Protocol, StreamError, StreamParser};
    use crate::message::{FunctionCall, Message, ToolCall};

    /// Feeds `pieces` to `parser` one after another, then finishes: every chunk, or the error
    /// with the chunks read before it.
    pub(crate) fn parse_pieces<P: Protocol>(
        mut parser: StreamParser<P>,
        pieces: &[&[u8]],
    ) -> Result<Vec<Message>, (Vec<Message>, StreamError)> {
        let mut out = Vec::new();
        for piece in pieces {
            if let Err(e) = parser.feed(piece, &mut out) {
                return Err((out, e));
            }
        }
        match parser.finish(&mut out) {
            Ok(()) => Ok(out),
            Err(e) => Err((out, e)),
        }
    }

    /// A streamed call's first chunk as the parsers make it: typed `function` when it has an id.
    pub(crate) fn call(index: i64, id: &str, name: &str, arguments: &str) -> ToolCall {
        ToolCall {
            index: Some(index),
            id: id.into(),
            kind: if id.is_empty() { "" } else { "function" }.into(),
            function: FunctionCall {
                name: name.into(),
                arguments: arguments.into(),
            },
            extra: None,
        }
    }
}
