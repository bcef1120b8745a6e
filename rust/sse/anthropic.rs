//! Anthropic's Messages API in pure Rust: the server-sent events of a streamed answer in,
//! rillet [`Message`] chunks out, framed by [`super::SseDecoder`] (its limits and line numbers).
//!
//! The chunks have the shape [`crate::concat`] expects, as the chat-completions ones do:
//! the role on the first chunk; text deltas as `content`; `thinking` deltas as
//! `reasoning_content`; each `tool_use` block as one tool call, numbered 0, 1, ... in the
//! order the blocks start (its id, type and name on its first chunk, `partial_json` pieces as
//! `arguments` after it, `{}` when the tool takes no input); the stop reason and usage on the
//! `message_delta` chunk.
//!
//! What the API needs back on the next turn of a tool loop with extended thinking (each
//! thinking block's signature, redacted blocks' opaque data) goes in `extra` under
//! [`THINKING_KEY`], a map from the block's index (as text) to `{"signature": ..., "chars":
//! <the block's length in characters of reasoning_content>}` or `{"redacted": <data>}`. Maps
//! merge by key when chunks are concatenated, so several thinking blocks stay apart.
//!
//! Usage: `prompt_tokens` counts every input token (`input_tokens` plus cache writes and
//! cache reads), `cached_tokens` the cache reads, `completion_tokens` the output tokens.

use std::borrow::Cow;
use std::collections::HashMap;

use serde::Deserialize;
use serde_json::value::RawValue;

use super::{malformed, Protocol, SseEvent, StreamError};
use crate::message::{FunctionCall, Message, ResponseMeta, ToolCall, Usage, Value};

/// The `extra` key holding thinking blocks' signatures and redacted thinking.
pub const THINKING_KEY: &str = "anthropic_thinking";

// ---------------------------------------------------------------------------------------
// JSON (only the fields read; others are skipped)

type Str<'a> = Option<Cow<'a, str>>;

fn get<'s>(s: &'s Str<'_>) -> &'s str {
    s.as_deref().unwrap_or("")
}

#[derive(Deserialize)]
struct EventJson<'a> {
    #[serde(default, borrow, rename = "type")]
    kind: Str<'a>,
    #[serde(default)]
    index: Option<usize>,
    #[serde(default, borrow)]
    delta: Option<DeltaJson<'a>>,
    #[serde(default, borrow)]
    content_block: Option<BlockJson<'a>>,
    #[serde(default, borrow)]
    message: Option<MessageJson<'a>>,
    #[serde(default)]
    usage: Option<UsageJson>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct DeltaJson<'a> {
    #[serde(default, borrow, rename = "type")]
    kind: Str<'a>,
    #[serde(default, borrow)]
    text: Str<'a>,
    #[serde(default, borrow)]
    partial_json: Str<'a>,
    #[serde(default, borrow)]
    thinking: Str<'a>,
    #[serde(default, borrow)]
    signature: Str<'a>,
    #[serde(default, borrow)]
    stop_reason: Str<'a>,
}

#[derive(Deserialize)]
struct BlockJson<'a> {
    #[serde(default, borrow, rename = "type")]
    kind: Str<'a>,
    #[serde(default, borrow)]
    text: Str<'a>,
    #[serde(default, borrow)]
    id: Str<'a>,
    #[serde(default, borrow)]
    name: Str<'a>,
    /// Kept as its JSON text: the tool's arguments, byte for byte.
    #[serde(default, borrow)]
    input: Option<&'a RawValue>,
    #[serde(default, borrow)]
    thinking: Str<'a>,
    #[serde(default, borrow)]
    signature: Str<'a>,
    #[serde(default, borrow)]
    data: Str<'a>,
}

/// A whole message (a non-streamed response, or `message_start`'s).
#[derive(Deserialize)]
struct MessageJson<'a> {
    #[serde(default, borrow, rename = "type")]
    kind: Str<'a>,
    #[serde(default, borrow)]
    content: Vec<BlockJson<'a>>,
    #[serde(default, borrow)]
    stop_reason: Str<'a>,
    #[serde(default)]
    usage: Option<UsageJson>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize, Default, Clone, Copy, Debug)]
