//! Concatenation of streamed message chunks into one message, with Eino's exact rules
//! (`schema.ConcatMessages`), in pure Rust.
//!
//! * role, name, tool_call_id, tool_name: the first non-empty value wins; a different
//!   non-empty value later is an error.
//! * content, reasoning_content and refusal (OpenAI's, not in Eino): concatenated.
//! * tool calls: calls without an index are kept as they are, first and in order; indexed
//!   calls are merged per index (first non-empty id, type and name win, conflicts are errors,
//!   arguments concatenated, the first chunk's `extra` kept) and sorted by index.
//! * response_meta: present if any chunk has one; finish_reason is the last non-empty one;
//!   usage is the per-field maximum (or the sum, or the last, by [`UsagePolicy`]).
//! * extra: merged per key by type (strings concatenated, scalars last wins, maps
//!   recursively, other types: at most one non-zero value).
//!
//! [`Accumulator::push`] checks a chunk completely before applying it, so a rejected chunk
//! leaves the accumulator as it was.

use std::collections::HashMap;
use std::fmt;

use crate::message::{Map, Message, Part, ResponseMeta, ToolCall, Usage, Value};

/// How usage counters of several chunks combine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UsagePolicy {
    /// Per-field maximum (Eino): right for cumulative counters and for a single usage chunk.
    #[default]
    Max,
    /// Per-field sum (LangChain): right when every chunk reports its own increment.
    Sum,
    /// The last usage reported wins.
    Last,
}

impl UsagePolicy {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "max" => Some(UsagePolicy::Max),
            "sum" => Some(UsagePolicy::Sum),
            "last" => Some(UsagePolicy::Last),
            _ => None,
        }
    }
}

/// Why chunks could not be concatenated. `field` names the offending field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConcatError {
    pub field: String,
    pub message: String,
}

impl fmt::Display for ConcatError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ConcatError {}

impl ConcatError {
    fn conflict(field: &str, what: &str, first: &str, other: &str, index: usize) -> Self {
        ConcatError {
            field: field.into(),
            message: format!(
                "cannot concat messages with different {what}: '{first}' and '{other}' (chunk {index})"
            ),
        }
    }

    fn extra(path: &str, message: String) -> Self {
        ConcatError {
            field: format!("extra.{path}"),
            message,
        }
    }

    /// A missing chunk (`None` in Python, Eino's nil chunk).
    pub fn missing_chunk(index: usize) -> Self {
        ConcatError {
            field: "chunk".into(),
            message: format!("unexpected None chunk in message stream, index: {index}"),
        }
    }
}

/// Concatenates `chunks` into a new message. No chunks give an empty message.
pub fn concat_messages<'a>(
    chunks: impl IntoIterator<Item = &'a Message>,
    usage: UsagePolicy,
) -> Result<Message, ConcatError> {
    let mut acc = Accumulator::new(usage);
    for chunk in chunks {
        acc.push(chunk)?;
    }
    Ok(acc.finish())
}

/// Incremental concatenation: the state of `concat_messages` after some chunks.
#[derive(Clone, Debug, Default)]
pub struct Accumulator {
    usage_policy: UsagePolicy,
    pushed: usize,
    msg: Message,
    /// Indexed tool calls in arrival order; sorted by index in `finish`.
    indexed: Vec<ToolCall>,
    /// The position in `indexed` of each index's call, so each delta merges in O(1) (a
    /// linear search made a response of n calls cost O(n²)).
    positions: HashMap<i64, usize>,
}

impl Accumulator {
    pub fn new(usage_policy: UsagePolicy) -> Self {
        Accumulator {
            usage_policy,
            ..Default::default()
        }
    }

    /// The number of chunks pushed so far.
    pub fn len(&self) -> usize {
        self.pushed
    }

    pub fn is_empty(&self) -> bool {
        self.pushed == 0
    }

