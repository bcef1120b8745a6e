//! The block-list message (Eino's `schema.AgenticMessage`), in pure Rust: a role and an
//! ordered list of typed content blocks, its streaming concatenation, and its lossless
//! conversion to and from [`Message`].
//!
//! One [`ContentBlock`] struct carries every kind: `kind` says which fields are meaningful
//! ([`BlockKind::fields`]); the others stay empty. The binding, the codec and the
//! concatenation all read that one table, so a field cannot be meaningful in one place and
//! ignored in another.
//!
//! Concatenation (Eino's `ConcatAgenticMessages`, with the fixes of eino PR 1262):
//! * role and name: the first non-empty value wins; a different non-empty value is an error.
//! * blocks with a stream `index` are merged per index and sorted by it, and the merged
//!   block carries no index any more; blocks without one are kept in order. One stream
//!   mixing both is an error, as in Eino.
//! * per index: the kinds must agree (else an error naming the index and both kinds); text,
//!   reasoning text, tool-call arguments, tool-result content and media data append; the
//!   reasoning signature is the last non-empty one; ids, names, labels, URLs and MIME types:
//!   first non-empty wins, a different one is an error; `is_error` is set once any chunk sets it.
//! * response_meta and extra: as for [`Message`] ([`crate::concat`]).

use std::collections::HashMap;

use crate::concat::{merge_maps, merge_meta, ConcatError, UsagePolicy};
use crate::message::{FunctionCall, Map, Message, Part, ResponseMeta, ToolCall};

/// The kinds of content block.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum BlockKind {
    Text,
    Reasoning,
    Refusal,
    Image,
    Audio,
    Video,
    File,
    ToolCall,
    ToolResult,
    ServerToolCall,
    ServerToolResult,
    McpToolCall,
    McpToolResult,
}

/// A field of a content block other than `kind`, `index` and `extra`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Field {
    Text,
    Signature,
    CallId,
    Name,
    Arguments,
    ServerLabel,
    Url,
    Data,
    MimeType,
    Detail,
    Filename,
    FileId,
    IsError,
}

