//! rillet's own message types (`Message`, `ToolCall`, `FunctionCall`, `ContentPart`, `Usage`,
//! `ResponseMeta`) written straight from their Rust fields, without building the Python
//! state a `to_state` hook would return.
//!
//! The bytes are exactly those of the hook path, format-2 tables included. That path built
//! each state with fresh Python objects: its dict keys are interned strs (`intern!`, the same
//! objects as every interned "role" in the process), except the optional text fields'
//! keys (`name`, `tool_call_id`...) and `extra`'s keys, which were new strs each time, and
//! every value str was new. So here an interned key is noted by its real address, and
//! everything that was new is noted with `note_fresh`, which uses up table capacity the same
//! way but can never be shared. `tests/data/test_codec_native_messages.py` compares both paths byte for
//! byte.
//!
//! A value the fast path cannot write on its own (an `extra` value that is a Python object,
//! such as a list; `extra` maps nested very deep; nesting past `max_depth`; a nested `Usage`
//! whose registration was replaced) takes the hook path instead: its state is built in
//! Python exactly as before and walked by the generic encoder, errors and all.

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};

use super::{fail, Encoder, Frame, Result, MAX_SHAPE_KEYS, MIN_SHARED_STR};
use crate::codec::ext;
use crate::codec::repeats::Use;
use crate::message::{self as core, Map, Part, Value};
use crate::py::agentic::{agentic_to_dict, block_to_dict, AgenticMessage, ContentBlock};
use crate::py::message::{
    message_to_dict, part_to_dict, tool_call_to_dict, ContentPart, FunctionCall, Message,
    ResponseMeta, ToolCall, Usage,
};

/// `extra` maps nested deeper than this take the hook path, so writing them natively
/// (which recurses) stays within a small, fixed stack.
const MAX_NATIVE_NESTING: usize = 32;

/// A dict key as the hook path made it.
#[derive(Clone, Copy)]
enum Key<'a> {
    /// A str that is the same object every time: interned (as Python's own interned strs
    /// are), or one CPython caches (the empty str and some one-character strs).
    Interned(*mut ffi::PyObject, &'a str),
    /// A str created for this one write.
    Fresh(&'a str),
}

impl Key<'_> {
    fn text(&self) -> &str {
        match self {
            Key::Interned(_, t) => t,
            Key::Fresh(t) => t,
        }
    }
}

/// The interned keys of the states, looked up once per encode.
#[derive(Clone, Copy)]
pub(super) struct Keys {
    role: *mut ffi::PyObject,
    content: *mut ffi::PyObject,
    content_text: *mut ffi::PyObject,
    tool_calls: *mut ffi::PyObject,
    response_meta: *mut ffi::PyObject,
    extra: *mut ffi::PyObject,
    index: *mut ffi::PyObject,
    id: *mut ffi::PyObject,
    kind: *mut ffi::PyObject,
    function: *mut ffi::PyObject,
    name: *mut ffi::PyObject,
    arguments: *mut ffi::PyObject,
    finish_reason: *mut ffi::PyObject,
    usage: *mut ffi::PyObject,
    prompt_tokens: *mut ffi::PyObject,
    completion_tokens: *mut ffi::PyObject,
    total_tokens: *mut ffi::PyObject,
    prompt_details: *mut ffi::PyObject,
    completion_details: *mut ffi::PyObject,
    cached_tokens: *mut ffi::PyObject,
    reasoning_tokens: *mut ffi::PyObject,
    text: *mut ffi::PyObject,
    image_url: *mut ffi::PyObject,
    url: *mut ffi::PyObject,
    detail: *mut ffi::PyObject,
    file: *mut ffi::PyObject,
    filename: *mut ffi::PyObject,
    file_data: *mut ffi::PyObject,
    file_id: *mut ffi::PyObject,
}