struct UsageJson {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

impl UsageJson {
    /// `later`'s counts where it has them (message_delta's are cumulative), else these.
    fn update(&mut self, later: &UsageJson) {
        let pick = |a: &mut Option<u64>, b: Option<u64>| *a = b.or(*a);
        pick(&mut self.input_tokens, later.input_tokens);
        pick(&mut self.output_tokens, later.output_tokens);
        pick(
            &mut self.cache_creation_input_tokens,
            later.cache_creation_input_tokens,
        );
        pick(
            &mut self.cache_read_input_tokens,
            later.cache_read_input_tokens,
        );
    }

    fn to_usage(self) -> Usage {
        let cached = self.cache_read_input_tokens.unwrap_or(0);
        let prompt =
            self.input_tokens.unwrap_or(0) + self.cache_creation_input_tokens.unwrap_or(0) + cached;
        let completion = self.output_tokens.unwrap_or(0);
        Usage {
            prompt_tokens: prompt,
            completion_tokens: completion,
            total_tokens: prompt + completion,
            cached_tokens: cached,
            reasoning_tokens: 0,
        }
    }
}

/// An error object's message and type: `{"type": "overloaded_error", "message": ...}`.
fn error_parts(error: &serde_json::Value) -> (String, Option<String>) {
    let message = error
        .get("message")
        .and_then(|m| m.as_str())
        .map(str::to_owned)
        .unwrap_or_else(|| error.to_string());
    let code = error
        .get("type")
        .and_then(|t| t.as_str())
        .map(str::to_owned);
    (message, code)
}

/// `extra` holding one block's entry under [`THINKING_KEY`].
fn thinking_extra(block: usize, entry: Vec<(String, Value)>) -> Option<Vec<(String, Value)>> {
    let blocks = vec![(block.to_string(), Value::Map(entry))];
    Some(vec![(THINKING_KEY.to_owned(), Value::Map(blocks))])
}

fn signed(block: usize, signature: &str, chars: usize) -> Option<Vec<(String, Value)>> {
    thinking_extra(
        block,
        vec![
            ("signature".into(), Value::Str(signature.to_owned())),
            ("chars".into(), Value::Int(chars as i64)),
        ],
    )
}

fn redacted(block: usize, data: &str) -> Option<Vec<(String, Value)>> {
    thinking_extra(
        block,
        vec![("redacted".into(), Value::Str(data.to_owned()))],
    )
}

/// A tool_use block's input as argument text: empty for `{}` (the stream sends the input as
/// `partial_json` deltas after a `{}` placeholder).
fn input_text(input: Option<&RawValue>) -> &str {
    match input.map(RawValue::get) {
        Some(raw) if raw.bytes().any(|b| !b" \t\r\n{}".contains(&b)) => raw,
        _ => "",
    }
}

// ---------------------------------------------------------------------------------------
// Stream state

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    ToolUse,
    Thinking,
    Other,
}

/// A content block seen so far.
#[derive(Debug)]
struct Block {
    kind: Kind,
    /// For tool_use: the tool call's index in the message.
    call: i64,
    has_arguments: bool,
    signature: String,
    chars: usize,
}

/// What the chunk assembly remembers between events: the Anthropic [`Protocol`].
#[derive(Debug, Default)]
pub struct State {
    role_sent: bool,
    stopped: bool,
    stop_reason: bool,
    /// By the block's `index`: a map, not a vector, so a hostile index (`1e11`) costs one
    /// entry instead of a vector that long.
    blocks: HashMap<usize, Block>,
    calls: i64,
    usage: UsageJson,
}