impl Field {
    pub const ALL: [Field; 13] = [
        Field::Text,
        Field::Signature,
        Field::CallId,
        Field::Name,
        Field::Arguments,
        Field::ServerLabel,
        Field::Url,
        Field::Data,
        Field::MimeType,
        Field::Detail,
        Field::Filename,
        Field::FileId,
        Field::IsError,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Field::Text => "text",
            Field::Signature => "signature",
            Field::CallId => "call_id",
            Field::Name => "name",
            Field::Arguments => "arguments",
            Field::ServerLabel => "server_label",
            Field::Url => "url",
            Field::Data => "data",
            Field::MimeType => "mime_type",
            Field::Detail => "detail",
            Field::Filename => "filename",
            Field::FileId => "file_id",
            Field::IsError => "is_error",
        }
    }

    pub fn parse(name: &str) -> Option<Field> {
        Field::ALL.into_iter().find(|f| f.name() == name)
    }

    /// How streamed values of this field combine.
    fn merge(self) -> Merge {
        match self {
            Field::Text | Field::Arguments | Field::Data => Merge::Append,
            Field::Signature => Merge::LastNonEmpty,
            Field::IsError => Merge::Or,
            _ => Merge::Same,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Merge {
    Append,
    LastNonEmpty,
    /// First non-empty wins; a different non-empty value is a conflict.
    Same,
    Or,
}

const MEDIA: &[Field] = &[Field::Url, Field::Data, Field::MimeType];

impl BlockKind {
    pub const ALL: [BlockKind; 13] = [
        BlockKind::Text,
        BlockKind::Reasoning,
        BlockKind::Refusal,
        BlockKind::Image,
        BlockKind::Audio,
        BlockKind::Video,
        BlockKind::File,
        BlockKind::ToolCall,
        BlockKind::ToolResult,
        BlockKind::ServerToolCall,
        BlockKind::ServerToolResult,
        BlockKind::McpToolCall,
        BlockKind::McpToolResult,
    ];

    pub fn name(self) -> &'static str {
        match self {
            BlockKind::Text => "text",
            BlockKind::Reasoning => "reasoning",
            BlockKind::Refusal => "refusal",
            BlockKind::Image => "image",
            BlockKind::Audio => "audio",
            BlockKind::Video => "video",
            BlockKind::File => "file",
            BlockKind::ToolCall => "tool_call",
            BlockKind::ToolResult => "tool_result",
            BlockKind::ServerToolCall => "server_tool_call",
            BlockKind::ServerToolResult => "server_tool_result",
            BlockKind::McpToolCall => "mcp_tool_call",
            BlockKind::McpToolResult => "mcp_tool_result",
        }
    }

    pub fn parse(name: &str) -> Option<BlockKind> {
        BlockKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The position of the kind in [`BlockKind::ALL`]: its tag in the checkpoint format.
    pub fn tag(self) -> u8 {
        BlockKind::ALL.iter().position(|k| *k == self).unwrap_or(0) as u8
    }

    pub fn from_tag(tag: u8) -> Option<BlockKind> {
        BlockKind::ALL.get(usize::from(tag)).copied()
    }

    /// The fields meaningful for this kind, in the order `to_dict` and `repr` write them.
    pub fn fields(self) -> &'static [Field] {
        use Field::*;
        match self {
            BlockKind::Text | BlockKind::Refusal => &[Text],
            BlockKind::Reasoning => &[Text, Signature],
            BlockKind::Image => &[Url, Data, MimeType, Detail],
            BlockKind::Audio | BlockKind::Video => MEDIA,
            BlockKind::File => &[Url, Data, MimeType, Filename, FileId],
            BlockKind::ToolCall | BlockKind::ServerToolCall => &[CallId, Name, Arguments],
            BlockKind::ToolResult | BlockKind::ServerToolResult => &[CallId, Name, Text, IsError],
            BlockKind::McpToolCall => &[ServerLabel, CallId, Name, Arguments],
            BlockKind::McpToolResult => &[ServerLabel, CallId, Name, Text, IsError],
        }
    }
}

/// One content block. Only the fields of `kind.fields()` are meaningful; the rest stay empty.
#[derive(Clone, Debug, PartialEq)]
pub struct ContentBlock {
    pub kind: BlockKind,
    /// The block's position in a stream: chunks of one block share it.
    pub index: Option<i64>,
    /// Text, reasoning text, refusal text, or a tool result's content.
    pub text: String,
    /// A reasoning block's signature (Anthropic's thinking signature, OpenAI's encrypted
    /// reasoning), which the provider needs back verbatim.
    pub signature: String,
    pub call_id: String,
    pub name: String,
    /// A tool call's JSON arguments, as streamed.
    pub arguments: String,
    pub server_label: String,
    pub url: String,
    /// Media content, base64.
    pub data: String,
    pub mime_type: String,
    pub detail: String,
    pub filename: String,
    pub file_id: String,
    pub is_error: bool,
    pub extra: Option<Map>,
}

impl ContentBlock {
    pub fn new(kind: BlockKind) -> Self {
        ContentBlock {
            kind,
            index: None,
            text: String::new(),
            signature: String::new(),
            call_id: String::new(),
            name: String::new(),
            arguments: String::new(),
            server_label: String::new(),
            url: String::new(),
            data: String::new(),
            mime_type: String::new(),
            detail: String::new(),
            filename: String::new(),
            file_id: String::new(),
            is_error: false,
            extra: None,
        }
    }

    pub fn text(kind: BlockKind, text: &str) -> Self {
        let mut b = ContentBlock::new(kind);
        b.text = text.into();
        b
    }

    pub fn str_field(&self, f: Field) -> &str {
        match f {
            Field::Text => &self.text,
            Field::Signature => &self.signature,
            Field::CallId => &self.call_id,
            Field::Name => &self.name,
            Field::Arguments => &self.arguments,
            Field::ServerLabel => &self.server_label,
            Field::Url => &self.url,
            Field::Data => &self.data,
            Field::MimeType => &self.mime_type,
            Field::Detail => &self.detail,
            Field::Filename => &self.filename,
            Field::FileId => &self.file_id,
            Field::IsError => "",
        }
    }

    /// The str field `f`; None for `is_error`, the one bool.
    pub fn str_field_mut(&mut self, f: Field) -> Option<&mut String> {
        Some(match f {
            Field::Text => &mut self.text,
            Field::Signature => &mut self.signature,
            Field::CallId => &mut self.call_id,
            Field::Name => &mut self.name,
            Field::Arguments => &mut self.arguments,
            Field::ServerLabel => &mut self.server_label,
            Field::Url => &mut self.url,
            Field::Data => &mut self.data,
            Field::MimeType => &mut self.mime_type,
            Field::Detail => &mut self.detail,
            Field::Filename => &mut self.filename,
            Field::FileId => &mut self.file_id,
            Field::IsError => return None,
        })
    }

    /// The first field set that `kind` does not use, if any.
    pub fn stray_field(&self) -> Option<Field> {
        let used = self.kind.fields();
        Field::ALL.into_iter().find(|f| {
            !used.contains(f)
                && match f {
                    Field::IsError => self.is_error,
                    _ => !self.str_field(*f).is_empty(),
                }
        })
    }
}

/// A message made of content blocks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AgenticMessage {
    /// "system", "user" or "assistant" (tool results travel in a user message, as in Eino).
    pub role: String,
    /// The author's name (not in Eino; kept so a Message converts without loss).
    pub name: String,
    pub blocks: Vec<ContentBlock>,
    pub response_meta: Option<ResponseMeta>,
    pub extra: Option<Map>,
}

