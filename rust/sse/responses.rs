//! OpenAI's Responses API in pure Rust: streamed `response.*` events in, rillet [`Message`]
//! chunks out, in the same Eino shape as [`super::ChatStreamParser`] (role on the first
//! chunk; a tool call's index on every delta, its id, type and name on its first; finish
//! reason and usage on the last), and whole (non-streamed) Response bodies into one message.
//!
//! The events are framed by [`super::SseDecoder`] (same limits, same errors) and told apart by their
//! JSON `type` (the SSE `event:` name when the JSON has none):
//!
//! * `response.output_text.delta`, `response.refusal.delta`: content and refusal text;
//! * `response.reasoning_summary_text.delta`, `response.reasoning_text.delta`: reasoning text,
//!   parts of different items or summaries separated by a blank line;
//! * `response.output_item.added` (a `function_call`) starts a tool call: its `call_id` is the
//!   call's id, its item id is kept in the call's `extra["item_id"]`;
//!   `response.function_call_arguments.delta` streams its arguments;
//! * `response.output_item.done`: a `reasoning` item becomes a chunk whose `extra` holds the
//!   item (id, summary parts, encrypted content) under [`REASONING_KEY`], so the next turn can
//!   send it back; an item whose text or arguments were not streamed is sent whole here;
//! * `response.completed` / `response.incomplete`: usage and the finish reason (`stop`,
//!   `tool_calls`, `length`, `content_filter`); `response.failed` and `error` are
//!   [`StreamError::Server`];
//! * anything else (created, in_progress, content parts, annotations, built-in tools) is
//!   skipped; EOF before a terminal event is [`StreamError::Truncated`].

use serde::Deserialize;

use super::{error_parts, malformed, parse_body, Protocol, SseEvent, StreamError, Text};
use crate::message::{FunctionCall, Map, Message, ResponseMeta, ToolCall, Usage, Value};

/// The `extra` key of a chunk carrying reasoning items: a map from item id to
/// `{"summary": {"0": text, ...}, "encrypted_content": ...}` (maps, so chunks concatenate).
pub const REASONING_KEY: &str = "openai_reasoning";
/// The tool call `extra` key holding the `function_call` item's own id (`fc_...`).
pub const ITEM_ID_KEY: &str = "item_id";

// ---------------------------------------------------------------------------------------
// JSON (only the fields read; others are skipped)

#[derive(Deserialize)]
struct EventJson<'a> {
    #[serde(default, borrow, rename = "type")]
    kind: Text<'a>,
    #[serde(default, borrow)]
    delta: Text<'a>,
    #[serde(default)]
    output_index: Option<i64>,
    #[serde(default)]
    summary_index: Option<i64>,
    #[serde(default)]
    content_index: Option<i64>,
    #[serde(default, borrow)]
    arguments: Text<'a>,
    #[serde(default, borrow)]
    item: Option<ItemJson<'a>>,
    #[serde(default, borrow)]
    response: Option<ResponseJson<'a>>,
}

#[derive(Deserialize, Default)]
struct ItemJson<'a> {
    #[serde(default, borrow, rename = "type")]
    kind: Text<'a>,
    #[serde(default, borrow)]
    id: Text<'a>,
    #[serde(default, borrow)]
    call_id: Text<'a>,
    #[serde(default, borrow)]
    name: Text<'a>,
    #[serde(default, borrow)]
    arguments: Text<'a>,
    #[serde(default, borrow)]
    encrypted_content: Text<'a>,
    #[serde(default, borrow)]
    summary: Option<Vec<PartJson<'a>>>,
    #[serde(default, borrow)]
    content: Option<Vec<PartJson<'a>>>,
}

#[derive(Deserialize)]
struct PartJson<'a> {
    #[serde(default, borrow, rename = "type")]
    kind: Text<'a>,
    #[serde(default, borrow)]
    text: Text<'a>,
    #[serde(default, borrow)]
    refusal: Text<'a>,
}

#[derive(Deserialize)]
struct ResponseJson<'a> {
    #[serde(default, borrow)]
    status: Text<'a>,
    #[serde(default, borrow)]
    output: Option<Vec<ItemJson<'a>>>,
    #[serde(default)]
    usage: Option<UsageJson>,
    #[serde(default)]
    incomplete_details: Option<serde_json::Value>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct UsageJson {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
    #[serde(default)]
    input_tokens_details: Option<serde_json::Value>,
    #[serde(default)]
    output_tokens_details: Option<serde_json::Value>,
}