impl Protocol for State {
    #[inline]
    fn on_event(&mut self, ev: SseEvent<'_>, out: &mut Vec<Message>) -> Result<(), StreamError> {
        let data = ev.data.trim();
        if data.is_empty() {
            return Ok(());
        }
        let event: EventJson<'_> = serde_json::from_str(data)
            .map_err(|e| malformed(ev.line + e.line().max(1) - 1, e.to_string(), data))?;
        let kind = match get(&event.kind) {
            "" => ev.event,
            k => k,
        };
        match kind {
            "message_start" => {
                if let Some(usage) = event.message.as_ref().and_then(|m| m.usage.as_ref()) {
                    self.usage.update(usage);
                }
                self.emit(Message::default(), true, out);
            }
            "content_block_start" => {
                let block = event.content_block.ok_or_else(|| {
                    malformed(ev.line, "content_block_start without content_block", data)
                })?;
                let index = Self::index(event.index, ev.line, data)?;
                self.block_start(index, block, out);
            }
            "content_block_delta" => {
                let delta = event
                    .delta
                    .ok_or_else(|| malformed(ev.line, "content_block_delta without delta", data))?;
                let index = Self::index(event.index, ev.line, data)?;
                self.block_delta(index, delta, ev.line, data, out)?;
            }
            "content_block_stop" => {
                let index = Self::index(event.index, ev.line, data)?;
                self.block_stop(index, out);
            }
            "message_delta" => {
                if let Some(usage) = &event.usage {
                    self.usage.update(usage);
                }
                let reason = event.delta.as_ref().map_or("", |d| get(&d.stop_reason));
                self.stop_reason |= !reason.is_empty();
                let msg = Message {
                    response_meta: Some(ResponseMeta {
                        finish_reason: reason.to_owned(),
                        usage: Some(self.usage.to_usage()),
                    }),
                    ..Default::default()
                };
                self.emit(msg, false, out);
            }
            "message_stop" => self.stopped = true,
            "error" => {
                let error = event.error.unwrap_or(serde_json::Value::Null);
                let (message, code) = error_parts(&error);
                return Err(StreamError::Server {
                    line: ev.line,
                    message,
                    code,
                });
            }
            _ => {} // ping, and event types added after this was written
        }
        Ok(())
    }

    /// Fails with [`StreamError::Unfinished`] when the stream stopped before `message_stop`
    /// (and before any stop reason).
    fn finish(&mut self, line: usize, _out: &mut Vec<Message>) -> Result<(), StreamError> {
        if self.stopped || self.stop_reason {
            Ok(())
        } else {
            Err(StreamError::Unfinished {
                line,
                missing: "its stop_reason and message_stop events",
            })
        }
    }

    /// `message_stop` was read.
    fn done(&self) -> bool {
        self.stopped
    }
}

impl State {
    fn index(index: Option<usize>, line: usize, data: &str) -> Result<usize, StreamError> {
        index.ok_or_else(|| malformed(line, "a content block event without its index", data))
    }

    fn block_start(&mut self, index: usize, block: BlockJson<'_>, out: &mut Vec<Message>) {
        let mut msg = Message::default();
        let mut state = Block {
            kind: Kind::Other,
            call: -1,
            has_arguments: false,
            signature: String::new(),
            chars: 0,
        };
        match get(&block.kind) {
            "text" => {
                state.kind = Kind::Text;
                msg.content.push_str(get(&block.text));
            }
            "tool_use" => {
                state.kind = Kind::ToolUse;
                state.call = self.calls;
                self.calls += 1;
                let arguments = input_text(block.input);
                state.has_arguments = !arguments.is_empty();
                msg.tool_calls.push(ToolCall {
                    index: Some(state.call),
                    id: get(&block.id).to_owned(),
                    kind: ToolCall::FUNCTION.to_owned(),
                    function: FunctionCall {
                        name: get(&block.name).to_owned(),
                        arguments: arguments.to_owned(),
                    },
                    extra: None,
                });
            }
            "thinking" => {
                state.kind = Kind::Thinking;
                let text = get(&block.thinking);
                state.chars = text.chars().count();
                state.signature.push_str(get(&block.signature));
                msg.reasoning_content.push_str(text);
            }
            "redacted_thinking" => msg.extra = redacted(index, get(&block.data)),
            _ => {} // server tools' blocks: run by the API, nothing for the client to do
        }
        self.blocks.insert(index, state);
        self.emit(msg, false, out);
    }