// ---------------------------------------------------------------------------------------
// concatenation

fn conflict(field: String, message: String) -> ConcatError {
    ConcatError { field, message }
}

/// Concatenates `chunks` into a new message. No chunks give an empty message.
pub fn concat<'a>(
    chunks: impl IntoIterator<Item = &'a AgenticMessage>,
    usage: UsagePolicy,
) -> Result<AgenticMessage, ConcatError> {
    let mut acc = AgenticAccumulator::new(usage);
    for chunk in chunks {
        acc.push(chunk)?;
    }
    Ok(acc.finish())
}

/// Incremental concatenation of agentic message chunks.
#[derive(Clone, Debug, Default)]
pub struct AgenticAccumulator {
    usage_policy: UsagePolicy,
    pushed: usize,
    msg: AgenticMessage,
    /// Some(true) once an indexed block was seen, Some(false) once a block without index.
    streaming: Option<bool>,
    /// Indexed blocks in arrival order (sorted by index in `finish`).
    indexed: Vec<ContentBlock>,
    positions: HashMap<i64, usize>,
}

impl AgenticAccumulator {
    pub fn new(usage_policy: UsagePolicy) -> Self {
        AgenticAccumulator {
            usage_policy,
            ..Default::default()
        }
    }

    pub fn len(&self) -> usize {
        self.pushed
    }

    pub fn is_empty(&self) -> bool {
        self.pushed == 0
    }

    pub fn snapshot(&self) -> AgenticMessage {
        self.clone().finish()
    }

    /// The concatenated message. Its merged blocks no longer carry a stream index (as in
    /// Eino): the message is whole, not a chunk, and can be concatenated with others again.
    pub fn finish(mut self) -> AgenticMessage {
        self.indexed.sort_by_key(|b| b.index);
        for b in &mut self.indexed {
            b.index = None;
        }
        self.msg.blocks.append(&mut self.indexed);
        self.msg
    }