impl UsageJson {
    fn to_usage(&self) -> Usage {
        let detail = |d: &Option<serde_json::Value>, key: &str| {
            d.as_ref()
                .and_then(|d| d.get(key))
                .and_then(serde_json::Value::as_u64)
                .unwrap_or(0)
        };
        let input = self.input_tokens.unwrap_or(0);
        let output = self.output_tokens.unwrap_or(0);
        Usage {
            prompt_tokens: input,
            completion_tokens: output,
            total_tokens: self.total_tokens.unwrap_or(input + output),
            cached_tokens: detail(&self.input_tokens_details, "cached_tokens"),
            reasoning_tokens: detail(&self.output_tokens_details, "reasoning_tokens"),
        }
    }
}

/// Event types this parser reads: one of them that fails to parse is malformed, while any
/// other type is skipped whatever its shape (new built-in tools add events with new fields).
const READ_TYPES: &[&str] = &[
    "response.output_text.delta",
    "response.refusal.delta",
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
    "response.output_item.added",
    "response.output_item.done",
    "response.function_call_arguments.delta",
    "response.function_call_arguments.done",
    "response.completed",
    "response.incomplete",
    "response.failed",
    "error",
];

// ---------------------------------------------------------------------------------------
// Chunk assembly

/// A function call seen so far: where it is in the response's output, and whether any of
/// its arguments were sent.
#[derive(Debug)]
struct Call {
    output_index: i64,
    has_arguments: bool,
}

/// What the chunk assembly remembers between events: the Responses [`Protocol`].
#[derive(Debug, Default)]
pub struct State {
    role_sent: bool,
    finished: bool,
    done: bool,
    calls: Vec<Call>,
    /// Output items whose text (content, refusal or reasoning) was streamed as deltas.
    streamed: Vec<i64>,
    /// The (output index, part index) of the last reasoning text, to separate the next part.
    reasoning_at: Option<(i64, i64)>,
}

impl Protocol for State {
    #[inline]
    fn on_event(&mut self, ev: SseEvent<'_>, out: &mut Vec<Message>) -> Result<(), StreamError> {
        let data = ev.data.trim();
        if self.done || data.is_empty() {
            return Ok(());
        }
        if data == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        let mut event: EventJson<'_> = match serde_json::from_str(data) {
            Ok(event) => event,
            Err(e) => return self.unparsed(ev, data, e),
        };
        let kind_text = std::mem::take(&mut event.kind);
        let kind = match kind_text.get() {
            "" => ev.event,
            kind => kind,
        };
        match kind {
            "error" | "response.failed" => Err(server_error(ev.line, data)),
            _ => self.on_typed(kind, event, ev.line, out),
        }
    }

    fn finish(&mut self, line: usize, _out: &mut Vec<Message>) -> Result<(), StreamError> {
        if self.done || self.finished {
            Ok(())
        } else {
            Err(StreamError::Truncated { line })
        }
    }

    /// A terminal event (`response.completed`, `response.incomplete`) was read.
    fn done(&self) -> bool {
        self.finished || self.done
    }
}

impl State {
    /// An event that is not the JSON shape this parser reads: malformed if its type is one
    /// the parser reads (or it is not JSON at all), else skipped.
    fn unparsed(
        &self,
        ev: SseEvent<'_>,
        data: &str,
        e: serde_json::Error,
    ) -> Result<(), StreamError> {
        let value: serde_json::Value =
            serde_json::from_str(data).map_err(|_| malformed(ev.line, e.to_string(), data))?;
        let kind = value
            .get("type")
            .and_then(serde_json::Value::as_str)
            .unwrap_or(ev.event);
        if kind == "error" || kind == "response.failed" {
            return Err(server_error(ev.line, data));
        }
        if READ_TYPES.contains(&kind) {
            return Err(malformed(ev.line, format!("{kind}: {e}"), data));
        }
        Ok(())
    }