    fn block_delta(
        &mut self,
        index: usize,
        delta: DeltaJson<'_>,
        line: usize,
        data: &str,
        out: &mut Vec<Message>,
    ) -> Result<(), StreamError> {
        let Some(block) = self.blocks.get_mut(&index) else {
            return Err(malformed(
                line,
                format!("a delta for content block {index}, which has not started"),
                data,
            ));
        };
        let mut msg = Message::default();
        match (get(&delta.kind), block.kind) {
            ("text_delta", Kind::Text) => msg.content.push_str(get(&delta.text)),
            ("input_json_delta", Kind::ToolUse) => {
                let piece = get(&delta.partial_json);
                if piece.is_empty() {
                    return Ok(());
                }
                block.has_arguments = true;
                msg.tool_calls.push(ToolCall {
                    index: Some(block.call),
                    function: FunctionCall {
                        name: String::new(),
                        arguments: piece.to_owned(),
                    },
                    ..Default::default()
                });
            }
            ("thinking_delta", Kind::Thinking) => {
                let text = get(&delta.thinking);
                block.chars += text.chars().count();
                msg.reasoning_content.push_str(text);
            }
            ("signature_delta", Kind::Thinking) => {
                // Sent whole, once, at the end of the block (the SDK also replaces it).
                block.signature.clear();
                block.signature.push_str(get(&delta.signature));
                return Ok(());
            }
            _ => return Ok(()), // citations and deltas of blocks not read
        }
        self.emit(msg, false, out);
        Ok(())
    }

    fn block_stop(&mut self, index: usize, out: &mut Vec<Message>) {
        let Some(block) = self.blocks.get(&index) else {
            return;
        };
        let mut msg = Message::default();
        match block.kind {
            Kind::ToolUse if !block.has_arguments => msg.tool_calls.push(ToolCall {
                index: Some(block.call),
                function: FunctionCall {
                    name: String::new(),
                    arguments: "{}".into(),
                },
                ..Default::default()
            }),
            Kind::Thinking => msg.extra = signed(index, &block.signature, block.chars),
            _ => return,
        }
        self.emit(msg, false, out);
    }

    /// Sends `msg` unless it carries nothing; the first chunk sent gets the role.
    fn emit(&mut self, mut msg: Message, role_chunk: bool, out: &mut Vec<Message>) {
        let empty = msg.content.is_empty()
            && msg.reasoning_content.is_empty()
            && msg.tool_calls.is_empty()
            && msg.response_meta.is_none()
            && msg.extra.is_none();
        let first_role = role_chunk && !self.role_sent;
        if empty && !first_role {
            return;
        }
        if !self.role_sent {
            self.role_sent = true;
            msg.role = "assistant".into();
        }
        out.push(msg);
    }
}

/// Bytes of a streamed Messages API answer in, [`Message`] chunks out.
pub type AnthropicStreamParser = super::StreamParser<State>;