    /// Adds one chunk. On error nothing is applied and the chunk can be skipped.
    pub fn push(&mut self, chunk: &Message) -> Result<(), ConcatError> {
        let index = self.pushed;
        self.check_identity(chunk, index)?;
        if !chunk.tool_calls.is_empty() {
            self.check_tool_calls(chunk, index)?;
        }
        let extra = self.merged_extra(chunk)?;
        self.apply(chunk, extra);
        self.pushed += 1;
        Ok(())
    }

    /// The message the chunks pushed so far concatenate to.
    pub fn snapshot(&self) -> Message {
        self.clone().finish()
    }

    pub fn finish(mut self) -> Message {
        self.indexed.sort_by_key(|tc| tc.index);
        self.msg.tool_calls.append(&mut self.indexed);
        self.msg
    }

    fn check_identity(&self, c: &Message, i: usize) -> Result<(), ConcatError> {
        let m = &self.msg;
        check_same("role", "roles", &m.role, &c.role, i)?;
        check_same("name", "names", &m.name, &c.name, i)?;
        check_same(
            "tool_call_id",
            "tool_call_ids",
            &m.tool_call_id,
            &c.tool_call_id,
            i,
        )?;
        check_same("tool_name", "tool_names", &m.tool_name, &c.tool_name, i)
    }

    /// Checks each indexed delta against the id, type and name merged so far for its index,
    /// as Eino merges them. One chunk may carry several deltas of one index: those merge in
    /// a scratch map, as nothing may be applied before the whole chunk is checked.
    fn check_tool_calls(&self, c: &Message, i: usize) -> Result<(), ConcatError> {
        let mut merged: HashMap<i64, [&str; 3]> = HashMap::new();
        for tc in &c.tool_calls {
            let Some(index) = tc.index else { continue };
            let fields = merged.entry(index).or_insert_with(|| {
                self.positions
                    .get(&index)
                    .map_or([""; 3], |&p| identity(&self.indexed[p]))
            });
            check_tool_call(fields, tc, i)?;
            for (acc, new) in fields.iter_mut().zip(identity(tc)) {
                if acc.is_empty() {
                    *acc = new;
                }
            }
        }
        Ok(())
    }

    fn merged_extra(&self, c: &Message) -> Result<Option<Map>, ConcatError> {
        match (&self.msg.extra, &c.extra) {
            (_, None) => Ok(None),
            (None, Some(new)) => Ok(Some(new.clone())),
            (Some(old), Some(new)) => {
                let mut merged = old.clone();
                merge_maps(&mut merged, new, "")?;
                Ok(Some(merged))
            }
        }
    }

    fn apply(&mut self, c: &Message, extra: Option<Map>) {
        let m = &mut self.msg;
        first_non_empty(&mut m.role, &c.role);
        first_non_empty(&mut m.name, &c.name);
        first_non_empty(&mut m.tool_call_id, &c.tool_call_id);
        first_non_empty(&mut m.tool_name, &c.tool_name);
        // Most chunks carry one field: skip the empty ones without touching the buffers.
        if !c.content.is_empty() {
            m.content.push_str(&c.content);
        }
        if !c.reasoning_content.is_empty() {
            m.reasoning_content.push_str(&c.reasoning_content);
        }
        if !c.refusal.is_empty() {
            m.refusal.push_str(&c.refusal);
        }
        if !c.user_input_multi_content.is_empty() {
            append_parts(&mut m.user_input_multi_content, &c.user_input_multi_content);
        }
        if let Some(meta) = &c.response_meta {
            merge_meta(
                m.response_meta.get_or_insert_with(Default::default),
                meta,
                self.usage_policy,
            );
        }
        if extra.is_some() {
            m.extra = extra;
        }
        for tc in &c.tool_calls {
            match tc.index {
                None => self.msg.tool_calls.push(tc.clone()),
                Some(index) => self.merge_indexed(index, tc),
            }
        }
    }