impl Keys {
    fn new(py: Python<'_>) -> Self {
        // `intern!` keeps each str alive for the life of the process, so the pointers stay
        // valid (and are the objects the hook path used).
        macro_rules! k {
            ($s:literal) => {
                pyo3::intern!(py, $s).as_ptr()
            };
        }
        Keys {
            role: k!("role"),
            content: k!("content"),
            content_text: k!("content_text"),
            tool_calls: k!("tool_calls"),
            response_meta: k!("response_meta"),
            extra: k!("extra"),
            index: k!("index"),
            id: k!("id"),
            kind: k!("type"),
            function: k!("function"),
            name: k!("name"),
            arguments: k!("arguments"),
            finish_reason: k!("finish_reason"),
            usage: k!("usage"),
            prompt_tokens: k!("prompt_tokens"),
            completion_tokens: k!("completion_tokens"),
            total_tokens: k!("total_tokens"),
            prompt_details: k!("prompt_tokens_details"),
            completion_details: k!("completion_tokens_details"),
            cached_tokens: k!("cached_tokens"),
            reasoning_tokens: k!("reasoning_tokens"),
            text: k!("text"),
            image_url: k!("image_url"),
            url: k!("url"),
            detail: k!("detail"),
            file: k!("file"),
            filename: k!("filename"),
            file_data: k!("file_data"),
            file_id: k!("file_id"),
        }
    }
}

/// Levels of `extra` nesting (1 for a flat map), or None when it holds a Python object or
/// nests deeper than the fast path writes.
fn map_depth(map: &Map, budget: usize) -> Option<usize> {
    if budget == 0 {
        return None;
    }
    let mut depth = 1;
    for (_, v) in map {
        match v {
            Value::Map(inner) => depth = depth.max(1 + map_depth(inner, budget - 1)?),
            Value::Opaque(_) => return None,
            _ => {}
        }
    }
    Some(depth)
}

fn extra_depth(extra: &Option<Map>) -> Option<usize> {
    extra
        .as_ref()
        .map_or(Some(0), |m| map_depth(m, MAX_NATIVE_NESTING))
}

/// Containers a tool call's state opens below the registered object: its dict, then its
/// function dict or its `extra`.
fn tool_call_depth(t: &core::ToolCall) -> Option<usize> {
    Some(1 + extra_depth(&t.extra)?.max(1))
}

fn part_depth(p: &Part) -> usize {
    match p {
        Part::Text(_) => 1,
        Part::ImageUrl { .. } | Part::File { .. } => 2,
    }
}

/// Containers a message's state opens below the registered object, or None when the fast
/// path cannot write it.
fn message_depth(m: &core::Message) -> Option<usize> {
    let mut inner = extra_depth(&m.extra)?;
    if let Some(deepest) = m.user_input_multi_content.iter().map(part_depth).max() {
        inner = inner.max(1 + deepest);
    }
    for t in &m.tool_calls {
        inner = inner.max(1 + tool_call_depth(t)?);
    }
    if let Some(meta) = &m.response_meta {
        inner = inner.max(if meta.usage.is_some() { 3 } else { 1 });
    }
    Some(1 + inner)
}