/// Reads a whole (non-streamed) Messages API response body into one assistant message:
/// the stream's rules, with tool calls unindexed as a whole message has them.
pub fn parse_message(body: &str) -> Result<Message, StreamError> {
    let whole: MessageJson<'_> = serde_json::from_str(body).map_err(|e| {
        let at = e.line().max(1);
        malformed(at, e.to_string(), body.lines().nth(at - 1).unwrap_or(body))
    })?;
    if get(&whole.kind) == "error" || whole.error.is_some() {
        let error = whole.error.unwrap_or(serde_json::Value::Null);
        let (message, code) = error_parts(&error);
        return Err(StreamError::Server {
            line: 1,
            message,
            code,
        });
    }
    let mut msg = Message::new("assistant", "");
    let mut thinking = Vec::new();
    for (index, block) in whole.content.iter().enumerate() {
        match get(&block.kind) {
            "text" => msg.content.push_str(get(&block.text)),
            "tool_use" => msg.tool_calls.push(ToolCall {
                index: None,
                id: get(&block.id).to_owned(),
                kind: ToolCall::FUNCTION.to_owned(),
                function: FunctionCall {
                    name: get(&block.name).to_owned(),
                    arguments: block.input.map_or("{}", RawValue::get).to_owned(),
                },
                extra: None,
            }),
            "thinking" => {
                let text = get(&block.thinking);
                msg.reasoning_content.push_str(text);
                let entry = signed(index, get(&block.signature), text.chars().count());
                thinking.extend(entry.into_iter().flatten());
            }
            "redacted_thinking" => {
                thinking.extend(redacted(index, get(&block.data)).into_iter().flatten());
            }
            _ => {}
        }
    }
    if !thinking.is_empty() {
        let mut blocks = Vec::new();
        for (_, entry) in thinking {
            if let Value::Map(m) = entry {
                blocks.extend(m);
            }
        }
        msg.extra = Some(vec![(THINKING_KEY.to_owned(), Value::Map(blocks))]);
    }
    msg.response_meta = Some(ResponseMeta {
        finish_reason: get(&whole.stop_reason).to_owned(),
        usage: whole.usage.map(UsageJson::to_usage),
    });
    Ok(msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sse::testing::{call, parse_pieces};

    const STREAM: &str = concat!(
        "event: message_start\n",
        "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":10,\"cache_read_input_tokens\":4,\"output_tokens\":1}}}\n\n",
        "event: ping\ndata: {\"type\":\"ping\"}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"thinking_delta\",\"thinking\":\"h\u{e9}m\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"signature_delta\",\"signature\":\"sig\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":1,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":2,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_a\",\"name\":\"f\",\"input\":{}}}\n\n",
        "event: content_block_delta\n",
        "data: {\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"x\\\": 1}\"}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":2}\n\n",
        "event: content_block_start\n",
        "data: {\"type\":\"content_block_start\",\"index\":3,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_b\",\"name\":\"g\",\"input\":{}}}\n\n",
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":3}\n\n",
        "event: message_delta\n",
        "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":20}}\n\n",
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n",
    );

    fn parse(pieces: &[&[u8]]) -> Result<Vec<Message>, (Vec<Message>, StreamError)> {
        parse_pieces(AnthropicStreamParser::default(), pieces)
    }

    #[test]
    fn a_stream_becomes_eino_shaped_chunks() {
        let chunks = parse(&[STREAM.as_bytes()]).unwrap();
        let want = vec![
            Message::new("assistant", ""),
            Message {
                reasoning_content: "h\u{e9}m".into(),
                ..Default::default()
            },
            Message {
                extra: signed(0, "sig", 3),
                ..Default::default()
            },
            Message::new("", "Hi"),
            Message {
                tool_calls: vec![call(0, "toolu_a", "f", "")],
                ..Default::default()
            },
            Message {
                tool_calls: vec![call(0, "", "", "{\"x\": 1}")],
                ..Default::default()
            },
            Message {
                tool_calls: vec![call(1, "toolu_b", "g", "")],
                ..Default::default()
            },
            Message {
                tool_calls: vec![call(1, "", "", "{}")],
                ..Default::default()
            },
            Message {
                response_meta: Some(ResponseMeta {
                    finish_reason: "tool_use".into(),
                    usage: Some(Usage {
                        prompt_tokens: 14,
                        completion_tokens: 20,
                        total_tokens: 34,
                        cached_tokens: 4,
                        reasoning_tokens: 0,
                    }),
                }),
                ..Default::default()
            },
        ];
        assert_eq!(chunks, want);
        // Any split of the bytes reads the same.
        let bytes = STREAM.as_bytes();
        for at in (0..bytes.len()).step_by(7) {
            assert_eq!(
                parse(&[&bytes[..at], &bytes[at..]]).unwrap(),
                want,
                "split at {at}"
            );
        }
    }

    #[test]
    fn redacted_thinking_is_kept_whole() {
        let text = concat!(
            "data: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":1}}}\n\n",
            "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"EnC\"}}\n\n",
            "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
            "data: {\"type\":\"message_stop\"}\n\n",
        );
        let chunks = parse(&[text.as_bytes()]).unwrap();
        assert_eq!(chunks[1].extra, redacted(0, "EnC"));
    }

    #[test]
    fn errors_name_the_line_and_a_cut_stream_is_unfinished() {
        let (before, err) = parse(&[concat!(
            "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{}}\n\n",
            "event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}}\n\n",
        )
        .as_bytes()])
        .unwrap_err();
        assert_eq!(before.len(), 1);
        assert_eq!(
            err,
            StreamError::Server {
                line: 5,
                message: "Overloaded".into(),
                code: Some("overloaded_error".into())
            }
        );
        let (_, err) =
            parse(&[b"data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{}}\n\n"])
                .unwrap_err();
        assert!(
            matches!(err, StreamError::Malformed { line: 1, .. }),
            "{err}"
        );
        let (_, err) = parse(&[b"data: {nope\n\n"]).unwrap_err();
        assert!(
            matches!(err, StreamError::Malformed { line: 1, .. }),
            "{err}"
        );
        let cut = &STREAM.as_bytes()[..STREAM.find("event: message_delta").unwrap()];
        let (chunks, err) = parse(&[cut]).unwrap_err();
        assert_eq!(chunks.len(), 8);
        assert!(
            matches!(err, StreamError::Unfinished { line: 42, .. }),
            "{err}"
        );
    }

    #[test]
    fn a_huge_block_index_costs_nothing_and_does_not_panic() {
        for index in ["18446744073709551615", "100000000000"] {
            let text = format!(
                "data: {{\"type\":\"content_block_start\",\"index\":{index},\"content_block\":{{\"type\":\"text\",\"text\":\"a\"}}}}\n\n\
                 data: {{\"type\":\"content_block_delta\",\"index\":{index},\"delta\":{{\"type\":\"text_delta\",\"text\":\"b\"}}}}\n\n"
            );
            let mut p = AnthropicStreamParser::default();
            let mut out = Vec::new();
            p.feed(text.as_bytes(), &mut out).unwrap();
            let content: String = out.iter().map(|m| m.content.as_str()).collect();
            assert_eq!(content, "ab");
        }
    }

    #[test]
    fn whole_messages_parse_with_the_same_rules() {
        let body = r#"{"id":"msg_1","type":"message","role":"assistant","content":[
            {"type":"thinking","thinking":"so","signature":"s1"},
            {"type":"redacted_thinking","data":"xx"},
            {"type":"text","text":"ok"},
            {"type":"tool_use","id":"toolu_1","name":"f","input":{"b": 2, "a": 1}}],
            "stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":4}}"#;
        let msg = parse_message(body).unwrap();
        assert_eq!(msg.content, "ok");
        assert_eq!(msg.reasoning_content, "so");
        assert_eq!(msg.tool_calls[0].function.arguments, r#"{"b": 2, "a": 1}"#);
        assert_eq!(msg.tool_calls[0].index, None);
        let Some(Value::Map(blocks)) = msg.extra.as_ref().map(|e| e[0].1.clone()) else {
            panic!("no thinking blocks");
        };
        assert_eq!(blocks.len(), 2);
        assert_eq!(blocks[1].0, "1");
        assert_eq!(msg.response_meta.unwrap().usage.unwrap().total_tokens, 7);
        let err =
            parse_message(r#"{"type":"error","error":{"type":"api_error","message":"boom"}}"#);
        assert!(matches!(err, Err(StreamError::Server { .. })));
    }
}
