//! OpenAI chat-completions chunks, in pure Rust: the events of a streamed chat completion
//! in, message chunks out (framed by [`super::SseDecoder`]).
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

use serde::Deserialize;

use super::{error_parts, excerpt, malformed, parse_body, Protocol, SseEvent, StreamError, Text};
use crate::message::{FunctionCall, Message, ResponseMeta, ToolCall, Usage};

// ---------------------------------------------------------------------------------------
// Chat-completions JSON (only the fields read; others are skipped)

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

/// What the chunk assembly remembers between chunks: the chat-completions [`Protocol`].
#[derive(Debug, Default)]
pub struct State {
    options: ParserOptions,
    role_sent: bool,
    done: bool,
    finished: bool,
    calls: Vec<CallState>,
    think: ThinkSplitter,
}

impl State {
    pub fn new(options: ParserOptions) -> Self {
        State {
            options,
            ..Default::default()
        }
    }
}

impl Protocol for State {
    #[inline]
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
                    return Err(malformed(ev.line + at - 1, e.to_string(), text));
                }
            }
        }
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

    /// `data: [DONE]` was read.
    fn done(&self) -> bool {
        self.done
    }
}

impl State {
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
}

/// Bytes of a streamed chat completion in, [`Message`] chunks out.
pub type ChatStreamParser = super::StreamParser<State>;

/// Reads a whole (non-streamed) chat-completions response body into one message: the same
/// dialect rules as the stream (reasoning fields, `<think>` tags, generated call ids), with
/// tool calls unindexed, as a whole message has them.
pub fn parse_completion(body: &str, options: ParserOptions) -> Result<Message, StreamError> {
    let chunk: ChunkJson<'_> = parse_body(body)?;
    let mut state = State::new(options);
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
    use crate::sse::testing::{call, parse_pieces};

    fn parse(pieces: &[&[u8]], options: ParserOptions) -> Result<Vec<Message>, StreamError> {
        parse_pieces(ChatStreamParser::new(State::new(options)), pieces).map_err(|(_, e)| e)
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