/// Which of rillet's classes `o` is exactly (none of them can be subclassed).
enum Native<'a, 'py> {
    Message(&'a Bound<'py, Message>),
    ToolCall(&'a core::ToolCall),
    FunctionCall(&'a core::FunctionCall),
    ContentPart(&'a Part),
    Usage(&'a core::Usage),
    ResponseMeta(&'a core::ResponseMeta),
    /// Written from its dict state, made in Rust (`to_dict`): no Python hook runs.
    AgenticMessage(&'a Bound<'py, AgenticMessage>),
    ContentBlock(&'a crate::agentic::ContentBlock),
}

impl<'a, 'py> Native<'a, 'py> {
    fn of(o: &'a Bound<'py, PyAny>) -> Option<Self> {
        Some(if let Ok(m) = o.cast_exact::<Message>() {
            Native::Message(m)
        } else if let Ok(t) = o.cast_exact::<ToolCall>() {
            Native::ToolCall(&t.get().0)
        } else if let Ok(f) = o.cast_exact::<FunctionCall>() {
            Native::FunctionCall(&f.get().0)
        } else if let Ok(p) = o.cast_exact::<ContentPart>() {
            Native::ContentPart(&p.get().0)
        } else if let Ok(u) = o.cast_exact::<Usage>() {
            Native::Usage(&u.get().0)
        } else if let Ok(r) = o.cast_exact::<ResponseMeta>() {
            Native::ResponseMeta(&r.get().0)
        } else if let Ok(m) = o.cast_exact::<AgenticMessage>() {
            Native::AgenticMessage(m)
        } else if let Ok(b) = o.cast_exact::<ContentBlock>() {
            Native::ContentBlock(&b.get().0)
        } else {
            return None;
        })
    }
}

impl<'py> Encoder<'_, 'py> {
    /// A registered object whose registry entry has no `to_state`: one of rillet's classes,
    /// written from its fields as `[name, version, state]`.
    pub(super) fn native_object(
        &mut self,
        o: &Bound<'py, PyAny>,
        name: &Bound<'py, PyString>,
        version: u32,
    ) -> Result {
        let Some(native) = Native::of(o) else {
            return Err(fail(format!(
                "corrupt codec registry entry: {} has no to_state",
                super::type_name(o)
            )));
        };
        let name = name.to_str().unwrap_or_default();
        if self.keys.is_none() {
            self.keys = Some(Keys::new(self.py));
        }
        // Room for the object and the containers its state opens, as the hook path counts.
        let room = self.max_depth.saturating_sub(self.open.len());
        let fits = |levels: Option<usize>| levels.is_some_and(|l| l < room);
        let written = match native {
            Native::Message(m) => {
                // Checked and written under one lock, so the fields cannot change between;
                // nothing in here runs Python code or drops a Python object.
                m.get().with(|msg| -> Result<Option<usize>> {
                    if !fits(message_depth(msg)) {
                        return Ok(None);
                    }
                    let mark = self.object_head(name, version)?;
                    self.message(msg)?;
                    Ok(Some(mark))
                })?
            }
            Native::ToolCall(t) if fits(tool_call_depth(t)) => {
                let mark = self.object_head(name, version)?;
                self.tool_call(t)?;
                Some(mark)
            }
            Native::ContentPart(p) if fits(Some(part_depth(p))) => {
                let mark = self.object_head(name, version)?;
                self.part(p)?;
                Some(mark)
            }
            Native::FunctionCall(f) if fits(Some(1)) => {
                let mark = self.object_head(name, version)?;
                self.w.array(2)?;
                self.fresh_str(&f.name)?;
                self.fresh_str(&f.arguments)?;
                Some(mark)
            }
            Native::Usage(u) if fits(Some(1)) => {
                let mark = self.object_head(name, version)?;
                self.usage_list(u)?;
                Some(mark)
            }
            Native::ResponseMeta(r) => self.response_meta(r, name, version, room)?,
            _ => None,
        };
        if let Some(mark) = written {
            return self.end_object(mark);
        }
        self.hook_object(o, name, version)
    }

    /// `[finish_reason, usage]`, `usage` a nested `Usage` object; None when the nested
    /// `Usage` has no native entry (its registration was replaced) or nesting is too deep.
    fn response_meta(
        &mut self,
        r: &core::ResponseMeta,
        name: &str,
        version: u32,
        room: usize,
    ) -> Result<Option<usize>> {
        let usage = match r.usage {
            Some(u) => match self.native_entry::<Usage>() {
                Some(entry) => Some((u, entry)),
                None => return Ok(None),
            },
            None => None,
        };
        if 1 + if usage.is_some() { 3 } else { 1 } > room {
            return Ok(None);
        }
        let mark = self.object_head(name, version)?;
        self.w.array(2)?;
        self.fresh_str(&r.finish_reason)?;
        match usage {
            Some((u, (usage_name, usage_version))) => {
                let inner = self.object_head(&usage_name, usage_version)?;
                self.usage_list(&u)?;
                self.end_object(inner)?;
            }
            None => self.w.nil(),
        }
        Ok(Some(mark))
    }

    /// The registered name and version of `T` when its entry is the native one (no
    /// `to_state`), else None.
    fn native_entry<T: pyo3::PyTypeInfo>(&self) -> Option<(String, u32)> {
        let entry = self.types.get_item(self.py.get_type::<T>()).ok()??;
        let (name, version, to_state, _): (String, u32, Bound<'py, PyAny>, bool) =
            entry.extract().ok()?;
        to_state.is_none().then_some((name, version))
    }

    /// The hook path: the state the registered `to_state` hooks of earlier versions
    /// returned, built in Python and walked by the generic encoder.
    fn hook_object(&mut self, o: &Bound<'py, PyAny>, name: &str, version: u32) -> Result {
        self.enter(o)?;
        let state = hook_state(o).map_err(|e| {
            let ty = super::type_name(o);
            super::fail_with(
                format!("cannot take the state of the {ty} at {{path}}: {e}"),
                e,
            )
        })?;
        let mark = self.w.ext_begin();
        self.w.array(3)?;
        self.w.str(name.as_bytes())?;
        self.w.uint(version as u64);
        self.frames.push(Frame::Object {
            _obj: o.clone(),
            state: Some(state),
            fields: false,
            mark,
        });
        Ok(())
    }

    /// `[name, version, ` of a registered object; the state follows, then `end_object`
    /// with the mark returned.
    fn object_head(&mut self, name: &str, version: u32) -> Result<usize> {
        let mark = self.w.ext_begin();
        self.w.array(3)?;
        self.w.str(name.as_bytes())?;
        self.w.uint(version as u64);
        Ok(mark)
    }

    fn end_object(&mut self, mark: usize) -> Result {
        Ok(self.w.ext_end(mark, ext::OBJECT)?)
    }

    fn keys(&self) -> Keys {
        self.keys
            .expect("keys are looked up before any native write")
    }

    /// A str the hook path created for this one write.
    fn fresh_str(&mut self, s: &str) -> Result {
        if s.len() >= MIN_SHARED_STR {
            if let Some(share) = self.share.as_mut() {
                share.strings.note_fresh();
            }
        }
        Ok(self.w.str(s.as_bytes())?)
    }

    /// A u64 as the encoder writes the Python int holding it.
    fn count(&mut self, v: u64) {
        match i64::try_from(v) {
            Ok(v) => self.w.int(v),
            Err(_) => self.w.uint(v),
        }
    }

    /// Begins a dict with these keys as the hook path wrote it (a map, or in format 2 a
    /// record when its key list repeats) and returns whether each key must be written
    /// before its value (a map) or not (a record).
    fn begin_dict(&mut self, keys: &[Key<'_>]) -> Result<bool> {
        let n = keys.len();
        let Some(share) = self.share.as_mut() else {
            self.w.map(n)?;
            return Ok(true);
        };
        if n == 0 || n > MAX_SHAPE_KEYS {
            self.w.map(n)?;
            return Ok(true);
        }
        let usage = if keys.iter().all(|k| matches!(k, Key::Interned(..))) {
            self.shape.clear();
            self.shape.extend(keys.iter().map(|k| match k {
                Key::Interned(p, _) => *p as usize,
                Key::Fresh(_) => 0,
            }));
            let usage = share.shapes.note(&self.shape[..]);
            self.shape.clear();
            usage
        } else {
            share.shapes.note_fresh()
        };
        match usage {
            Use::First | Use::Plain => {
                self.w.map(n)?;
                Ok(true)
            }
            Use::Define(_) => {
                self.w.array(n + 1)?;
                let mark = self.w.ext_begin();
                self.w.array(n)?;
                for k in keys {
                    self.w.str(k.text().as_bytes())?;
                }
                self.w.ext_end(mark, ext::SHAPE_DEF)?;
                Ok(false)
            }
            Use::Ref(i) => {
                self.w.array(n + 1)?;
                self.w.index_ref(ext::SHAPE_REF, i);
                Ok(false)
            }
        }
    }

    /// A key of a dict begun by `begin_dict`, when it is written inline.
    fn key(&mut self, k: Key<'_>, inline: bool) -> Result {
        if !inline {
            return Ok(());
        }
        match k {
            // SAFETY: a str kept alive (interned, or in `keep`) until the encode ends.
            Key::Interned(p, _) => unsafe { self.str(p) },
            Key::Fresh(t) => self.fresh_str(t),
        }
    }

    /// `Message.to_dict()`'s keys and values.
    fn message(&mut self, m: &core::Message) -> Result {
        let k = self.keys();
        let mut keys = [Key::Fresh(""); 12];
        let mut n = 0;
        let mut push = |key| {
            keys[n] = key;
            n += 1;
        };
        push(Key::Interned(k.role, "role"));
        push(Key::Interned(k.content, "content"));
        let parts = !m.user_input_multi_content.is_empty();
        if parts && !m.content.is_empty() {
            push(Key::Interned(k.content_text, "content_text"));
        }
        let texts = [
            ("name", &m.name),
            ("reasoning_content", &m.reasoning_content),
            ("refusal", &m.refusal),
            ("tool_call_id", &m.tool_call_id),
            ("tool_name", &m.tool_name),
        ];
        for (key, v) in texts {
            if !v.is_empty() {
                push(Key::Fresh(key));
            }
        }
        if !m.tool_calls.is_empty() {
            push(Key::Interned(k.tool_calls, "tool_calls"));
        }
        if m.response_meta.is_some() {
            push(Key::Interned(k.response_meta, "response_meta"));
        }
        if m.extra.is_some() {
            push(Key::Interned(k.extra, "extra"));
        }
        let keys = &keys[..n];
        let inline = self.begin_dict(keys)?;
        let mut keys = keys.iter();
        let mut next = |enc: &mut Self| enc.key(*keys.next().expect("one key per value"), inline);
        next(self)?;
        self.fresh_str(&m.role)?;
        next(self)?;
        if parts {
            self.w.array(m.user_input_multi_content.len())?;
            for p in &m.user_input_multi_content {
                self.part(p)?;
            }
            if !m.content.is_empty() {
                next(self)?;
                self.fresh_str(&m.content)?;
            }
        } else {
            self.fresh_str(&m.content)?;
        }
        for (_, v) in texts {
            if !v.is_empty() {
                next(self)?;
                self.fresh_str(v)?;
            }
        }
        if !m.tool_calls.is_empty() {
            next(self)?;
            self.w.array(m.tool_calls.len())?;
            for t in &m.tool_calls {
                self.tool_call(t)?;
            }
        }
        if let Some(meta) = &m.response_meta {
            next(self)?;
            self.meta_dict(meta)?;
        }
        if let Some(extra) = &m.extra {
            next(self)?;
            self.extra_map(extra)?;
        }
        Ok(())
    }

    /// `ToolCall.to_dict()`.
    fn tool_call(&mut self, t: &core::ToolCall) -> Result {
        let k = self.keys();
        let mut keys = [Key::Fresh(""); 5];
        let mut n = 0;
        if t.index.is_some() {
            keys[n] = Key::Interned(k.index, "index");
            n += 1;
        }
        keys[n] = Key::Interned(k.id, "id");
        keys[n + 1] = Key::Interned(k.kind, "type");
        keys[n + 2] = Key::Interned(k.function, "function");
        n += 3;
        if t.extra.is_some() {
            keys[n] = Key::Interned(k.extra, "extra");
            n += 1;
        }
        let function = [
            Key::Interned(k.name, "name"),
            Key::Interned(k.arguments, "arguments"),
        ];
        let keys = &keys[..n];
        let inline = self.begin_dict(keys)?;
        let mut keys = keys.iter().copied();
        if let Some(i) = t.index {
            self.key(keys.next().unwrap_or(Key::Fresh("")), inline)?;
            self.w.int(i);
        }
        self.key(keys.next().unwrap_or(Key::Fresh("")), inline)?;
        self.fresh_str(&t.id)?;
        self.key(keys.next().unwrap_or(Key::Fresh("")), inline)?;
        self.fresh_str(&t.kind)?;
        self.key(keys.next().unwrap_or(Key::Fresh("")), inline)?;
        let inner = self.begin_dict(&function)?;
        self.key(function[0], inner)?;
        self.fresh_str(&t.function.name)?;
        self.key(function[1], inner)?;
        self.fresh_str(&t.function.arguments)?;
        if let Some(extra) = &t.extra {
            self.key(keys.next().unwrap_or(Key::Fresh("")), inline)?;
            self.extra_map(extra)?;
        }
        Ok(())
    }

    /// `ContentPart.to_dict()`.
    fn part(&mut self, p: &Part) -> Result {
        let k = self.keys();
        let kind = Key::Interned(k.kind, "type");
        match p {
            Part::Text(text) => {
                let keys = [kind, Key::Interned(k.text, "text")];
                let inline = self.begin_dict(&keys)?;
                self.key(keys[0], inline)?;
                self.fresh_str("text")?;
                self.key(keys[1], inline)?;
                self.fresh_str(text)
            }
            Part::ImageUrl { url, detail } => {
                let keys = [kind, Key::Interned(k.image_url, "image_url")];
                let image = [
                    Key::Interned(k.url, "url"),
                    Key::Interned(k.detail, "detail"),
                ];
                let image = &image[..if detail.is_empty() { 1 } else { 2 }];
                let inline = self.begin_dict(&keys)?;
                self.key(keys[0], inline)?;
                self.fresh_str("image_url")?;
                self.key(keys[1], inline)?;
                let inner = self.begin_dict(image)?;
                self.key(image[0], inner)?;
                self.fresh_str(url)?;
                if !detail.is_empty() {
                    self.key(image[1], inner)?;
                    self.fresh_str(detail)?;
                }
                Ok(())
            }
            Part::File {
                filename,
                file_data,
                file_id,
            } => {
                let keys = [kind, Key::Interned(k.file, "file")];
                let fields = [
                    (Key::Interned(k.filename, "filename"), filename),
                    (Key::Interned(k.file_data, "file_data"), file_data),
                    (Key::Interned(k.file_id, "file_id"), file_id),
                ];
                let mut file = [Key::Fresh(""); 3];
                let mut n = 0;
                for (key, v) in fields {
                    if !v.is_empty() {
                        file[n] = key;
                        n += 1;
                    }
                }
                let file = &file[..n];
                let inline = self.begin_dict(&keys)?;
                self.key(keys[0], inline)?;
                self.fresh_str("file")?;
                self.key(keys[1], inline)?;
                let inner = self.begin_dict(file)?;
                let mut next = file.iter();
                for (_, v) in fields {
                    if !v.is_empty() {
                        self.key(*next.next().expect("one key per value"), inner)?;
                        self.fresh_str(v)?;
                    }
                }
                Ok(())
            }
        }
    }

    /// The `response_meta` dict of a message's state, with OpenAI's usage dict.
    fn meta_dict(&mut self, meta: &core::ResponseMeta) -> Result {
        let k = self.keys();
        let keys = [
            Key::Interned(k.finish_reason, "finish_reason"),
            Key::Interned(k.usage, "usage"),
        ];
        let counts = [
            Key::Interned(k.prompt_tokens, "prompt_tokens"),
            Key::Interned(k.completion_tokens, "completion_tokens"),
            Key::Interned(k.total_tokens, "total_tokens"),
            Key::Interned(k.prompt_details, "prompt_tokens_details"),
            Key::Interned(k.completion_details, "completion_tokens_details"),
        ];
        let cached = [Key::Interned(k.cached_tokens, "cached_tokens")];
        let reasoning = [Key::Interned(k.reasoning_tokens, "reasoning_tokens")];
        let inline = self.begin_dict(&keys)?;
        self.key(keys[0], inline)?;
        self.fresh_str(&meta.finish_reason)?;
        self.key(keys[1], inline)?;
        let Some(u) = &meta.usage else {
            self.w.nil();
            return Ok(());
        };
        let inline = self.begin_dict(&counts)?;
        let values = [u.prompt_tokens, u.completion_tokens, u.total_tokens];
        for (key, v) in counts.iter().zip(values) {
            self.key(*key, inline)?;
            self.count(v);
        }
        for (i, (key, v)) in [(cached, u.cached_tokens), (reasoning, u.reasoning_tokens)]
            .into_iter()
            .enumerate()
        {
            self.key(counts[3 + i], inline)?;
            let inner = self.begin_dict(&key)?;
            self.key(key[0], inner)?;
            self.count(v);
        }
        Ok(())
    }

    /// A key of an `extra` map as the hook path made it: a new str, except that CPython
    /// hands out one shared object for the empty str and for some one-character strs,
    /// which then repeat by identity. Those are made here too (allocating only, no Python
    /// code runs) and kept until the encode ends, so their address is theirs.
    fn extra_key<'a>(&mut self, k: &'a str) -> Key<'a> {
        let Some(share) = self.share.as_mut() else {
            return Key::Fresh(k);
        };
        if k.chars().nth(1).is_some() {
            return Key::Fresh(k);
        }
        let s = PyString::new(self.py, k);
        let p = s.as_ptr();
        share.keep.push(s.into_any().unbind());
        Key::Interned(p, k)
    }

    /// A `Usage` state: the list of its five counts.
    fn usage_list(&mut self, u: &core::Usage) -> Result {
        self.w.array(5)?;
        for v in [
            u.prompt_tokens,
            u.completion_tokens,
            u.total_tokens,
            u.cached_tokens,
            u.reasoning_tokens,
        ] {
            self.count(v);
        }
        Ok(())
    }

    /// An `extra` map (checked by `map_depth`: no Python objects, bounded nesting).
    fn extra_map(&mut self, m: &Map) -> Result {
        let keys: Vec<Key<'_>> = m.iter().map(|(k, _)| self.extra_key(k)).collect();
        let inline = self.begin_dict(&keys)?;
        for (key, (_, v)) in keys.into_iter().zip(m) {
            self.key(key, inline)?;
            match v {
                Value::Null => self.w.nil(),
                Value::Bool(b) => self.w.bool(*b),
                Value::Int(i) => self.w.int(*i),
                Value::Float(f) => self.w.float(*f),
                Value::Str(s) => self.fresh_str(s)?,
                Value::Map(inner) => self.extra_map(inner)?,
                Value::Opaque(_) => return Err(fail(
                    "internal error: a Python object in extra at {path} reached the native encoder"
                        .into(),
                )),
            }
        }
        Ok(())
    }
}

/// The state the registered hooks of rillet's classes returned before they were written
/// natively: `to_dict()` for messages, tool calls and parts, a list of fields for the rest.
fn hook_state<'py>(o: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = o.py();
    Ok(match Native::of(o) {
        Some(Native::Message(m)) => message_to_dict(py, &m.get().snapshot())?.into_any(),
        Some(Native::ToolCall(t)) => tool_call_to_dict(py, t)?.into_any(),
        Some(Native::ContentPart(p)) => part_to_dict(py, p)?.into_any(),
        Some(Native::FunctionCall(f)) => {
            PyList::new(py, [f.name.as_str(), f.arguments.as_str()])?.into_any()
        }
        Some(Native::Usage(u)) => PyList::new(
            py,
            [
                u.prompt_tokens,
                u.completion_tokens,
                u.total_tokens,
                u.cached_tokens,
                u.reasoning_tokens,
            ],
        )?
        .into_any(),
        Some(Native::ResponseMeta(r)) => {
            let usage = match r.usage {
                Some(u) => Bound::new(py, Usage(u))?.into_any(),
                None => py.None().into_bound(py),
            };
            let items: [Bound<'py, PyAny>; 2] =
                [PyString::new(py, &r.finish_reason).into_any(), usage];
            PyList::new(py, items)?.into_any()
        }
        Some(Native::AgenticMessage(m)) => agentic_to_dict(py, &m.get().snapshot())?.into_any(),
        Some(Native::ContentBlock(b)) => block_to_dict(py, b)?.into_any(),
        None => PyDict::new(py).into_any(),
    })
}