    fn on_typed(
        &mut self,
        kind: &str,
        event: EventJson<'_>,
        line: usize,
        out: &mut Vec<Message>,
    ) -> Result<(), StreamError> {
        let at = event.output_index.unwrap_or(0);
        let mut msg = Message::default();
        match kind {
            "response.output_text.delta" => {
                self.mark_streamed(at);
                msg.content.push_str(event.delta.get());
            }
            "response.refusal.delta" => {
                self.mark_streamed(at);
                msg.refusal.push_str(event.delta.get());
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                self.mark_streamed(at);
                let part = event.summary_index.or(event.content_index).unwrap_or(0);
                self.reasoning(at, part, event.delta.get(), &mut msg.reasoning_content);
            }
            "response.output_item.added" => {
                if let Some(item) = event.item.filter(|i| i.kind.get() == "function_call") {
                    msg.tool_calls.push(self.start_call(at, &item));
                }
            }
            "response.function_call_arguments.delta" => {
                let delta = event.delta.get();
                msg.tool_calls
                    .push(self.call_arguments(at, delta, line, kind)?);
            }
            "response.function_call_arguments.done" => {
                let whole = event.arguments.get();
                if self.unsent_arguments(at) && !whole.is_empty() {
                    msg.tool_calls
                        .push(self.call_arguments(at, whole, line, kind)?);
                }
            }
            "response.output_item.done" => {
                if let Some(item) = event.item {
                    self.item_done(at, &item, &mut msg);
                }
            }
            "response.completed" | "response.incomplete" => {
                self.finished = true;
                if let Some(response) = &event.response {
                    msg.response_meta = Some(self.meta(response));
                }
            }
            _ => {}
        }
        self.emit(msg, out);
        Ok(())
    }

    fn mark_streamed(&mut self, at: i64) {
        if self.streamed.last() != Some(&at) && !self.streamed.contains(&at) {
            self.streamed.push(at);
        }
    }

    fn reasoning(&mut self, at: i64, part: i64, text: &str, into: &mut String) {
        if text.is_empty() {
            return;
        }
        if self.reasoning_at.is_some_and(|last| last != (at, part)) {
            into.push_str("\n\n");
        }
        self.reasoning_at = Some((at, part));
        into.push_str(text);
    }

    fn start_call(&mut self, at: i64, item: &ItemJson<'_>) -> ToolCall {
        let index = self.calls.len();
        let arguments = item.arguments.get();
        self.calls.push(Call {
            output_index: at,
            has_arguments: !arguments.is_empty(),
        });
        let id = match item.call_id.get() {
            "" => format!("call_{index}"),
            id => id.to_owned(),
        };
        let extra = match item.id.get() {
            "" => None,
            item_id => Some(vec![(
                ITEM_ID_KEY.to_owned(),
                Value::Str(item_id.to_owned()),
            )]),
        };
        ToolCall {
            index: Some(index as i64),
            id,
            kind: ToolCall::FUNCTION.to_owned(),
            function: FunctionCall {
                name: item.name.get().to_owned(),
                arguments: arguments.to_owned(),
            },
            extra,
        }
    }

    fn call_arguments(
        &mut self,
        at: i64,
        arguments: &str,
        line: usize,
        kind: &str,
    ) -> Result<ToolCall, StreamError> {
        let Some(index) = self.calls.iter().rposition(|c| c.output_index == at) else {
            return Err(StreamError::Malformed {
                line,
                reason: format!(
                    "{kind} for output_index {at}, but no function_call item was added there"
                ),
                text: String::new(),
            });
        };
        self.calls[index].has_arguments |= !arguments.is_empty();
        Ok(ToolCall {
            index: Some(index as i64),
            function: FunctionCall {
                name: String::new(),
                arguments: arguments.to_owned(),
            },
            ..Default::default()
        })
    }

    fn unsent_arguments(&self, at: i64) -> bool {
        self.calls
            .iter()
            .rfind(|c| c.output_index == at)
            .is_some_and(|c| !c.has_arguments)
    }

    /// A finished output item: what of it was not streamed goes into `msg`.
    fn item_done(&mut self, at: i64, item: &ItemJson<'_>, msg: &mut Message) {
        let streamed = self.streamed.contains(&at);
        match item.kind.get() {
            "function_call" => {
                if !self.calls.iter().any(|c| c.output_index == at) {
                    msg.tool_calls.push(self.start_call(at, item));
                } else if self.unsent_arguments(at) && !item.arguments.get().is_empty() {
                    let index = self.calls.iter().rposition(|c| c.output_index == at);
                    let index = index.unwrap_or(0);
                    self.calls[index].has_arguments = true;
                    msg.tool_calls.push(ToolCall {
                        index: Some(index as i64),
                        function: FunctionCall {
                            name: String::new(),
                            arguments: item.arguments.get().to_owned(),
                        },
                        ..Default::default()
                    });
                }
            }
            "message" if !streamed => {
                for part in item.content.iter().flatten() {
                    match part.kind.get() {
                        "refusal" => msg.refusal.push_str(part.refusal.get()),
                        _ => msg.content.push_str(part.text.get()),
                    }
                }
            }
            "reasoning" => {
                let summary = item.summary.as_deref().unwrap_or_default();
                if !streamed {
                    let texts = summary.iter().chain(item.content.iter().flatten());
                    for (part, p) in texts.enumerate() {
                        self.reasoning(at, part as i64, p.text.get(), &mut msg.reasoning_content);
                    }
                }
                msg.extra = Some(vec![(REASONING_KEY.to_owned(), reasoning_item(item))]);
            }
            _ => {}
        }
    }