    fn merge_indexed(&mut self, index: i64, tc: &ToolCall) {
        let Some(&p) = self.positions.get(&index) else {
            self.positions.insert(index, self.indexed.len());
            self.indexed.push(tc.clone());
            return;
        };
        let base = &mut self.indexed[p];
        first_non_empty(&mut base.id, &tc.id);
        first_non_empty(&mut base.kind, &tc.kind);
        first_non_empty(&mut base.function.name, &tc.function.name);
        base.function.arguments.push_str(&tc.function.arguments);
    }
}

fn check_same(
    field: &str,
    what: &str,
    first: &str,
    other: &str,
    i: usize,
) -> Result<(), ConcatError> {
    if first.is_empty() || other.is_empty() || first == other {
        return Ok(());
    }
    Err(ConcatError::conflict(field, what, first, other, i))
}

/// A tool call's id, type and name: the fields whose first non-empty value wins.
fn identity(tc: &ToolCall) -> [&str; 3] {
    [&tc.id, &tc.kind, &tc.function.name]
}

/// Checks `tc` against `base`, the id, type and name merged so far for its index.
fn check_tool_call(base: &[&str; 3], tc: &ToolCall, i: usize) -> Result<(), ConcatError> {
    let at = |field: &str| format!("tool_calls[index={}].{field}", tc.index.unwrap_or_default());
    let names = [
        ("id", "tool call ids"),
        ("type", "tool call types"),
        ("function.name", "tool call names"),
    ];
    for ((field, what), (a, b)) in names.into_iter().zip(base.iter().zip(identity(tc))) {
        if !a.is_empty() && !b.is_empty() && *a != b {
            let mut err = ConcatError::conflict(field, what, a, b, i);
            err.field = at(field);
            return Err(err);
        }
    }
    Ok(())
}

fn first_non_empty(acc: &mut String, new: &str) {
    if acc.is_empty() && !new.is_empty() {
        new.clone_into(acc);
    }
}

/// Eino merges consecutive text parts of user input; image parts are kept as they are.
fn append_parts(acc: &mut Vec<Part>, new: &[Part]) {
    for part in new {
        match (acc.last_mut(), part) {
            (Some(Part::Text(prev)), Part::Text(text)) => prev.push_str(text),
            _ => acc.push(part.clone()),
        }
    }
}

pub(crate) fn merge_meta(acc: &mut ResponseMeta, new: &ResponseMeta, policy: UsagePolicy) {
    if !new.finish_reason.is_empty() {
        new.finish_reason.clone_into(&mut acc.finish_reason);
    }
    if let Some(usage) = &new.usage {
        acc.usage = Some(match acc.usage {
            None => *usage,
            Some(old) => merge_usage(old, usage, policy),
        });
    }
}

fn merge_usage(a: Usage, b: &Usage, policy: UsagePolicy) -> Usage {
    let f: fn(u64, u64) -> u64 = match policy {
        UsagePolicy::Max => u64::max,
        UsagePolicy::Sum => u64::saturating_add,
        UsagePolicy::Last => |_, b| b,
    };
    Usage {
        prompt_tokens: f(a.prompt_tokens, b.prompt_tokens),
        completion_tokens: f(a.completion_tokens, b.completion_tokens),
        total_tokens: f(a.total_tokens, b.total_tokens),
        cached_tokens: f(a.cached_tokens, b.cached_tokens),
        reasoning_tokens: f(a.reasoning_tokens, b.reasoning_tokens),
    }
}

/// Merges `new` into `acc` key by key (Eino's `concatExtra`). `path` prefixes error fields.
pub fn merge_maps(acc: &mut Map, new: &Map, path: &str) -> Result<(), ConcatError> {
    for (key, value) in new {
        let here = if path.is_empty() {
            key.clone()
        } else {
            format!("{path}.{key}")
        };
        match acc.iter_mut().find(|(k, _)| k == key) {
            Some((_, old)) => merge_value(old, value, &here)?,
            None => acc.push((key.clone(), value.clone())),
        }
    }
    Ok(())
}