    /// Adds one chunk. It is checked completely first: on error nothing is applied.
    pub fn push(&mut self, c: &AgenticMessage) -> Result<(), ConcatError> {
        let i = self.pushed;
        for (field, a, b) in [
            ("role", &self.msg.role, &c.role),
            ("name", &self.msg.name, &c.name),
        ] {
            if !a.is_empty() && !b.is_empty() && a != b {
                return Err(conflict(
                    field.into(),
                    format!(
                        "cannot concat agentic messages with different {field}s: '{a}' and '{b}' (chunk {i})"
                    ),
                ));
            }
        }
        let streaming = self.check_streaming(c, i)?;
        let block_extras = self.check_blocks(c, i)?;
        let extra = match (&self.msg.extra, &c.extra) {
            (_, None) => None,
            (None, Some(new)) => Some(new.clone()),
            (Some(old), Some(new)) => {
                let mut merged = old.clone();
                merge_maps(&mut merged, new, "")?;
                Some(merged)
            }
        };
        // Everything checked: apply.
        self.streaming = streaming;
        let m = &mut self.msg;
        if m.role.is_empty() {
            m.role.clone_from(&c.role);
        }
        if m.name.is_empty() {
            m.name.clone_from(&c.name);
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
        for b in &c.blocks {
            match b.index {
                None => self.msg.blocks.push(b.clone()),
                Some(index) => self.merge_indexed(index, b),
            }
        }
        for (index, extra) in block_extras {
            let p = self.positions[&index];
            self.indexed[p].extra = Some(extra);
        }
        self.pushed += 1;
        Ok(())
    }

    fn check_streaming(&self, c: &AgenticMessage, i: usize) -> Result<Option<bool>, ConcatError> {
        let mut state = self.streaming;
        for b in &c.blocks {
            let indexed = b.index.is_some();
            match state {
                Some(s) if s != indexed => {
                    return Err(conflict(
                        "blocks.index".into(),
                        format!(
                            "cannot concat a {} block {} index after blocks {} one (chunk {i}): \
                             in one stream every block carries its stream index, or none does",
                            b.kind.name(),
                            if indexed { "with an" } else { "without an" },
                            if indexed { "without" } else { "with" },
                        ),
                    ))
                }
                _ => state = Some(indexed),
            }
        }
        Ok(state)
    }

    /// Checks the chunk's indexed blocks against what each index holds so far, and returns
    /// the merged `extra` of each index whose chunk carries one (merging can fail, so it is
    /// done here, before anything is applied).
    fn check_blocks(&self, c: &AgenticMessage, i: usize) -> Result<Vec<(i64, Map)>, ConcatError> {
        // The identity merged so far per index, including earlier deltas of this chunk.
        let mut seen: HashMap<i64, ContentBlock> = HashMap::new();
        let mut extras: Vec<(i64, Map)> = Vec::new();
        for b in &c.blocks {
            let Some(index) = b.index else { continue };
            let base = match seen.get(&index) {
                Some(s) => Some(s.clone()),
                None => self
                    .positions
                    .get(&index)
                    .map(|&p| identity_of(&self.indexed[p])),
            };
            let Some(mut base) = base else {
                seen.insert(index, identity_of(b));
                if let Some(e) = &b.extra {
                    extras.push((index, e.clone()));
                }
                continue;
            };
            if base.kind != b.kind {
                return Err(conflict(
                    format!("blocks[index={index}].kind"),
                    format!(
                        "cannot concat content blocks at stream index {index}: a '{}' block and a '{}' block (chunk {i}); \
                         each stream index must hold one block kind",
                        base.kind.name(),
                        b.kind.name()
                    ),
                ));
            }
            for &f in b.kind.fields() {
                if f.merge() != Merge::Same {
                    continue;
                }
                let (a, new) = (base.str_field(f), b.str_field(f));
                if !a.is_empty() && !new.is_empty() && a != new {
                    return Err(conflict(
                        format!("blocks[index={index}].{}", f.name()),
                        format!(
                            "cannot concat '{}' blocks at stream index {index} with different {}: '{a}' and '{new}' (chunk {i})",
                            b.kind.name(),
                            f.name()
                        ),
                    ));
                }
                if a.is_empty() {
                    if let Some(s) = base.str_field_mut(f) {
                        new.clone_into(s);
                    }
                }
            }
            if let Some(e) = &b.extra {
                let prior = extras
                    .iter()
                    .rposition(|(x, _)| *x == index)
                    .map(|p| extras[p].1.clone())
                    .or_else(|| {
                        self.positions
                            .get(&index)
                            .and_then(|&p| self.indexed[p].extra.clone())
                    });
                let merged = match prior {
                    None => e.clone(),
                    Some(mut old) => {
                        merge_maps(&mut old, e, &format!("blocks[index={index}]"))?;
                        old
                    }
                };
                extras.push((index, merged));
            }
            seen.insert(index, base);
        }
        Ok(extras)
    }

    fn merge_indexed(&mut self, index: i64, b: &ContentBlock) {
        let Some(&p) = self.positions.get(&index) else {
            self.positions.insert(index, self.indexed.len());
            self.indexed.push(b.clone());
            return;
        };
        let base = &mut self.indexed[p];
        for &f in b.kind.fields() {
            match f.merge() {
                Merge::Or => base.is_error |= b.is_error,
                merge => {
                    let new = b.str_field(f);
                    if new.is_empty() {
                        continue;
                    }
                    let Some(acc) = base.str_field_mut(f) else {
                        continue;
                    };
                    match merge {
                        Merge::Append => acc.push_str(new),
                        Merge::LastNonEmpty => new.clone_into(acc),
                        _ if acc.is_empty() => new.clone_into(acc),
                        _ => {}
                    }
                }
            }
        }
    }
}

/// The block's kind and identity fields (what conflicts are checked against), without its
/// growing text.
fn identity_of(b: &ContentBlock) -> ContentBlock {
    let mut id = ContentBlock::new(b.kind);
    for &f in b.kind.fields() {
        if f.merge() == Merge::Same {
            if let Some(s) = id.str_field_mut(f) {
                b.str_field(f).clone_into(s);
            }
        }
    }
    id
}

// ---------------------------------------------------------------------------------------
// conversion to and from Message

/// Why a message cannot be converted without loss. `block` is the position of the block at
/// fault, when one is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConversionError {
    pub block: Option<usize>,
    pub message: String,
}

