//! Server-sent events and OpenAI chat-completions chunks, in pure Rust: bytes in, message
//! chunks out.
//!
//! [`SseDecoder`] splits a byte stream into events (the WHATWG `text/event-stream` rules:
//! `\n`, `\r\n` and `\r` line ends, `:` comments, multi-line `data:`, events ended by a blank
//! line). It buffers bytes, not text, so a UTF-8 character split across network reads is
//! whole again before it is decoded.
//!
//! [`ChatStreamParser`] turns each `data:` JSON chunk of a streamed chat completion into one
//! [`Message`] chunk in Eino's shape, which is what [`crate::concat`] expects: the role on
//! the first chunk only; the tool-call `index` on every tool-call delta, the call's id, type
//! and name on its first delta only; the finish reason on the chunk that carries it; usage on
//! the chunk that carries it (usually the last). It copes with the dialects of
//! OpenAI-compatible servers:
//!
//! * tool-call deltas without `index`, or with `index` 0 for every call (Ollama): a new id,
//!   or a new name (or the same name again once arguments arrived) starts a new call;
//! * calls without ids get stable generated ids (`call_0`, `call_1`, ... by output index);
//! * usage on the last choice chunk, in a chunk with `choices: []`, on every chunk
//!   (cumulative), or absent;
//! * reasoning text in `delta.reasoning_content` or `delta.reasoning`, or inline in the
//!   content between `<think>` and `</think>` (tags may straddle chunks; a switch);
//! * `[DONE]`, or EOF without it once a finish reason was seen;
//! * `{"error": ...}` objects and `event: error` in the middle of a stream.
//!
//! Only the first choice (`index` 0) is read; requests with `n > 1` are not supported.

use std::borrow::Cow;
use std::fmt;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;

use crate::message::{FunctionCall, Message, ResponseMeta, ToolCall, Usage};

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

// ---------------------------------------------------------------------------------------
// SSE framing

/// One dispatched event: its `event:` name ("" when none was given), its data lines joined
/// with `\n`, and the line its first `data:` line was on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SseEvent<'a> {
    pub event: &'a str,
    pub data: &'a str,
    pub line: usize,
}

/// The most a [`SseDecoder`] holds, so a server (or anything between) sending a line that
/// never ends cannot make it buffer without bound. A chat-completions chunk is one line of
/// a few hundred bytes; the defaults leave room for a whole long answer in one chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SseLimits {
    /// The longest line, in bytes, without its line end.
    pub max_line: usize,
    /// The most data one event may gather, in bytes (its `data:` lines joined).
    pub max_event: usize,
}

impl SseLimits {
    pub const DEFAULT_MAX_LINE: usize = 4 << 20;
    pub const DEFAULT_MAX_EVENT: usize = 16 << 20;
}

impl Default for SseLimits {
    fn default() -> Self {
        SseLimits {
            max_line: Self::DEFAULT_MAX_LINE,
            max_event: Self::DEFAULT_MAX_EVENT,
        }
    }
}

/// Splits bytes into server-sent events. Feed it bytes as they arrive, in any pieces.
#[derive(Debug, Default)]
pub struct SseDecoder {
    limits: SseLimits,
    /// The bytes of the line in progress.
    partial: Vec<u8>,
    /// The last bytes fed ended with `\r`: a `\n` first in the next bytes belongs to it.
    after_cr: bool,
    /// Lines completed so far.
    line: usize,
    event: String,
    data: String,
    has_data: bool,
    data_line: usize,
}

impl SseDecoder {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn with_limits(limits: SseLimits) -> Self {
        SseDecoder {
            limits,
            ..Self::default()
        }
    }

    /// Lines completed so far.
    pub fn lines(&self) -> usize {
        self.line
    }

    /// Reads `bytes`; calls `on_event` for every event they complete, in order. On an error
    /// the bytes after the offending line are dropped (the stream is unusable).
    pub fn feed<E>(
        &mut self,
        bytes: &[u8],
        mut on_event: impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<StreamError>,
    {
        let mut rest = bytes;
        if self.after_cr && !rest.is_empty() {
            self.after_cr = false;
            if rest[0] == b'\n' {
                rest = &rest[1..];
            }
        }
        while let Some(i) = memchr::memchr2(b'\n', b'\r', rest) {
            self.check_line(self.partial.len() + i)?;
            if self.partial.is_empty() {
                self.line_done(&rest[..i], &mut on_event)?;
            } else {
                let mut line = std::mem::take(&mut self.partial);
                line.extend_from_slice(&rest[..i]);
                let result = self.line_done(&line, &mut on_event);
                line.clear();
                self.partial = line;
                result?;
            }
            let ended_by_cr = rest[i] == b'\r';
            rest = &rest[i + 1..];
            if ended_by_cr {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    Some(_) => {}
                    None => self.after_cr = true,
                }
            }
        }
        // Refused before it is buffered: the line in progress never outgrows the limit.
        self.check_line(self.partial.len() + rest.len())?;
        self.partial.extend_from_slice(rest);
        Ok(())
    }