    fn meta(&self, response: &ResponseJson<'_>) -> ResponseMeta {
        let reason = response
            .incomplete_details
            .as_ref()
            .and_then(|d| d.get("reason"))
            .and_then(serde_json::Value::as_str);
        let finish_reason = match (response.status.get(), reason) {
            ("incomplete", Some("max_output_tokens")) => "length",
            ("incomplete", Some("content_filter")) => "content_filter",
            ("incomplete", Some(other)) => other,
            ("incomplete", None) => "incomplete",
            _ if !self.calls.is_empty() => "tool_calls",
            _ => "stop",
        };
        ResponseMeta {
            finish_reason: finish_reason.to_owned(),
            usage: response.usage.as_ref().map(UsageJson::to_usage),
        }
    }

    /// Sends `msg` unless it carries nothing; the first chunk sent gets the role.
    fn emit(&mut self, mut msg: Message, out: &mut Vec<Message>) {
        let empty = msg.content.is_empty()
            && msg.refusal.is_empty()
            && msg.reasoning_content.is_empty()
            && msg.tool_calls.is_empty()
            && msg.response_meta.is_none()
            && msg.extra.is_none();
        if empty {
            return;
        }
        if !self.role_sent {
            self.role_sent = true;
            msg.role = "assistant".into();
        }
        out.push(msg);
    }
}

/// The `extra` value of a reasoning item: `{id: {"summary": {"0": text, ...},
/// "encrypted_content": ...}}`, what the next request needs to send the item back.
fn reasoning_item(item: &ItemJson<'_>) -> Value {
    let mut fields: Map = Vec::new();
    let summary: Map = item
        .summary
        .iter()
        .flatten()
        .enumerate()
        .map(|(i, p)| (i.to_string(), Value::Str(p.text.get().to_owned())))
        .collect();
    fields.push(("summary".to_owned(), Value::Map(summary)));
    if !item.encrypted_content.get().is_empty() {
        let content = item.encrypted_content.get().to_owned();
        fields.push(("encrypted_content".to_owned(), Value::Str(content)));
    }
    Value::Map(vec![(item.id.get().to_owned(), Value::Map(fields))])
}

/// A `type: "error"` event (`{"code", "message"}` at the top or under `error`) or a
/// `response.failed` event (under `response.error`).
fn server_error(line: usize, data: &str) -> StreamError {
    let value: serde_json::Value = serde_json::from_str(data).unwrap_or(serde_json::Value::Null);
    let error = value
        .pointer("/response/error")
        .or_else(|| value.get("error"))
        .filter(|e| !e.is_null())
        .unwrap_or(&value);
    let (message, code) = match error {
        serde_json::Value::Null => (data.to_owned(), None),
        e => error_parts(e),
    };
    StreamError::Server {
        line,
        message,
        code,
    }
}

/// Bytes of a streamed Responses API answer in, [`Message`] chunks out. `finish` fails with
/// [`StreamError::Truncated`] when no terminal event (`response.completed`,
/// `response.incomplete`) was read.
pub type ResponsesStreamParser = super::StreamParser<State>;