impl std::fmt::Display for ConversionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

fn not_representable(block: Option<usize>, message: String) -> ConversionError {
    ConversionError { block, message }
}

impl AgenticMessage {
    /// The blocks of `m`, without loss. Errors only for what a block list cannot hold: a tool
    /// message with multi-part content, or a tool call whose type is not "function".
    pub fn from_message(m: &Message) -> Result<AgenticMessage, ConversionError> {
        let mut blocks = Vec::new();
        let role = if m.role == "tool" {
            if !m.user_input_multi_content.is_empty() {
                return Err(not_representable(
                    None,
                    "a tool message with multi-part content cannot become an AgenticMessage: \
                     a tool_result block holds text only; put the parts in a user message"
                        .into(),
                ));
            }
            let mut b = ContentBlock::text(BlockKind::ToolResult, &m.content);
            b.call_id.clone_from(&m.tool_call_id);
            b.name.clone_from(&m.tool_name);
            blocks.push(b);
            "user".to_owned()
        } else {
            if !m.reasoning_content.is_empty() {
                blocks.push(ContentBlock::text(
                    BlockKind::Reasoning,
                    &m.reasoning_content,
                ));
            }
            if !m.content.is_empty() {
                blocks.push(ContentBlock::text(BlockKind::Text, &m.content));
            }
            for p in &m.user_input_multi_content {
                blocks.push(block_of_part(p));
            }
            if !m.refusal.is_empty() {
                blocks.push(ContentBlock::text(BlockKind::Refusal, &m.refusal));
            }
            for tc in &m.tool_calls {
                if !tc.kind.is_empty() && tc.kind != ToolCall::FUNCTION {
                    return Err(not_representable(
                        None,
                        format!(
                            "a tool call of type {:?} cannot become a tool_call block (only \"function\" calls can)",
                            tc.kind
                        ),
                    ));
                }
                let mut b = ContentBlock::new(BlockKind::ToolCall);
                b.index = tc.index;
                b.call_id.clone_from(&tc.id);
                b.name.clone_from(&tc.function.name);
                b.arguments.clone_from(&tc.function.arguments);
                b.extra.clone_from(&tc.extra);
                blocks.push(b);
            }
            m.role.clone()
        };
        Ok(AgenticMessage {
            role,
            name: m.name.clone(),
            blocks,
            response_meta: m.response_meta.clone(),
            extra: m.extra.clone(),
        })
    }