    /// Fails if the line in progress, `len` bytes so far, is over the line limit.
    fn check_line(&self, len: usize) -> Result<(), StreamError> {
        if len <= self.limits.max_line {
            return Ok(());
        }
        Err(StreamError::TooLarge {
            line: self.line + 1,
            limit: Limit::Line,
            bytes: self.limits.max_line,
        })
    }

    /// The bytes have ended: an unterminated last line counts as a line, and an event still
    /// open (no blank line after it) is dispatched rather than dropped.
    pub fn finish<E>(
        &mut self,
        mut on_event: impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<StreamError>,
    {
        if !self.partial.is_empty() {
            let line = std::mem::take(&mut self.partial);
            self.line_done(&line, &mut on_event)?;
        }
        self.dispatch(&mut on_event)
    }

    fn line_done<E>(
        &mut self,
        raw: &[u8],
        on_event: &mut impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E>
    where
        E: From<StreamError>,
    {
        self.line += 1;
        let mut raw = raw;
        if self.line == 1 {
            raw = raw.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(raw);
        }
        match raw.first() {
            None => return self.dispatch(on_event),
            Some(b':') => return Ok(()), // a comment or keep-alive
            Some(_) => {}
        }
        let Ok(text) = simdutf8::basic::from_utf8(raw) else {
            return Err(StreamError::InvalidUtf8 { line: self.line }.into());
        };
        let (field, value) = match text.find(':') {
            Some(i) => {
                let v = &text[i + 1..];
                (&text[..i], v.strip_prefix(' ').unwrap_or(v))
            }
            None => (text, ""),
        };
        match field {
            "data" => {
                let start = if self.has_data {
                    self.data_line
                } else {
                    self.line
                };
                if self.data.len() + usize::from(self.has_data) + value.len()
                    > self.limits.max_event
                {
                    return Err(StreamError::TooLarge {
                        line: start,
                        limit: Limit::Event,
                        bytes: self.limits.max_event,
                    }
                    .into());
                }
                if self.has_data {
                    self.data.push('\n');
                } else {
                    self.has_data = true;
                    self.data_line = self.line;
                }
                self.data.push_str(value);
            }
            "event" => {
                self.event.clear();
                self.event.push_str(value);
            }
            _ => {} // id, retry and unknown fields do not matter here
        }
        Ok(())
    }

    fn dispatch<E>(
        &mut self,
        on_event: &mut impl FnMut(SseEvent<'_>) -> Result<(), E>,
    ) -> Result<(), E> {
        let result = if self.has_data {
            on_event(SseEvent {
                event: &self.event,
                data: &self.data,
                line: self.data_line,
            })
        } else {
            Ok(())
        };
        self.has_data = false;
        self.data.clear();
        self.event.clear();
        result
    }
}

// ---------------------------------------------------------------------------------------
// Chat-completions JSON (only the fields read; others are skipped)

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

#[derive(Deserialize)]
struct ChunkJson<'a> {
    #[serde(default, borrow)]
    choices: Option<Vec<ChoiceJson<'a>>>,
    #[serde(default)]
    usage: Option<UsageJson>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct ChoiceJson<'a> {
    #[serde(default)]
    index: Option<i64>,
    #[serde(default, borrow)]
    delta: Option<DeltaJson<'a>>,
    /// Whole responses (and a few servers' stream chunks) carry `message`, not `delta`.
    #[serde(default, borrow)]
    message: Option<DeltaJson<'a>>,
    #[serde(default, borrow)]
    finish_reason: Text<'a>,
}

#[derive(Deserialize, Default)]
struct DeltaJson<'a> {
    #[serde(default, borrow)]
    role: Text<'a>,
    #[serde(default, borrow)]
    content: Text<'a>,
    #[serde(default, borrow)]
    reasoning_content: Text<'a>,
    #[serde(default, borrow)]
    reasoning: Text<'a>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<ToolCallJson<'a>>>,
}

#[derive(Deserialize)]
struct ToolCallJson<'a> {
    #[serde(default)]
    index: Option<i64>,
    #[serde(default, borrow)]
    id: Text<'a>,
    #[serde(default, borrow, rename = "type")]
    kind: Text<'a>,
    #[serde(default, borrow)]
    function: Option<FunctionJson<'a>>,
}