/// Reads a whole (non-streamed) Response body into one assistant message, by the stream's
/// rules: tool calls unindexed, as a whole message has them.
pub fn parse_response(body: &str) -> Result<Message, StreamError> {
    let response: ResponseJson<'_> = parse_body(body)?;
    if response.error.as_ref().is_some_and(|e| !e.is_null()) || response.status.get() == "failed" {
        let error = response.error.as_ref().unwrap_or(&serde_json::Value::Null);
        let (message, code) = error_parts(error);
        return Err(StreamError::Server {
            line: 1,
            message,
            code,
        });
    }
    let mut state = State::default();
    let mut out = Vec::new();
    for (at, item) in response.output.iter().flatten().enumerate() {
        let mut msg = Message::default();
        state.item_done(at as i64, item, &mut msg);
        state.emit(msg, &mut out);
    }
    let meta = state.meta(&response);
    state.emit(
        Message {
            response_meta: Some(meta),
            ..Default::default()
        },
        &mut out,
    );
    let mut msg = crate::concat::concat_messages(&out, Default::default())
        .map_err(|e| malformed(1, e.to_string(), body))?;
    for call in &mut msg.tool_calls {
        call.index = None;
    }
    Ok(msg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sse::testing::parse_pieces;

    fn sse(events: &[&str]) -> String {
        events
            .iter()
            .map(|e| {
                let kind = serde_json::from_str::<serde_json::Value>(e).unwrap()["type"]
                    .as_str()
                    .unwrap_or("")
                    .to_owned();
                format!("event: {kind}\ndata: {e}\n\n")
            })
            .collect()
    }

    fn parse(pieces: &[&[u8]]) -> Result<Vec<Message>, StreamError> {
        parse_pieces(ResponsesStreamParser::default(), pieces).map_err(|(_, e)| e)
    }

    const COMPLETED: &str = r#"{"type":"response.completed","sequence_number":9,"response":{"id":"resp_1","status":"completed","output":[],"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":2},"output_tokens":5,"output_tokens_details":{"reasoning_tokens":3},"total_tokens":15}}}"#;

    #[test]
    fn text_stream_has_eino_chunk_shape_at_every_split() {
        let body = sse(&[
            r#"{"type":"response.created","response":{"id":"resp_1","status":"in_progress","output":[]}}"#,
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"message","id":"msg_1","role":"assistant","content":[]}}"#,
            r#"{"type":"response.output_text.delta","output_index":0,"content_index":0,"item_id":"msg_1","delta":"Hé"}"#,
            r#"{"type":"response.output_text.delta","output_index":0,"content_index":0,"item_id":"msg_1","delta":" là"}"#,
            r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"message","id":"msg_1","content":[{"type":"output_text","text":"Hé là"}]}}"#,
            COMPLETED,
        ]);
        let usage = Usage {
            prompt_tokens: 10,
            completion_tokens: 5,
            total_tokens: 15,
            cached_tokens: 2,
            reasoning_tokens: 3,
        };
        let want = vec![
            Message::new("assistant", "Hé"),
            Message::new("", " là"),
            Message {
                response_meta: Some(ResponseMeta {
                    finish_reason: "stop".into(),
                    usage: Some(usage),
                }),
                ..Default::default()
            },
        ];
        let bytes = body.as_bytes();
        for at in 0..=bytes.len() {
            let (a, b) = bytes.split_at(at);
            assert_eq!(parse(&[a, b]).unwrap(), want, "split at {at}");
        }
    }

    #[test]
    fn function_calls_reasoning_and_finish_reason() {
        let body = sse(&[
            r#"{"type":"response.output_item.added","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[]}}"#,
            r#"{"type":"response.reasoning_summary_text.delta","output_index":0,"summary_index":0,"delta":"think"}"#,
            r#"{"type":"response.reasoning_summary_text.delta","output_index":0,"summary_index":1,"delta":"more"}"#,
            r#"{"type":"response.output_item.done","output_index":0,"item":{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"think"},{"type":"summary_text","text":"more"}],"encrypted_content":"gAAA"}}"#,
            r#"{"type":"response.output_item.added","output_index":1,"item":{"type":"function_call","id":"fc_1","call_id":"call_a","name":"add","arguments":"","status":"in_progress"}}"#,
            r#"{"type":"response.function_call_arguments.delta","output_index":1,"item_id":"fc_1","delta":"{\"a\":"}"#,
            r#"{"type":"response.function_call_arguments.delta","output_index":1,"item_id":"fc_1","delta":"1}"}"#,
            r#"{"type":"response.function_call_arguments.done","output_index":1,"item_id":"fc_1","arguments":"{\"a\":1}"}"#,
            r#"{"type":"response.output_item.added","output_index":2,"item":{"type":"function_call","id":"fc_2","call_id":"call_b","name":"mul","arguments":""}}"#,
            r#"{"type":"response.function_call_arguments.done","output_index":2,"item_id":"fc_2","arguments":"{}"}"#,
            r#"{"type":"response.completed","response":{"status":"completed","output":[]}}"#,
        ]);
        let out = parse(&[body.as_bytes()]).unwrap();
        let all = crate::concat::concat_messages(&out, Default::default()).unwrap();
        assert_eq!(all.role, "assistant");
        assert_eq!(all.reasoning_content, "think\n\nmore");
        let calls: Vec<_> = all.tool_calls.iter().map(ToolCall::fields).collect();
        assert_eq!(
            calls,
            vec![
                (Some(0), "call_a", "add", "{\"a\":1}"),
                (Some(1), "call_b", "mul", "{}")
            ]
        );
        assert_eq!(
            all.tool_calls[0].extra,
            Some(vec![("item_id".into(), Value::Str("fc_1".into()))])
        );
        let summary = Value::Map(vec![
            ("0".into(), Value::Str("think".into())),
            ("1".into(), Value::Str("more".into())),
        ]);
        let item = Value::Map(vec![
            ("summary".into(), summary),
            ("encrypted_content".into(), Value::Str("gAAA".into())),
        ]);
        assert_eq!(
            all.extra,
            Some(vec![(
                REASONING_KEY.into(),
                Value::Map(vec![("rs_1".into(), item)])
            )])
        );
        assert_eq!(all.response_meta.unwrap().finish_reason, "tool_calls");
    }

    #[test]
    fn errors_truncation_and_unknown_events() {
        let failed = sse(&[
            r#"{"type":"response.output_text.delta","output_index":0,"delta":"a"}"#,
            r#"{"type":"response.failed","response":{"status":"failed","error":{"code":"server_error","message":"boom"}}}"#,
        ]);
        let err = parse(&[failed.as_bytes()]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "the server sent an error at line 5 of the stream (server_error): boom"
        );
        let error = sse(&[
            r#"{"type":"error","code":"rate_limit_exceeded","message":"slow down","param":null}"#,
        ]);
        assert!(matches!(
            parse(&[error.as_bytes()]).unwrap_err(),
            StreamError::Server { line: 2, code: Some(c), .. } if c == "rate_limit_exceeded"
        ));
        let cut = sse(&[r#"{"type":"response.output_text.delta","output_index":0,"delta":"a"}"#]);
        assert_eq!(
            parse(&[cut.as_bytes()]).unwrap_err(),
            StreamError::Truncated { line: 3 }
        );
        // An event type not read here may have any shape; a read one may not.
        let odd = sse(&[
            r#"{"type":"response.audio.delta","delta":42}"#,
            r#"{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}"#,
        ]);
        let out = parse(&[odd.as_bytes()]).unwrap();
        assert_eq!(
            out[0].response_meta.as_ref().unwrap().finish_reason,
            "length"
        );
        let bad = sse(&[r#"{"type":"response.output_text.delta","delta":42}"#]);
        assert!(matches!(
            parse(&[bad.as_bytes()]).unwrap_err(),
            StreamError::Malformed { line: 2, .. }
        ));
        let orphan = sse(&[
            r#"{"type":"response.function_call_arguments.delta","output_index":3,"delta":"{"}"#,
        ]);
        let err = parse(&[orphan.as_bytes()]).unwrap_err();
        assert!(err.to_string().contains("no function_call item"), "{err}");
    }

    #[test]
    fn whole_response_reads_every_item() {
        let body = r#"{"id":"resp_1","status":"completed","output":[
            {"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"hm"}]},
            {"type":"message","id":"msg_1","role":"assistant","content":[{"type":"output_text","text":"ok","annotations":[]}]},
            {"type":"function_call","id":"fc_1","call_id":"call_1","name":"f","arguments":"{}"}
        ],"usage":{"input_tokens":3,"output_tokens":4,"total_tokens":7}}"#;
        let m = parse_response(body).unwrap();
        assert_eq!(m.role, "assistant");
        assert_eq!(m.content, "ok");
        assert_eq!(m.reasoning_content, "hm");
        assert_eq!(m.tool_calls.len(), 1);
        assert_eq!(m.tool_calls[0].index, None);
        assert_eq!(m.tool_calls[0].id, "call_1");
        let meta = m.response_meta.unwrap();
        assert_eq!(meta.finish_reason, "tool_calls");
        assert_eq!(meta.usage.unwrap().total_tokens, 7);
        let err = parse_response(r#"{"status":"failed","error":{"code":"x","message":"y"}}"#);
        assert!(matches!(err, Err(StreamError::Server { .. })));
        let err = parse_response("{\"output\": nope}").unwrap_err();
        assert!(
            matches!(err, StreamError::Malformed { line: 1, .. }),
            "{err:?}"
        );
    }
}