    /// The Message holding the same information, or why there is none. Inverse of
    /// [`AgenticMessage::from_message`] on every message that one returns (for a Message with
    /// both `content` and parts, the text comes back as the first part).
    pub fn to_message(&self) -> Result<Message, ConversionError> {
        let mut m = Message {
            role: self.role.clone(),
            name: self.name.clone(),
            response_meta: self.response_meta.clone(),
            extra: self.extra.clone(),
            ..Default::default()
        };
        if let Some(first) = self
            .blocks
            .iter()
            .position(|b| matches!(b.kind, BlockKind::ToolResult))
        {
            if self.blocks.len() != 1 {
                return Err(not_representable(
                    Some(first),
                    format!(
                        "this message holds a tool_result block among {} blocks; a Message holds one tool result: \
                         use to_messages() for one Message per block",
                        self.blocks.len()
                    ),
                ));
            }
            let b = &self.blocks[0];
            if b.is_error || b.extra.is_some() || b.index.is_some() {
                return Err(not_representable(
                    Some(0),
                    "a tool_result block with is_error, extra or a stream index cannot become a Message \
                     (a tool message has no place for them); clear them first"
                        .into(),
                ));
            }
            m.role = "tool".into();
            m.content.clone_from(&b.text);
            m.tool_call_id.clone_from(&b.call_id);
            m.tool_name.clone_from(&b.name);
            return Ok(m);
        }
        // The order a Message implies: reasoning, text (or parts), refusal, tool calls.
        let mut stage = -1;
        let has_media = self
            .blocks
            .iter()
            .any(|b| matches!(b.kind, BlockKind::Image | BlockKind::File));
        let texts = self
            .blocks
            .iter()
            .filter(|b| b.kind == BlockKind::Text)
            .count();
        let as_parts = has_media || texts > 1;
        for (i, b) in self.blocks.iter().enumerate() {
            let order: i32 = match b.kind {
                BlockKind::Reasoning => 0,
                BlockKind::Text | BlockKind::Image | BlockKind::File => 1,
                BlockKind::Refusal => 2,
                BlockKind::ToolCall => 3,
                other => {
                    return Err(not_representable(
                        Some(i),
                        format!(
                            "block {i} is a '{}' block, which a Message cannot represent; \
                             keep the AgenticMessage (or drop the block before converting)",
                            other.name()
                        ),
                    ))
                }
            };
            if order < stage || (order == stage && order != 1 && order != 3) {
                return Err(not_representable(
                    Some(i),
                    format!(
                        "block {i} ('{}') is out of the order a Message keeps (one reasoning, the text, \
                         one refusal, then tool calls); keep the AgenticMessage",
                        b.kind.name()
                    ),
                ));
            }
            stage = order;
            if b.kind != BlockKind::ToolCall && (b.extra.is_some() || b.index.is_some()) {
                return Err(not_representable(
                    Some(i),
                    format!(
                        "block {i} ('{}') has extra or a stream index, which a Message keeps only on tool calls",
                        b.kind.name()
                    ),
                ));
            }
            match b.kind {
                BlockKind::Reasoning => {
                    if !b.signature.is_empty() {
                        return Err(not_representable(
                            Some(i),
                            format!(
                                "block {i} is a reasoning block with a signature, which a Message drops \
                                 (the provider needs it back verbatim); keep the AgenticMessage"
                            ),
                        ));
                    }
                    m.reasoning_content.clone_from(&b.text);
                }
                BlockKind::Text if !as_parts => m.content.clone_from(&b.text),
                BlockKind::Text | BlockKind::Image | BlockKind::File => {
                    m.user_input_multi_content.push(part_of_block(b, i)?)
                }
                BlockKind::Refusal => m.refusal.clone_from(&b.text),
                _ => m.tool_calls.push(ToolCall {
                    index: b.index,
                    id: b.call_id.clone(),
                    kind: ToolCall::FUNCTION.into(),
                    function: FunctionCall {
                        name: b.name.clone(),
                        arguments: b.arguments.clone(),
                    },
                    extra: b.extra.clone(),
                }),
            }
        }
        Ok(m)
    }

    /// One Message per tool_result block (a tool message each), or the one Message of
    /// [`AgenticMessage::to_message`] when there are no tool results.
    pub fn to_messages(&self) -> Result<Vec<Message>, ConversionError> {
        if !self.blocks.iter().any(|b| b.kind == BlockKind::ToolResult) {
            return Ok(vec![self.to_message()?]);
        }
        self.blocks
            .iter()
            .enumerate()
            .map(|(i, b)| {
                if b.kind != BlockKind::ToolResult {
                    return Err(not_representable(
                        Some(i),
                        format!(
                            "block {i} is a '{}' block beside tool results; Messages keep tool results apart",
                            b.kind.name()
                        ),
                    ));
                }
                let single = AgenticMessage {
                    role: self.role.clone(),
                    name: self.name.clone(),
                    blocks: vec![b.clone()],
                    response_meta: None,
                    extra: None,
                };
                single.to_message().map_err(|mut e| {
                    e.block = Some(i);
                    e
                })
            })
            .collect()
    }
}

fn block_of_part(p: &Part) -> ContentBlock {
    match p {
        Part::Text(t) => ContentBlock::text(BlockKind::Text, t),
        Part::ImageUrl { url, detail } => {
            let mut b = ContentBlock::new(BlockKind::Image);
            b.url.clone_from(url);
            b.detail.clone_from(detail);
            b
        }
        Part::File {
            filename,
            file_data,
            file_id,
        } => {
            let mut b = ContentBlock::new(BlockKind::File);
            b.filename.clone_from(filename);
            b.url.clone_from(file_data);
            b.file_id.clone_from(file_id);
            b
        }
    }
}