#[derive(Deserialize, Default)]
struct FunctionJson<'a> {
    #[serde(default, borrow)]
    name: Text<'a>,
    #[serde(default, borrow)]
    arguments: Text<'a>,
}

#[derive(Deserialize, Default)]
struct UsageJson {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
    #[serde(default)]
    completion_tokens_details: Option<CompletionDetails>,
}

#[derive(Deserialize, Default)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Deserialize, Default)]
struct CompletionDetails {
    #[serde(default)]
    reasoning_tokens: Option<u64>,
}

impl UsageJson {
    fn to_usage(&self) -> Usage {
        let prompt = self.prompt_tokens.unwrap_or(0);
        let completion = self.completion_tokens.unwrap_or(0);
        Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: self.total_tokens.unwrap_or(prompt + completion),
            cached_tokens: self
                .prompt_tokens_details
                .as_ref()
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            reasoning_tokens: self
                .completion_tokens_details
                .as_ref()
                .and_then(|d| d.reasoning_tokens)
                .unwrap_or(0),
        }
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

fn pick_choice<'c, 'a>(choices: &'c mut [ChoiceJson<'a>]) -> Option<&'c mut ChoiceJson<'a>> {
    let at = choices
        .iter()
        .position(|c| c.index.unwrap_or(0) == 0)
        .unwrap_or(0);
    choices.get_mut(at)
}

// ---------------------------------------------------------------------------------------
// <think> tags

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";

/// Moves text between `<think>` and `</think>` from the content to the reasoning. A tag cut
/// across chunks is held back until the next chunk shows whether it is one.
#[derive(Debug, Default)]
struct ThinkSplitter {
    in_think: bool,
    held: String,
}

impl ThinkSplitter {
    fn push(&mut self, text: &str, content: &mut String, reasoning: &mut String) {
        if self.held.is_empty() && !text.contains('<') {
            self.target(content, reasoning).push_str(text);
            return;
        }
        let mut buf = std::mem::take(&mut self.held);
        buf.push_str(text);
        let mut rest = buf.as_str();
        loop {
            let tag = if self.in_think {
                THINK_CLOSE
            } else {
                THINK_OPEN
            };
            if let Some(i) = rest.find(tag) {
                self.target(content, reasoning).push_str(&rest[..i]);
                rest = &rest[i + tag.len()..];
                self.in_think = !self.in_think;
                continue;
            }
            let keep = (1..tag.len())
                .rev()
                .find(|&k| rest.ends_with(&tag[..k]))
                .unwrap_or(0);
            let (now, later) = rest.split_at(rest.len() - keep);
            self.target(content, reasoning).push_str(now);
            self.held.push_str(later);
            return;
        }
    }

    /// The text held back as a possible tag is plain text after all.
    fn flush(&mut self, content: &mut String, reasoning: &mut String) {
        if !self.held.is_empty() {
            let held = std::mem::take(&mut self.held);
            self.target(content, reasoning).push_str(&held);
        }
    }

    fn target<'s>(&self, content: &'s mut String, reasoning: &'s mut String) -> &'s mut String {
        if self.in_think {
            reasoning
        } else {
            content
        }
    }
}

// ---------------------------------------------------------------------------------------
// Chunk assembly

/// How a [`ChatStreamParser`] reads a server's dialect.
#[derive(Clone, Debug)]
pub struct ParserOptions {
    /// Split `<think>...</think>` out of the content into the reasoning.
    pub think_tags: bool,
    /// Generated tool-call ids are this prefix and the call's index.
    pub id_prefix: String,
}

impl Default for ParserOptions {
    fn default() -> Self {
        ParserOptions {
            think_tags: true,
            id_prefix: "call_".into(),
        }
    }
}

/// A tool call seen so far in the stream.
#[derive(Debug)]
struct CallState {
    provider_index: Option<i64>,
    provider_id: String,
    name: String,
    has_arguments: bool,
}

/// What the chunk assembly remembers between chunks.
#[derive(Debug, Default)]
struct ChunkState {
    options: ParserOptions,
    role_sent: bool,
    done: bool,
    finished: bool,
    calls: Vec<CallState>,
    think: ThinkSplitter,
}