fn merge_value(acc: &mut Value, new: &Value, path: &str) -> Result<(), ConcatError> {
    match (&mut *acc, new) {
        (_, Value::Null) => {}
        (Value::Null, _) => *acc = new.clone(),
        (Value::Str(a), Value::Str(b)) => a.push_str(b),
        (Value::Map(a), Value::Map(b)) => merge_maps(a, b, path)?,
        (Value::Bool(_), Value::Bool(_))
        | (Value::Int(_), Value::Int(_))
        | (Value::Float(_), Value::Float(_)) => *acc = new.clone(),
        (Value::Opaque(a), Value::Opaque(b)) if a.type_name == b.type_name => {
            if !a.is_zero && !b.is_zero {
                return Err(ConcatError::extra(
                    path,
                    format!(
                        "cannot concat multiple non-zero values of type {} in extra key '{path}': {a:?} and {b:?}",
                        a.type_name
                    ),
                ));
            }
            if a.is_zero {
                *acc = new.clone();
            }
        }
        (old, _) => {
            return Err(ConcatError::extra(
                path,
                format!(
                    "cannot concat extra key '{path}': a {} value and a {} value",
                    old.type_name(),
                    new.type_name()
                ),
            ))
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::message::{FunctionCall, Opaque};

    fn chunk(content: &str) -> Message {
        Message {
            content: content.into(),
            ..Default::default()
        }
    }

    fn tc(index: Option<i64>, id: &str, name: &str, args: &str) -> ToolCall {
        ToolCall {
            index,
            id: id.into(),
            kind: String::new(),
            function: FunctionCall {
                name: name.into(),
                arguments: args.into(),
            },
            extra: None,
        }
    }

    fn with_calls(calls: Vec<ToolCall>) -> Message {
        Message {
            tool_calls: calls,
            ..Default::default()
        }
    }

    fn concat(chunks: &[Message]) -> Result<Message, ConcatError> {
        concat_messages(chunks, UsagePolicy::Max)
    }

    #[test]
    fn zero_chunks_give_an_empty_message() {
        assert_eq!(concat(&[]).unwrap(), Message::default());
    }

    #[test]
    fn first_non_empty_role_wins_and_text_is_concatenated() {
        let mut first = Message::new("assistant", "Hel");
        first.reasoning_content = "th".into();
        let mut second = Message::new("", "lo");
        second.reasoning_content = "ink".into();
        let out = concat(&[first, second, Message::new("assistant", "!")]).unwrap();
        assert_eq!(out.role, "assistant");
        assert_eq!(out.content, "Hello!");
        assert_eq!(out.reasoning_content, "think");
    }

    #[test]
    fn conflicting_identity_fields_are_errors_naming_both_values() {
        type Setter = fn(&mut Message, &str);
        let cases: [(&str, Setter); 4] = [
            ("role", |m, v| m.role = v.into()),
            ("name", |m, v| m.name = v.into()),
            ("tool_call_id", |m, v| m.tool_call_id = v.into()),
            ("tool_name", |m, v| m.tool_name = v.into()),
        ];
        for (field, set) in cases {
            let (mut a, mut b) = (Message::default(), Message::default());
            set(&mut a, "alpha");
            set(&mut b, "beta");
            let err = concat(&[a.clone(), Message::default(), b]).unwrap_err();
            assert_eq!(err.field, field);
            assert!(err.message.contains("'alpha' and 'beta'"), "{err}");
            assert!(err.message.contains("chunk 2"), "{err}");
            // The same value twice is fine.
            assert!(concat(&[a.clone(), a]).is_ok());
        }
    }

    #[test]
    fn tool_calls_merge_by_index_and_sort_after_unindexed_ones() {
        let chunks = [
            with_calls(vec![
                tc(Some(1), "b", "search", "{\"q\":"),
                tc(None, "x", "raw", "{}"),
            ]),
            with_calls(vec![tc(Some(0), "a", "lookup", "{")]),
            with_calls(vec![
                tc(Some(1), "", "", "\"rust\"}"),
                tc(Some(0), "", "", "}"),
            ]),
            with_calls(vec![tc(None, "y", "raw2", "[]")]),
        ];
        let out = concat(&chunks).unwrap();
        let got: Vec<_> = out.tool_calls.iter().map(ToolCall::fields).collect();
        assert_eq!(
            got,
            vec![
                (None, "x", "raw", "{}"),
                (None, "y", "raw2", "[]"),
                (Some(0), "a", "lookup", "{}"),
                (Some(1), "b", "search", "{\"q\":\"rust\"}"),
            ]
        );
    }

    #[test]
    fn tool_call_conflicts_are_errors() {
        let mut typed = tc(Some(0), "", "", "");
        typed.kind = "function".into();
        let mut other_type = tc(Some(0), "", "", "");
        other_type.kind = "code".into();
        let cases = [
            (
                tc(Some(0), "a", "", ""),
                tc(Some(0), "b", "", ""),
                "tool_calls[index=0].id",
            ),
            (typed, other_type, "tool_calls[index=0].type"),
            (
                tc(Some(0), "", "f", ""),
                tc(Some(0), "", "g", ""),
                "tool_calls[index=0].function.name",
            ),
        ];
        for (a, b, field) in cases {
            let err =
                concat(&[with_calls(vec![a.clone()]), with_calls(vec![b.clone()])]).unwrap_err();
            assert_eq!(err.field, field);
            // Within one chunk too.
            assert_eq!(concat(&[with_calls(vec![a, b])]).unwrap_err().field, field);
        }
        // Different indexes never conflict; unindexed calls are never merged.
        assert!(concat(&[with_calls(vec![
            tc(Some(0), "a", "", ""),
            tc(Some(1), "b", "", "")
        ])])
        .is_ok());
        assert!(concat(&[with_calls(vec![
            tc(None, "a", "", ""),
            tc(None, "b", "", "")
        ])])
        .is_ok());
    }

    #[test]
    fn a_delta_is_checked_against_the_fields_merged_so_far() {
        // As Eino: the id merged from the second delta conflicts before the name does, in
        // one chunk as across chunks; a failed chunk applies nothing.
        let deltas = [
            tc(Some(0), "", "f", ""),
            tc(Some(0), "a", "", ""),
            tc(Some(0), "b", "g", ""),
        ];
        let err = concat(&[with_calls(deltas.to_vec())]).unwrap_err();
        assert_eq!(err.field, "tool_calls[index=0].id");
        let chunks: Vec<_> = deltas.iter().map(|d| with_calls(vec![d.clone()])).collect();
        assert_eq!(concat(&chunks).unwrap_err().field, "tool_calls[index=0].id");
        let mut acc = Accumulator::default();
        acc.push(&with_calls(deltas[..2].to_vec())).unwrap();
        assert!(acc.push(&with_calls(vec![deltas[2].clone()])).is_err());
        acc.push(&with_calls(vec![tc(Some(0), "", "", "{}")]))
            .unwrap();
        let out = acc.finish();
        assert_eq!(out.tool_calls.len(), 1);
        assert_eq!(
            (
                out.tool_calls[0].id.as_str(),
                out.tool_calls[0].function.name.as_str()
            ),
            ("a", "f")
        );
        assert_eq!(out.tool_calls[0].function.arguments, "{}");
    }

    #[test]
    fn the_first_chunk_of_a_tool_call_keeps_its_extra() {
        let mut first = tc(Some(0), "a", "f", "1");
        first.extra = Some(vec![("k".into(), Value::Int(1))]);
        let mut second = tc(Some(0), "", "", "2");
        second.extra = Some(vec![("k".into(), Value::Int(2))]);
        let out = concat(&[with_calls(vec![first.clone()]), with_calls(vec![second])]).unwrap();
        assert_eq!(out.tool_calls[0].extra, first.extra);
        assert_eq!(out.tool_calls[0].function.arguments, "12");
    }

    fn meta(finish: &str, usage: Option<Usage>) -> Message {
        Message {
            response_meta: Some(ResponseMeta {
                finish_reason: finish.into(),
                usage,
            }),
            ..Default::default()
        }
    }

    fn usage(p: u64, c: u64, t: u64) -> Usage {
        Usage {
            prompt_tokens: p,
            completion_tokens: c,
            total_tokens: t,
            cached_tokens: p / 2,
            reasoning_tokens: c / 2,
        }
    }

    #[test]
    fn finish_reason_is_the_last_non_empty_and_usage_the_maximum() {
        let chunks = [
            meta("", Some(usage(10, 0, 10))),
            meta("stop", None),
            meta("", Some(usage(4, 8, 12))),
        ];
        let out = concat(&chunks).unwrap().response_meta.unwrap();
        assert_eq!(out.finish_reason, "stop");
        assert_eq!(out.usage, Some(usage(10, 8, 12)));
        let summed = concat_messages(&chunks, UsagePolicy::Sum)
            .unwrap()
            .response_meta
            .unwrap();
        assert_eq!(summed.usage.unwrap().total_tokens, 22);
        let last = concat_messages(&chunks, UsagePolicy::Last)
            .unwrap()
            .response_meta
            .unwrap();
        assert_eq!(last.usage, Some(usage(4, 8, 12)));
        assert!(concat(&[chunk("a")]).unwrap().response_meta.is_none());
    }

    fn extra(pairs: Vec<(&str, Value)>) -> Message {
        let map = pairs.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        Message {
            extra: Some(map),
            ..Default::default()
        }
    }

    fn list(id: u8, empty: bool) -> Value {
        Value::Opaque(Opaque {
            type_name: "list".into(),
            is_zero: empty,
            handle: Arc::new(id),
            eq: |_, _| false,
        })
    }

    #[test]
    fn extra_merges_by_type() {
        let a = extra(vec![
            ("s", Value::Str("ab".into())),
            ("n", Value::Int(1)),
            ("m", Value::Map(vec![("x".into(), Value::Str("1".into()))])),
            ("once", Value::Null),
            ("l", list(1, false)),
        ]);
        let b = extra(vec![
            ("s", Value::Str("c".into())),
            ("n", Value::Int(2)),
            (
                "m",
                Value::Map(vec![
                    ("x".into(), Value::Str("2".into())),
                    ("y".into(), Value::Bool(true)),
                ]),
            ),
            ("l", list(2, true)),
        ]);
        let out = concat(&[a, chunk("no extra"), b]).unwrap().extra.unwrap();
        let get = |k: &str| {
            out.iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        assert_eq!(get("s"), Value::Str("abc".into()));
        assert_eq!(get("n"), Value::Int(2));
        assert_eq!(get("once"), Value::Null);
        let Value::Map(m) = get("m") else { panic!() };
        assert_eq!(
            m,
            vec![
                ("x".into(), Value::Str("12".into())),
                ("y".into(), Value::Bool(true))
            ]
        );
        let Value::Opaque(l) = get("l") else { panic!() };
        assert_eq!(l.handle.downcast_ref::<u8>(), Some(&1));
    }

    #[test]
    fn extra_conflicts_are_errors() {
        let err = concat(&[
            extra(vec![("k", Value::Int(1))]),
            extra(vec![("k", Value::Str("x".into()))]),
        ])
        .unwrap_err();
        assert_eq!(err.field, "extra.k");
        assert!(
            err.message.contains("int") && err.message.contains("str"),
            "{err}"
        );
        let nested = |v| extra(vec![("m", Value::Map(vec![("k".into(), v)]))]);
        let err = concat(&[nested(Value::Float(1.0)), nested(Value::Int(1))]).unwrap_err();
        assert_eq!(err.field, "extra.m.k");
        let err = concat(&[
            extra(vec![("l", list(1, false))]),
            extra(vec![("l", list(2, false))]),
        ])
        .unwrap_err();
        assert!(
            err.message
                .contains("multiple non-zero values of type list"),
            "{err}"
        );
    }

    #[test]
    fn a_rejected_push_changes_nothing() {
        let mut acc = Accumulator::new(UsagePolicy::Max);
        acc.push(&Message::new("assistant", "a")).unwrap();
        let mut bad = Message::new("user", "b");
        bad.tool_calls.push(tc(Some(0), "x", "", "zz"));
        assert!(acc.push(&bad).is_err());
        assert_eq!(acc.len(), 1);
        assert_eq!(acc.snapshot(), Message::new("assistant", "a"));
        acc.push(&chunk("c")).unwrap();
        assert_eq!(acc.finish().content, "ac");
    }

    #[test]
    fn consecutive_text_parts_merge() {
        let img = Part::ImageUrl {
            url: "u".into(),
            detail: String::new(),
        };
        let a = Message {
            user_input_multi_content: vec![Part::Text("a".into())],
            ..Default::default()
        };
        let b = Message {
            user_input_multi_content: vec![
                Part::Text("b".into()),
                img.clone(),
                Part::Text("c".into()),
            ],
            ..Default::default()
        };
        let out = concat(&[a, b]).unwrap().user_input_multi_content;
        assert_eq!(
            out,
            vec![Part::Text("ab".into()), img, Part::Text("c".into())]
        );
    }

    #[test]
    fn file_parts_are_kept_and_split_the_text_runs() {
        let file = Part::File {
            filename: "a.pdf".into(),
            file_data: "data:application/pdf;base64,JVBERg==".into(),
            file_id: String::new(),
        };
        let parts = |ps: Vec<Part>| Message {
            user_input_multi_content: ps,
            ..Default::default()
        };
        let out = concat(&[
            parts(vec![Part::Text("a".into()), file.clone()]),
            parts(vec![Part::Text("b".into()), Part::Text("c".into())]),
        ])
        .unwrap()
        .user_input_multi_content;
        assert_eq!(
            out,
            vec![Part::Text("a".into()), file, Part::Text("bc".into())]
        );
    }

    #[test]
    fn splitting_and_concatenating_round_trips() {
        // A deterministic split of a full message into single-character chunks.
        let full = Message {
            role: "assistant".into(),
            content: "héllo wörld".into(),
            reasoning_content: "because".into(),
            tool_calls: vec![
                tc(Some(0), "call_1", "f", "{\"a\":1}"),
                tc(Some(3), "call_2", "g", "[]"),
            ],
            response_meta: Some(ResponseMeta {
                finish_reason: "tool_calls".into(),
                usage: Some(usage(5, 7, 12)),
            }),
            ..Default::default()
        };
        let mut chunks = vec![Message {
            role: "assistant".into(),
            ..Default::default()
        }];
        chunks.extend(full.content.chars().map(|c| chunk(&c.to_string())));
        for call in &full.tool_calls {
            chunks.push(with_calls(vec![tc(
                call.index,
                &call.id,
                &call.function.name,
                "",
            )]));
            for c in call.function.arguments.chars() {
                chunks.push(with_calls(vec![tc(call.index, "", "", &c.to_string())]));
            }
        }
        chunks.push(Message {
            reasoning_content: full.reasoning_content.clone(),
            ..Default::default()
        });
        chunks.push(
            full.response_meta
                .clone()
                .map(|m| Message {
                    response_meta: Some(m),
                    ..Default::default()
                })
                .unwrap(),
        );
        assert_eq!(concat(&chunks).unwrap(), full);
    }
}