fn part_of_block(b: &ContentBlock, i: usize) -> Result<Part, ConversionError> {
    if !b.data.is_empty() || !b.mime_type.is_empty() {
        return Err(not_representable(
            Some(i),
            format!(
                "block {i} ('{}') carries base64 data or a MIME type; a Message part takes a URL: \
                 put the data in a data: URL (data:<mime>;base64,...) first",
                b.kind.name()
            ),
        ));
    }
    Ok(match b.kind {
        BlockKind::Text => Part::Text(b.text.clone()),
        BlockKind::Image => Part::ImageUrl {
            url: b.url.clone(),
            detail: b.detail.clone(),
        },
        _ => Part::File {
            filename: b.filename.clone(),
            file_data: b.url.clone(),
            file_id: b.file_id.clone(),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Usage, Value};

    fn block(kind: BlockKind, index: Option<i64>) -> ContentBlock {
        let mut b = ContentBlock::new(kind);
        b.index = index;
        b
    }

    fn chunk(blocks: Vec<ContentBlock>) -> AgenticMessage {
        AgenticMessage {
            blocks,
            ..Default::default()
        }
    }

    fn text(index: i64, t: &str) -> ContentBlock {
        let mut b = block(BlockKind::Text, Some(index));
        b.text = t.into();
        b
    }

    fn call(index: i64, id: &str, name: &str, args: &str) -> ContentBlock {
        let mut b = block(BlockKind::ToolCall, Some(index));
        b.call_id = id.into();
        b.name = name.into();
        b.arguments = args.into();
        b
    }

    fn concat_all(chunks: &[AgenticMessage]) -> Result<AgenticMessage, ConcatError> {
        concat(chunks, UsagePolicy::Max)
    }

    #[test]
    fn text_and_tool_call_arguments_append_per_index_in_index_order() {
        let mut first = chunk(vec![call(1, "c1", "get", "{\"a\"")]);
        first.role = "assistant".into();
        let out = concat_all(&[
            first,
            chunk(vec![text(0, "Hel")]),
            chunk(vec![call(1, "", "", ":1}"), text(0, "lo")]),
        ])
        .unwrap();
        assert_eq!(out.role, "assistant");
        assert_eq!(out.blocks.len(), 2);
        assert_eq!(out.blocks[0].text, "Hello");
        assert_eq!(out.blocks[1].call_id, "c1");
        assert_eq!(out.blocks[1].arguments, "{\"a\":1}");
    }

    #[test]
    fn reasoning_text_appends_and_the_signature_is_the_last_non_empty() {
        let r = |t: &str, s: &str| {
            let mut b = block(BlockKind::Reasoning, Some(0));
            b.text = t.into();
            b.signature = s.into();
            chunk(vec![b])
        };
        let out =
            concat_all(&[r("think", ""), r("ing", "sig-a"), r("", "sig-b"), r("", "")]).unwrap();
        assert_eq!(out.blocks[0].text, "thinking");
        assert_eq!(out.blocks[0].signature, "sig-b");
    }

    #[test]
    fn tool_result_content_appends_and_is_never_overwritten() {
        let r = |t: &str, err: bool| {
            let mut b = block(BlockKind::McpToolResult, Some(3));
            b.text = t.into();
            b.is_error = err;
            b.call_id = "m1".into();
            chunk(vec![b])
        };
        let out = concat_all(&[r("part one, ", false), r("part two", true), r("", false)]).unwrap();
        assert_eq!(out.blocks[0].text, "part one, part two");
        assert!(out.blocks[0].is_error);
    }

    #[test]
    fn different_kinds_at_one_index_are_an_error_naming_both() {
        let err = concat_all(&[
            chunk(vec![text(2, "a")]),
            chunk(vec![call(2, "c", "f", "")]),
        ])
        .unwrap_err();
        assert_eq!(err.field, "blocks[index=2].kind");
        assert!(err.message.contains("index 2"), "{}", err.message);
        assert!(err.message.contains("'text'") && err.message.contains("'tool_call'"));
    }

    #[test]
    fn conflicting_ids_are_an_error_and_the_chunk_is_not_applied() {
        let mut acc = AgenticAccumulator::new(UsagePolicy::Max);
        acc.push(&chunk(vec![call(0, "c1", "f", "{")])).unwrap();
        let bad = chunk(vec![call(0, "", "", "x"), call(0, "c2", "", "")]);
        let err = acc.push(&bad).unwrap_err();
        assert_eq!(err.field, "blocks[index=0].call_id");
        acc.push(&chunk(vec![call(0, "", "", "}")])).unwrap();
        assert_eq!(acc.finish().blocks[0].arguments, "{}");
    }

    #[test]
    fn mixing_indexed_and_plain_blocks_is_an_error() {
        let plain = chunk(vec![block(BlockKind::Text, None)]);
        let err = concat_all(&[plain, chunk(vec![text(0, "x")])]).unwrap_err();
        assert_eq!(err.field, "blocks.index");
    }

    #[test]
    fn plain_blocks_are_kept_in_order_and_roles_must_agree() {
        let mut a = chunk(vec![ContentBlock::text(BlockKind::Text, "a")]);
        a.role = "user".into();
        let b = chunk(vec![ContentBlock::text(BlockKind::Text, "b")]);
        let out = concat_all(&[a.clone(), b]).unwrap();
        assert_eq!(out.blocks.len(), 2);
        let mut other = a.clone();
        other.role = "assistant".into();
        assert_eq!(concat_all(&[a, other]).unwrap_err().field, "role");
    }

    #[test]
    fn usage_and_extras_merge_like_messages() {
        let mut a = chunk(vec![]);
        a.response_meta = Some(ResponseMeta {
            finish_reason: String::new(),
            usage: Some(Usage {
                prompt_tokens: 5,
                ..Default::default()
            }),
        });
        a.extra = Some(vec![("k".into(), Value::Str("x".into()))]);
        let mut b = chunk(vec![]);
        b.response_meta = Some(ResponseMeta {
            finish_reason: "stop".into(),
            usage: None,
        });
        b.extra = Some(vec![("k".into(), Value::Str("y".into()))]);
        let out = concat_all(&[a, b]).unwrap();
        let meta = out.response_meta.unwrap();
        assert_eq!(meta.finish_reason, "stop");
        assert_eq!(meta.usage.unwrap().prompt_tokens, 5);
        assert_eq!(out.extra.unwrap()[0].1, Value::Str("xy".into()));
    }

    #[test]
    fn block_extras_merge_per_index() {
        let mut a = text(0, "a");
        a.extra = Some(vec![("n".into(), Value::Str("1".into()))]);
        let mut b = text(0, "b");
        b.extra = Some(vec![("n".into(), Value::Str("2".into()))]);
        let out = concat_all(&[chunk(vec![a]), chunk(vec![b])]).unwrap();
        assert_eq!(
            out.blocks[0].extra.as_ref().unwrap()[0].1,
            Value::Str("12".into())
        );
    }

    #[test]
    fn messages_convert_both_ways_without_loss() {
        let mut m = Message::new("assistant", "answer");
        m.reasoning_content = "why".into();
        m.tool_calls.push(ToolCall {
            index: Some(0),
            id: "c1".into(),
            kind: "function".into(),
            function: FunctionCall {
                name: "f".into(),
                arguments: "{}".into(),
            },
            extra: None,
        });
        let am = AgenticMessage::from_message(&m).unwrap();
        assert_eq!(am.blocks.len(), 3);
        assert_eq!(am.to_message().unwrap(), m);
        let mut tool = Message::new("tool", "42");
        tool.tool_call_id = "c1".into();
        tool.tool_name = "f".into();
        let am = AgenticMessage::from_message(&tool).unwrap();
        assert_eq!(am.role, "user");
        assert_eq!(am.blocks[0].kind, BlockKind::ToolResult);
        assert_eq!(am.to_message().unwrap(), tool);
    }

    #[test]
    fn blocks_a_message_cannot_hold_are_named_in_the_error() {
        let mut am = AgenticMessage {
            role: "assistant".into(),
            ..Default::default()
        };
        am.blocks.push(ContentBlock::text(BlockKind::Text, "a"));
        am.blocks.push(ContentBlock::new(BlockKind::ServerToolCall));
        let err = am.to_message().unwrap_err();
        assert_eq!(err.block, Some(1));
        assert!(err.message.contains("server_tool_call"));
        let mut r = ContentBlock::text(BlockKind::Reasoning, "t");
        r.signature = "s".into();
        am.blocks = vec![r];
        assert!(am.to_message().unwrap_err().message.contains("signature"));
    }

    #[test]
    fn kinds_and_fields_round_trip_their_names_and_tags() {
        for k in BlockKind::ALL {
            assert_eq!(BlockKind::parse(k.name()), Some(k));
            assert_eq!(BlockKind::from_tag(k.tag()), Some(k));
        }
        for f in Field::ALL {
            assert_eq!(Field::parse(f.name()), Some(f));
        }
        let mut b = ContentBlock::new(BlockKind::Text);
        b.call_id = "x".into();
        assert_eq!(b.stray_field(), Some(Field::CallId));
    }
}