impl ChunkState {
    fn on_event(&mut self, ev: SseEvent<'_>, out: &mut Vec<Message>) -> Result<(), StreamError> {
        if self.done {
            return Ok(()); // nothing after [DONE] counts
        }
        let data = ev.data.trim();
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        if ev.event == "error" {
            let (message, code) = match serde_json::from_str::<serde_json::Value>(data) {
                Ok(v) => error_parts(v.get("error").unwrap_or(&v)),
                Err(_) => (data.to_owned(), None),
            };
            return Err(StreamError::Server {
                line: ev.line,
                message,
                code,
            });
        }
        if data.is_empty() {
            return Ok(());
        }
        // Usually one JSON object; a server that omits the blank lines between events
        // leaves several objects in one event's data, one per line, which reads the same.
        let mut values = serde_json::Deserializer::from_str(data).into_iter::<ChunkJson<'_>>();
        loop {
            match values.next() {
                None => return Ok(()),
                Some(Ok(chunk)) => self.on_chunk(chunk, ev.line, out)?,
                Some(Err(e)) => {
                    let at = e.line().max(1);
                    let text = data.lines().nth(at - 1).unwrap_or(data);
                    return Err(StreamError::Malformed {
                        line: ev.line + at - 1,
                        reason: e.to_string(),
                        text: format!("data: {}", excerpt(text)),
                    });
                }
            }
        }
    }

    fn on_chunk(
        &mut self,
        mut chunk: ChunkJson<'_>,
        line: usize,
        out: &mut Vec<Message>,
    ) -> Result<(), StreamError> {
        if let Some(error) = &chunk.error {
            if !error.is_null() {
                let (message, code) = error_parts(error);
                return Err(StreamError::Server {
                    line,
                    message,
                    code,
                });
            }
        }
        let mut msg = Message::default();
        let mut role_chunk = false;
        let mut finish_reason = String::new();
        if let Some(choice) = chunk.choices.as_deref_mut().and_then(pick_choice) {
            let delta = choice.delta.take().or_else(|| choice.message.take());
            if let Some(delta) = delta {
                role_chunk = !self.role_sent && !delta.role.get().is_empty();
                if role_chunk {
                    msg.role = delta.role.get().to_owned();
                }
                self.read_delta(delta, &mut msg);
            }
            finish_reason = choice.finish_reason.get().to_owned();
        }
        if !finish_reason.is_empty() {
            // The answer is over: text held back as a possible tag is text.
            self.finished = true;
            self.think
                .flush(&mut msg.content, &mut msg.reasoning_content);
        }
        let usage = chunk.usage.as_ref().map(UsageJson::to_usage);
        if !finish_reason.is_empty() || usage.is_some() {
            msg.response_meta = Some(ResponseMeta {
                finish_reason,
                usage,
            });
        }
        self.emit(msg, role_chunk, out);
        Ok(())
    }

    fn read_delta(&mut self, delta: DeltaJson<'_>, msg: &mut Message) {
        msg.reasoning_content
            .push_str(delta.reasoning_content.get());
        msg.reasoning_content.push_str(delta.reasoning.get());
        let content = delta.content.get();
        if self.options.think_tags {
            self.think
                .push(content, &mut msg.content, &mut msg.reasoning_content);
        } else {
            msg.content.push_str(content);
        }
        for call in delta.tool_calls.into_iter().flatten() {
            let delta = self.tool_delta(call);
            msg.tool_calls.push(delta);
        }
    }

    /// Places one tool-call delta: continues the call it belongs to, or starts a new one.
    fn tool_delta(&mut self, call: ToolCallJson<'_>) -> ToolCall {
        let function = call.function.unwrap_or_default();
        let (id, name, arguments) = (call.id.get(), function.name.get(), function.arguments.get());
        let current = match call.index {
            Some(i) => self.calls.iter().rposition(|c| c.provider_index == Some(i)),
            None => self.calls.len().checked_sub(1),
        };
        let continues = current.filter(|&at| {
            let c = &self.calls[at];
            if !id.is_empty() && !c.provider_id.is_empty() {
                id == c.provider_id
            } else if !id.is_empty() {
                !c.has_arguments
            } else if !name.is_empty() && !c.name.is_empty() {
                name == c.name && !c.has_arguments
            } else {
                true
            }
        });
        match continues {
            Some(at) => {
                let c = &mut self.calls[at];
                c.has_arguments |= !arguments.is_empty();
                let mut late_name = String::new();
                if c.name.is_empty() && !name.is_empty() {
                    c.name = name.to_owned();
                    late_name = name.to_owned();
                }
                ToolCall {
                    index: Some(at as i64),
                    function: FunctionCall {
                        name: late_name,
                        arguments: arguments.to_owned(),
                    },
                    ..Default::default()
                }
            }
            None => {
                let at = self.calls.len();
                let out_id = if id.is_empty() {
                    format!("{}{at}", self.options.id_prefix)
                } else {
                    id.to_owned()
                };
                self.calls.push(CallState {
                    provider_index: call.index,
                    provider_id: id.to_owned(),
                    name: name.to_owned(),
                    has_arguments: !arguments.is_empty(),
                });
                let kind = call.kind.get();
                ToolCall {
                    index: Some(at as i64),
                    id: out_id,
                    kind: if kind.is_empty() {
                        ToolCall::FUNCTION
                    } else {
                        kind
                    }
                    .to_owned(),
                    function: FunctionCall {
                        name: name.to_owned(),
                        arguments: arguments.to_owned(),
                    },
                    extra: None,
                }
            }
        }
    }

    /// Sends `msg` unless it carries nothing; the first chunk sent gets the role.
    fn emit(&mut self, mut msg: Message, role_chunk: bool, out: &mut Vec<Message>) {
        let empty = !role_chunk
            && msg.content.is_empty()
            && msg.reasoning_content.is_empty()
            && msg.tool_calls.is_empty()
            && msg.response_meta.is_none();
        if empty {
            return;
        }
        if !self.role_sent {
            self.role_sent = true;
            if msg.role.is_empty() {
                msg.role = "assistant".into();
            }
        }
        out.push(msg);
    }

    fn finish(&mut self, line: usize, out: &mut Vec<Message>) -> Result<(), StreamError> {
        let mut msg = Message::default();
        self.think
            .flush(&mut msg.content, &mut msg.reasoning_content);
        self.emit(msg, false, out);
        if self.done || self.finished {
            Ok(())
        } else {
            Err(StreamError::Truncated { line })
        }
    }
}

/// Bytes of a streamed chat completion in, [`Message`] chunks out.
#[derive(Debug, Default)]
pub struct ChatStreamParser {
    sse: SseDecoder,
    state: ChunkState,
}

impl ChatStreamParser {
    pub fn new(options: ParserOptions) -> Self {
        Self::with_limits(options, SseLimits::default())
    }

    pub fn with_limits(options: ParserOptions, limits: SseLimits) -> Self {
        ChatStreamParser {
            sse: SseDecoder::with_limits(limits),
            state: ChunkState {
                options,
                ..Default::default()
            },
        }
    }

    /// Reads `bytes` and appends the chunks they complete to `out`. On an error, `out`
    /// holds the chunks before the offending line.
    pub fn feed(&mut self, bytes: &[u8], out: &mut Vec<Message>) -> Result<(), StreamError> {
        let state = &mut self.state;
        self.sse.feed(bytes, |ev| state.on_event(ev, out))
    }

    /// The bytes have ended: reads what is left and appends the last chunks. Fails with
    /// [`StreamError::Truncated`] when the stream stopped before the model finished.
    pub fn finish(&mut self, out: &mut Vec<Message>) -> Result<(), StreamError> {
        let state = &mut self.state;
        self.sse.finish(|ev| state.on_event(ev, out))?;
        self.state.finish(self.sse.lines(), out)
    }

    /// `data: [DONE]` was read.
    pub fn done(&self) -> bool {
        self.state.done
    }

    /// Lines read so far.
    pub fn lines(&self) -> usize {
        self.sse.lines()
    }
}

/// Reads a whole (non-streamed) chat-completions response body into one message: the same
/// dialect rules as the stream (reasoning fields, `<think>` tags, generated call ids), with
/// tool calls unindexed, as a whole message has them.
pub fn parse_completion(body: &str, options: ParserOptions) -> Result<Message, StreamError> {
    let chunk: ChunkJson<'_> = serde_json::from_str(body).map_err(|e| {
        let at = e.line().max(1);
        StreamError::Malformed {
            line: at,
            reason: e.to_string(),
            text: excerpt(body.lines().nth(at - 1).unwrap_or(body)),
        }
    })?;
    let mut state = ChunkState {
        options,
        ..Default::default()
    };
    let mut out = Vec::new();
    state.on_chunk(chunk, 1, &mut out)?;
    state.finish(1, &mut out).or_else(|e| match e {
        StreamError::Truncated { .. } => Ok(()), // a whole response may omit finish_reason
        e => Err(e),
    })?;
    let mut msg = crate::concat::concat_messages(&out, Default::default()).map_err(|e| {
        StreamError::Malformed {
            line: 1,
            reason: e.to_string(),
            text: excerpt(body),
        }
    })?;
    if msg.role.is_empty() {
        msg.role = "assistant".into();
    }
    for call in &mut msg.tool_calls {
        call.index = None;
    }
    Ok(msg)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events(pieces: &[&[u8]]) -> Vec<(String, String, usize)> {
        let mut dec = SseDecoder::new();
        let mut out = Vec::new();
        let mut on = |ev: SseEvent<'_>| -> Result<(), StreamError> {
            out.push((ev.event.to_owned(), ev.data.to_owned(), ev.line));
            Ok(())
        };
        for p in pieces {
            dec.feed(p, &mut on).unwrap();
        }
        dec.finish(&mut on).unwrap();
        out
    }

    fn ev(event: &str, data: &str, line: usize) -> (String, String, usize) {
        (event.into(), data.into(), line)
    }

    #[test]
    fn sse_line_ends_comments_and_multiline_data() {
        let want = vec![ev("", "a", 2), ev("", "b\nc", 4), ev("x", "d", 8)];
        for sep in ["\n", "\r\n", "\r"] {
            let text = [
                ": ping", "data: a", "", "data: b", "data:c", "", "event: x", "data: d", "",
            ]
            .join(sep);
            assert_eq!(events(&[text.as_bytes()]), want, "line end {sep:?}");
            // every split point, including between \r and \n
            for at in 0..=text.len() {
                let (a, b) = text.as_bytes().split_at(at);
                assert_eq!(events(&[a, b]), want, "line end {sep:?} split at {at}");
            }
        }
    }

    #[test]
    fn sse_unterminated_last_event_is_dispatched_and_empty_events_skipped() {
        assert_eq!(events(&[b"\n\nid: 3\n\ndata: z"]), vec![ev("", "z", 5)]);
        assert_eq!(events(&[b"data\n\n"]), vec![ev("", "", 1)]);
        assert_eq!(
            events(&[b"\xEF\xBB\xBFdata: bom\n\n"]),
            vec![ev("", "bom", 1)]
        );
    }

    #[test]
    fn sse_invalid_utf8_names_the_line() {
        let mut dec = SseDecoder::new();
        let err = dec
            .feed(b"data: ok\n\ndata: \xff\n", |_| Ok::<(), StreamError>(()))
            .unwrap_err();
        assert_eq!(err, StreamError::InvalidUtf8 { line: 3 });
    }

    fn limited(max_line: usize, max_event: usize) -> SseDecoder {
        SseDecoder::with_limits(SseLimits {
            max_line,
            max_event,
        })
    }

    #[test]
    fn sse_a_line_over_the_limit_fails_before_it_is_buffered() {
        let ok = |_: SseEvent<'_>| Ok::<(), StreamError>(());
        // At the limit is fine, whole or in pieces, with any line end.
        for end in ["\n", "\r\n", "\r"] {
            let mut dec = limited(10, 100);
            dec.feed(format!("data: 1234{end}{end}").as_bytes(), ok)
                .unwrap();
            dec.feed(b"data", ok).unwrap();
            dec.feed(format!(": 1234{end}").as_bytes(), ok).unwrap();
        }
        // One byte more fails, in one piece or as a line that never ends.
        let mut dec = limited(10, 100);
        let err = dec.feed(b"data: ok\n\ndata: 12345\n", ok).unwrap_err();
        let too_long = StreamError::TooLarge {
            line: 3,
            limit: Limit::Line,
            bytes: 10,
        };
        assert_eq!(err, too_long);
        let mut dec = limited(10, 100);
        dec.feed(b"data: ok\n\ndata: ", ok).unwrap();
        assert_eq!(dec.feed(b"12345", ok).unwrap_err(), too_long);
        assert!(dec.partial.capacity() <= 10, "the long line was buffered");
        let text = too_long.to_string();
        assert!(
            text.contains("line 3") && text.contains("max_sse_line_bytes=10"),
            "{text}"
        );
    }

    #[test]
    fn sse_an_event_over_the_limit_names_its_first_line() {
        let ok = |_: SseEvent<'_>| Ok::<(), StreamError>(());
        // 4 + 1 + 4 bytes of data: at a limit of 9 it passes, at 8 it fails.
        let text = b": ping\ndata: abcd\ndata: efgh\n\n";
        limited(100, 9).feed(text, ok).unwrap();
        let err = limited(100, 8).feed(text, ok).unwrap_err();
        assert_eq!(
            err,
            StreamError::TooLarge {
                line: 2,
                limit: Limit::Event,
                bytes: 8,
            }
        );
        assert!(err.to_string().contains("max_sse_event_bytes=8"), "{err}");
        // The limit is per event: many events each under it pass.
        let many = "data: abcd\n\n".repeat(100);
        limited(100, 8).feed(many.as_bytes(), ok).unwrap();
    }

    fn parse(pieces: &[&[u8]], options: ParserOptions) -> Result<Vec<Message>, StreamError> {
        let mut p = ChatStreamParser::new(options);
        let mut out = Vec::new();
        for piece in pieces {
            p.feed(piece, &mut out)?;
        }
        p.finish(&mut out)?;
        Ok(out)
    }

    fn sse(chunks: &[&str]) -> String {
        let mut s = String::new();
        for c in chunks {
            s.push_str("data: ");
            s.push_str(c);
            s.push_str("\n\n");
        }
        s
    }

    fn call(index: i64, id: &str, name: &str, args: &str) -> ToolCall {
        ToolCall {
            index: Some(index),
            id: id.into(),
            kind: if id.is_empty() { "" } else { "function" }.into(),
            function: FunctionCall {
                name: name.into(),
                arguments: args.into(),
            },
            extra: None,
        }
    }

    fn text(role: &str, content: &str) -> Message {
        Message::new(role, content)
    }

    fn meta(finish: &str, usage: Option<Usage>) -> Option<ResponseMeta> {
        Some(ResponseMeta {
            finish_reason: finish.into(),
            usage,
        })
    }

    #[test]
    fn openai_text_stream_has_eino_chunk_shape() {
        let body = sse(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}],"usage":null}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"Hé"},"finish_reason":null}],"usage":null}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7,"prompt_tokens_details":{"cached_tokens":1}}}"#,
            "[DONE]",
        ]);
        let usage = Usage {
            prompt_tokens: 5,
            completion_tokens: 2,
            total_tokens: 7,
            cached_tokens: 1,
            reasoning_tokens: 0,
        };
        let want = vec![
            text("assistant", ""),
            text("", "Hé"),
            Message {
                response_meta: meta("stop", None),
                ..Default::default()
            },
            Message {
                response_meta: meta("", Some(usage)),
                ..Default::default()
            },
        ];
        let bytes = body.as_bytes();
        assert_eq!(parse(&[bytes], ParserOptions::default()).unwrap(), want);
        for at in 0..=bytes.len() {
            let (a, b) = bytes.split_at(at);
            assert_eq!(
                parse(&[a, b], ParserOptions::default()).unwrap(),
                want,
                "split at {at}"
            );
        }
    }

    #[test]
    fn tool_calls_keep_index_and_send_id_and_name_once() {
        let body = sse(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","tool_calls":[{"index":0,"id":"call_a","type":"function","function":{"name":"add","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":1}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_b","type":"function","function":{"name":"mul","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
        ]);
        let out = parse(&[body.as_bytes()], ParserOptions::default()).unwrap();
        assert_eq!(out.len(), 4);
        assert_eq!(out[0].role, "assistant");
        assert_eq!(out[0].tool_calls, vec![call(0, "call_a", "add", "")]);
        assert_eq!(out[1].tool_calls, vec![call(0, "", "", "{\"a\":1}")]);
        assert_eq!(out[2].tool_calls, vec![call(1, "call_b", "mul", "{}")]);
        assert_eq!(out[3].response_meta, meta("tool_calls", None));
    }

    #[test]
    fn ollama_index_zero_for_every_call_and_missing_ids() {
        // Whole calls, each at index 0: the second has a new id, the third none.
        let body = sse(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"","tool_calls":[{"index":0,"id":"c1","function":{"name":"a","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c2","function":{"name":"a","arguments":"{\"x\":1}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"name":"a","arguments":"{\"x\":2}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        ]);
        let out = parse(&[body.as_bytes()], ParserOptions::default()).unwrap();
        let calls: Vec<_> = out.iter().flat_map(|m| m.tool_calls.clone()).collect();
        assert_eq!(
            calls,
            vec![
                call(0, "c1", "a", "{}"),
                call(1, "c2", "a", "{\"x\":1}"),
                call(2, "call_2", "a", "{\"x\":2}"),
            ]
        );
    }

    #[test]
    fn deltas_without_index_continue_the_last_call() {
        let body = sse(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"f","arguments":"{\"q\":"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"arguments":"1}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"function":{"name":"g","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":2}}"#,
        ]);
        let out = parse(&[body.as_bytes()], ParserOptions::default()).unwrap();
        assert_eq!(out[0].role, "assistant");
        assert_eq!(out[0].tool_calls, vec![call(0, "call_0", "f", "{\"q\":")]);
        assert_eq!(out[1].tool_calls, vec![call(0, "", "", "1}")]);
        assert_eq!(out[2].tool_calls, vec![call(1, "call_1", "g", "{}")]);
        let u = out[3].response_meta.as_ref().unwrap().usage.unwrap();
        assert_eq!(
            (u.prompt_tokens, u.completion_tokens, u.total_tokens),
            (1, 2, 3)
        );
        assert_eq!(
            out[3].response_meta.as_ref().unwrap().finish_reason,
            "tool_calls"
        );
    }

    #[test]
    fn reasoning_fields_and_think_tags_split_anywhere() {
        let body = sse(&[
            r#"{"choices":[{"delta":{"role":"assistant","reasoning_content":"r1"}}]}"#,
            r#"{"choices":[{"delta":{"reasoning":"r2"}}]}"#,
            r#"{"choices":[{"delta":{"content":"<thi"}}]}"#,
            r#"{"choices":[{"delta":{"content":"nk>t1</th"}}]}"#,
            r#"{"choices":[{"delta":{"content":"ink>answer <b"}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"stop"}]}"#,
        ]);
        let out = parse(&[body.as_bytes()], ParserOptions::default()).unwrap();
        let all = crate::concat::concat_messages(&out, Default::default()).unwrap();
        assert_eq!(all.reasoning_content, "r1r2t1");
        assert_eq!(all.content, "answer <b");
        let plain = parse(
            &[body.as_bytes()],
            ParserOptions {
                think_tags: false,
                ..Default::default()
            },
        )
        .unwrap();
        let all = crate::concat::concat_messages(&plain, Default::default()).unwrap();
        assert_eq!(all.content, "<think>t1</think>answer <b");
    }

    #[test]
    fn errors_name_the_line() {
        let body = "data: {\"choices\":[]}\n\n: keep-alive\n\ndata: {\"choices\": [tru\n\n";
        let err = parse(&[body.as_bytes()], ParserOptions::default()).unwrap_err();
        match &err {
            StreamError::Malformed { line, text, .. } => {
                assert_eq!(*line, 5);
                assert_eq!(text, "data: {\"choices\": [tru");
            }
            other => panic!("{other:?}"),
        }
        assert!(err
            .to_string()
            .starts_with("malformed chunk at line 5 of the event stream"));
        let body = "data: {\"error\":{\"message\":\"overloaded\",\"code\":\"server_error\"}}\n\n";
        let err = parse(&[body.as_bytes()], ParserOptions::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the server sent an error at line 1 of the stream (server_error): overloaded"
        );
        let body = "event: error\ndata: {\"message\":\"boom\"}\n\n";
        let err = parse(&[body.as_bytes()], ParserOptions::default()).unwrap_err();
        assert!(
            matches!(err, StreamError::Server { line: 2, .. }),
            "{err:?}"
        );
    }

    #[test]
    fn eof_before_the_end_is_truncation_but_a_finish_reason_is_enough() {
        let cut = sse(&[r#"{"choices":[{"delta":{"role":"assistant","content":"Hel"}}]}"#]);
        assert_eq!(
            parse(&[cut.as_bytes()], ParserOptions::default()).unwrap_err(),
            StreamError::Truncated { line: 2 }
        );
        let no_done = sse(&[r#"{"choices":[{"delta":{"content":"x"},"finish_reason":"stop"}]}"#]);
        let out = parse(&[no_done.as_bytes()], ParserOptions::default()).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].role, "assistant");
        let done_only =
            "data: [DONE]\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"late\"}}]}\n\n";
        assert_eq!(
            parse(&[done_only.as_bytes()], ParserOptions::default()).unwrap(),
            vec![]
        );
    }

    #[test]
    fn objects_without_blank_lines_between_them_still_parse() {
        let body = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\ndata: {\"choices\":[{\"delta\":{\"content\":\"b\"},\"finish_reason\":\"stop\"}]}\n\n";
        let out = parse(&[body.as_bytes()], ParserOptions::default()).unwrap();
        let all = crate::concat::concat_messages(&out, Default::default()).unwrap();
        assert_eq!(all.content, "ab");
    }

    #[test]
    fn whole_responses_parse_with_the_same_rules() {
        let body = r#"{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":"<think>hm</think>ok","tool_calls":[{"type":"function","function":{"name":"f","arguments":{"a":1}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":4,"total_tokens":7}}"#;
        let m = parse_completion(body, ParserOptions::default()).unwrap();
        assert_eq!(m.role, "assistant");
        assert_eq!(m.content, "ok");
        assert_eq!(m.reasoning_content, "hm");
        assert_eq!(m.tool_calls.len(), 1);
        assert_eq!(m.tool_calls[0].index, None);
        assert_eq!(m.tool_calls[0].id, "call_0");
        assert_eq!(m.tool_calls[0].function.arguments, "{\"a\":1}");
        let meta = m.response_meta.unwrap();
        assert_eq!(meta.finish_reason, "tool_calls");
        assert_eq!(meta.usage.unwrap().total_tokens, 7);
        let err = parse_completion("{\"choices\": nope}", ParserOptions::default()).unwrap_err();
        assert!(
            matches!(err, StreamError::Malformed { line: 1, .. }),
            "{err:?}"
        );
    }
}
