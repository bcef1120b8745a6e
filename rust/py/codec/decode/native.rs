//! rillet's own message types built straight from their decoded states, without calling a
//! Python `from_state` hook.
//!
//! The states are the ones `docs/checkpoint-format.md` lists (and the encoder writes), and
//! they are read strictly: a missing required field, a field the version does not have, or
//! a field of the wrong type is a DecodeError naming the type and the field. The decoder
//! hands a state over as Rust values ([`Val`]), so its strings move into the message
//! without a Python str in between; a state that a migrate function returned (Python
//! objects) goes through the same checks.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyList, PyString};

use super::{BuildError, Result, Val};
use crate::agentic::{self as agentic, BlockKind, Field as BlockField};
use crate::message::{self as core, Part};
use crate::py::agentic::{AgenticMessage, ContentBlock};
use crate::py::message::{
    value_from_py, ContentPart, FunctionCall, Message, ResponseMeta, ToolCall, Usage,
};

/// Builds the object of the registered `name` from `state`.
pub(super) fn build<'py>(
    py: Python<'py>,
    name: &str,
    state: Val<'py>,
) -> Result<Bound<'py, PyAny>> {
    let bad = |e: Field| {
        let message = format!("cannot build {name} from its state: {}", e.0);
        match e.1 {
            Some(cause) => BuildError::caused(message, cause),
            None => BuildError::new(message),
        }
    };
    let obj = match name {
        "rillet.Message" => {
            Bound::new(py, Message::wrap(message(py, state).map_err(bad)?))?.into_any()
        }
        "rillet.ToolCall" => {
            Bound::new(py, ToolCall(tool_call(py, state, Path::Root).map_err(bad)?))?.into_any()
        }
        "rillet.ContentPart" => {
            Bound::new(py, ContentPart(part(state, Path::Root).map_err(bad)?))?.into_any()
        }
        "rillet.FunctionCall" => {
            let [name, arguments] = items::<2>(state, "[name, arguments]").map_err(bad)?;
            let f = core::FunctionCall {
                name: string(name, "name").map_err(bad)?,
                arguments: string(arguments, "arguments").map_err(bad)?,
            };
            Bound::new(py, FunctionCall(f))?.into_any()
        }
        "rillet.Usage" => Bound::new(py, Usage(usage_list(state).map_err(bad)?))?.into_any(),
        "rillet.ResponseMeta" => {
            let [finish, usage] = items::<2>(state, "[finish_reason, usage]").map_err(bad)?;
            let usage = match &usage {
                u if u.is_none() => None,
                Val::Py(u) if u.cast_exact::<Usage>().is_ok() => {
                    Some(u.cast_exact::<Usage>().map_err(PyErr::from)?.get().0)
                }
                _ => {
                    return Err(bad(Field::new(format!(
                        "field 'usage' must be a rillet.Usage or None, got {}",
                        usage.kind()
                    ))))
                }
            };
            let meta = core::ResponseMeta {
                finish_reason: string(finish, "finish_reason").map_err(bad)?,
                usage,
            };
            Bound::new(py, ResponseMeta(meta))?.into_any()
        }
        "rillet.AgenticMessage" => Bound::new(
            py,
            AgenticMessage::wrap(agentic_message(py, state).map_err(bad)?),
        )?
        .into_any(),
        "rillet.ContentBlock" => {
            Bound::new(py, ContentBlock(block(py, state, Path::Root).map_err(bad)?))?.into_any()
        }
        _ => {
            return Err(BuildError::new(format!(
                "{name} has no state hooks and is not one of rillet's types"
            )))
        }
    };
    Ok(obj)
}

/// What is wrong with a state, naming the field.
struct Field(String, Option<PyErr>);

impl Field {
    fn new(text: String) -> Self {
        Field(text, None)
    }
}

type Checked<T> = std::result::Result<T, Field>;

/// Where a field is in a state, as `tool_calls[0].function`: built on the stack and
/// formatted only when an error names it.
#[derive(Clone, Copy)]
enum Path<'a> {
    Root,
    Key(&'a Path<'a>, &'a str),
    Index(&'a Path<'a>, usize),
}

impl<'a> Path<'a> {
    fn key(&'a self, key: &'a str) -> Path<'a> {
        Path::Key(self, key)
    }
}

impl std::fmt::Display for Path<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Path::Root => Ok(()),
            Path::Key(Path::Root, key) => f.write_str(key),
            Path::Key(parent, key) => write!(f, "{parent}.{key}"),
            Path::Index(parent, i) => write!(f, "{parent}[{i}]"),
        }
    }
}

/// A path for "'<path>' has ...": the state itself is named "state".
struct Named<'a>(Path<'a>);

impl std::fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Path::Root => f.write_str("state"),
            p => p.fmt(f),
        }
    }
}

fn wrong(path: impl std::fmt::Display, what: &str, got: &Val<'_>) -> Field {
    Field::new(format!("field '{path}' must be {what}, got {}", got.kind()))
}

fn string(v: Val<'_>, path: impl std::fmt::Display + Copy) -> Checked<String> {
    if let Val::Str(s) = v {
        return Ok(s);
    }
    if let Val::Py(o) = &v {
        if let Ok(s) = o.cast_exact::<PyString>() {
            return s.to_str().map(str::to_owned).map_err(|_| {
                Field::new(format!(
                    "field '{path}' is not valid UTF-8 (it holds lone surrogates)"
                ))
            });
        }
    }
    Err(wrong(path, "a str", &v))
}

fn count(v: &Val<'_>, path: impl std::fmt::Display + Copy) -> Checked<u64> {
    let what = "an int from 0 to 2**64-1";
    match v {
        Val::Int(i) => u64::try_from(*i).ok(),
        Val::UInt(u) => Some(*u),
        Val::Py(o) => o
            .cast_exact::<PyInt>()
            .ok()
            .and_then(|i| i.extract::<u64>().ok()),
        _ => None,
    }
    .ok_or_else(|| wrong(path, what, v))
}

fn int64(v: &Val<'_>, path: impl std::fmt::Display + Copy) -> Checked<i64> {
    match v {
        Val::Int(i) => Some(*i),
        Val::UInt(u) => i64::try_from(*u).ok(),
        Val::Py(o) => o
            .cast_exact::<PyInt>()
            .ok()
            .and_then(|i| i.extract::<i64>().ok()),
        _ => None,
    }
    .ok_or_else(|| wrong(path, "a 64-bit int", v))
}

/// The key/value pairs of a dict state.
fn pairs<'py>(v: Val<'py>, path: impl std::fmt::Display) -> Checked<Vec<(Val<'py>, Val<'py>)>> {
    match v {
        Val::Map(pairs) => Ok(pairs),
        Val::Record(keys, values) => Ok(keys
            .iter()
            .map(|k| Val::Str(k.to_string()))
            .zip(values)
            .collect()),
        Val::Py(ref o) if o.is_exact_instance_of::<PyDict>() => {
            let d = o
                .cast_exact::<PyDict>()
                .map_err(|_| wrong(&path, "a dict", &v))?;
            Ok(d.iter().map(|(k, v)| (Val::Py(k), Val::Py(v))).collect())
        }
        _ => Err(wrong(path, "a dict", &v)),
    }
}

/// The items of a list state.
fn list<'py>(v: Val<'py>, path: impl std::fmt::Display) -> Checked<Vec<Val<'py>>> {
    if let Val::List(items) = v {
        return Ok(items);
    }
    if let Val::Py(o) = &v {
        if let Ok(l) = o.cast_exact::<PyList>() {
            return Ok(l.iter().map(Val::Py).collect());
        }
    }
    Err(wrong(path, "a list", &v))
}

/// The items of a list state of exactly `N` items.
fn items<'py, const N: usize>(v: Val<'py>, what: &str) -> Checked<[Val<'py>; N]> {
    list(v, what)?.try_into().map_err(|got: Vec<_>| {
        Field::new(format!(
            "expected a list {what} of {N} items, got {}",
            got.len()
        ))
    })
}

/// Calls `f(key, value)` for each item of a state dict, whose keys must be strs.
fn each<'py>(
    v: Val<'py>,
    path: Path<'_>,
    mut f: impl FnMut(&str, Val<'py>) -> Checked<()>,
) -> Checked<()> {
    if let Val::Record(keys, values) = v {
        for (k, v) in keys.iter().zip(values) {
            f(k, v)?;
        }
        return Ok(());
    }
    for (k, v) in pairs(v, Named(path))? {
        let Some(key) = k.text() else {
            return Err(Field::new(format!(
                "'{path}' has a key that is not a str ({})",
                k.kind()
            )));
        };
        f(key, v)?;
    }
    Ok(())
}

fn unknown(path: Path<'_>, key: &str) -> Field {
    Field::new(format!(
        "unknown field '{}' (a newer rillet's state? upgrade rillet)",
        path.key(key)
    ))
}

fn missing(path: Path<'_>, key: &str) -> Field {
    Field::new(format!("missing field '{}'", path.key(key)))
}

fn message(py: Python<'_>, state: Val<'_>) -> Checked<core::Message> {
    let mut m = core::Message::default();
    let (mut role, mut content, mut content_text) = (false, false, None);
    let root = Path::Root;
    each(state, root, |key, v| {
        let at = root.key(key);
        match key {
            "role" => {
                m.role = string(v, at)?;
                role = true;
            }
            "content" => {
                content = true;
                let py_is =
                    |check: fn(&Bound<'_, PyAny>) -> bool| matches!(&v, Val::Py(o) if check(o));
                if matches!(v, Val::List(_)) || py_is(|o| o.is_exact_instance_of::<PyList>()) {
                    m.user_input_multi_content = list(v, at)?
                        .into_iter()
                        .enumerate()
                        .map(|(i, p)| part(p, Path::Index(&at, i)))
                        .collect::<Checked<_>>()?;
                } else if matches!(v, Val::Str(_))
                    || py_is(|o| o.is_exact_instance_of::<PyString>())
                {
                    m.content = string(v, at)?;
                } else {
                    return Err(wrong(at, "a str or a list of content parts", &v));
                }
            }
            "content_text" => content_text = Some(string(v, at)?),
            "name" => m.name = string(v, at)?,
            "reasoning_content" => m.reasoning_content = string(v, at)?,
            "refusal" => m.refusal = string(v, at)?,
            "tool_call_id" => m.tool_call_id = string(v, at)?,
            "tool_name" => m.tool_name = string(v, at)?,
            "tool_calls" => {
                m.tool_calls = list(v, at)?
                    .into_iter()
                    .enumerate()
                    .map(|(i, t)| tool_call(py, t, Path::Index(&at, i)))
                    .collect::<Checked<_>>()?;
            }
            "response_meta" => m.response_meta = Some(meta(v, at)?),
            "extra" => m.extra = Some(extra(py, v, at)?),
            _ => return Err(unknown(root, key)),
        }
        Ok(())
    })?;
    if !role {
        return Err(missing(root, "role"));
    }
    if !content {
        return Err(missing(root, "content"));
    }
    if let Some(text) = content_text {
        if m.user_input_multi_content.is_empty() {
            return Err(Field::new(
                "field 'content_text' is only allowed when 'content' is a list of parts".into(),
            ));
        }
        m.content = text;
    }
    Ok(m)
}

/// An `extra` dict as the message's Rust map.
fn extra(py: Python<'_>, v: Val<'_>, path: Path<'_>) -> Checked<core::Map> {
    let bad = |e: PyErr| Field(format!("field '{path}': {}", e.value(py)), Some(e));
    if let Val::Py(o) = &v {
        let d = o
            .cast_exact::<PyDict>()
            .map_err(|_| wrong(path, "a dict", &v))?;
        return crate::py::message::map_from_py(d).map_err(bad);
    }
    let pairs = pairs(v, path)?;
    let mut map = core::Map::with_capacity(pairs.len());
    for (k, v) in pairs {
        let key = match k {
            Val::Str(s) => s,
            k => match k.text() {
                Some(t) => t.to_owned(),
                None => {
                    return Err(Field::new(format!(
                        "'{path}' has a key that is not a str ({})",
                        k.kind()
                    )))
                }
            },
        };
        map.push((key, extra_value(py, v).map_err(bad)?));
    }
    Ok(map)
}

/// A value of an `extra` map: the types Rust models are kept as Rust values, the rest is
/// made into the Python object it stands for and held opaquely, as the setter does.
fn extra_value(py: Python<'_>, v: Val<'_>) -> PyResult<core::Value> {
    Ok(match v {
        Val::Nil => core::Value::Null,
        Val::Bool(b) => core::Value::Bool(b),
        Val::Int(i) => core::Value::Int(i),
        Val::UInt(u) if i64::try_from(u).is_ok() => core::Value::Int(u as i64),
        Val::Float(f) => core::Value::Float(f),
        Val::Str(s) => core::Value::Str(s),
        v @ (Val::Map(_) | Val::Record(..)) => {
            let Ok(pairs) = pairs(v, "extra") else {
                return Ok(core::Value::Null);
            };
            let mut map = core::Map::with_capacity(pairs.len());
            for (k, v) in pairs {
                let key = match k {
                    Val::Str(s) => s,
                    k => k.text().map(str::to_owned).unwrap_or_default(),
                };
                map.push((key, extra_value(py, v)?));
            }
            core::Value::Map(map)
        }
        other => value_from_py(&other.into_py(py)?)?,
    })
}

fn tool_call(py: Python<'_>, v: Val<'_>, path: Path<'_>) -> Checked<core::ToolCall> {
    let mut t = core::ToolCall::default();
    let (mut id, mut kind, mut function) = (false, false, false);
    each(v, path, |key, v| {
        let at = path.key(key);
        match key {
            "index" => t.index = Some(int64(&v, at)?),
            "id" => (t.id, id) = (string(v, at)?, true),
            "type" => (t.kind, kind) = (string(v, at)?, true),
            "function" => {
                let (mut name, mut arguments) = (None, None);
                each(v, at, |key, v| {
                    match key {
                        "name" => name = Some(string(v, at.key(key))?),
                        "arguments" => arguments = Some(string(v, at.key(key))?),
                        _ => return Err(unknown(at, key)),
                    }
                    Ok(())
                })?;
                t.function = core::FunctionCall {
                    name: name.ok_or_else(|| missing(at, "name"))?,
                    arguments: arguments.ok_or_else(|| missing(at, "arguments"))?,
                };
                function = true;
            }
            "extra" => t.extra = Some(extra(py, v, at)?),
            _ => return Err(unknown(path, key)),
        }
        Ok(())
    })?;
    for (present, key) in [(id, "id"), (kind, "type"), (function, "function")] {
        if !present {
            return Err(missing(path, key));
        }
    }
    Ok(t)
}

fn part(v: Val<'_>, path: Path<'_>) -> Checked<Part> {
    let (mut kind, mut text, mut image, mut file) = (None, None, None, None);
    each(v, path, |key, v| {
        let at = path.key(key);
        match key {
            "type" => kind = Some(string(v, at)?),
            "text" => text = Some(string(v, at)?),
            "image_url" => {
                let (mut url, mut detail) = (None, String::new());
                each(v, at, |key, v| {
                    match key {
                        "url" => url = Some(string(v, at.key(key))?),
                        "detail" => detail = string(v, at.key(key))?,
                        _ => return Err(unknown(at, key)),
                    }
                    Ok(())
                })?;
                let url = url.ok_or_else(|| missing(at, "url"))?;
                image = Some(Part::ImageUrl { url, detail });
            }
            "file" => {
                let (mut filename, mut file_data, mut file_id) =
                    (String::new(), String::new(), String::new());
                each(v, at, |key, v| {
                    match key {
                        "filename" => filename = string(v, at.key(key))?,
                        "file_data" => file_data = string(v, at.key(key))?,
                        "file_id" => file_id = string(v, at.key(key))?,
                        _ => return Err(unknown(at, key)),
                    }
                    Ok(())
                })?;
                if file_data.is_empty() && file_id.is_empty() {
                    return Err(missing(at, "file_data"));
                }
                file = Some(Part::File {
                    filename,
                    file_data,
                    file_id,
                });
            }
            _ => return Err(unknown(path, key)),
        }
        Ok(())
    })?;
    let fields =
        usize::from(text.is_some()) + usize::from(image.is_some()) + usize::from(file.is_some());
    match (kind.as_deref(), text, image, file) {
        (_, _, _, _) if fields > 1 => Err(Field::new(format!(
            "'{}' has more than one of 'text', 'image_url' and 'file'",
            Named(path)
        ))),
        (Some("text"), Some(t), None, None) => Ok(Part::Text(t)),
        (Some("image_url"), None, Some(image), None) => Ok(image),
        (Some("file"), None, None, Some(file)) => Ok(file),
        (Some("text"), ..) => Err(missing(path, "text")),
        (Some("image_url"), ..) => Err(missing(path, "image_url")),
        (Some("file"), ..) => Err(missing(path, "file")),
        (None, ..) => Err(missing(path, "type")),
        (Some(other), ..) => Err(Field::new(format!(
            "field '{}' must be 'text', 'image_url' or 'file', got {other:?}",
            path.key("type")
        ))),
    }
}

/// The `response_meta` dict of a message state.
fn meta(v: Val<'_>, path: Path<'_>) -> Checked<core::ResponseMeta> {
    let (mut finish, mut usage) = (None, None);
    each(v, path, |key, v| {
        let at = path.key(key);
        match key {
            "finish_reason" => finish = Some(string(v, at)?),
            "usage" if v.is_none() => usage = Some(None),
            "usage" => usage = Some(Some(usage_dict(v, at)?)),
            _ => return Err(unknown(path, key)),
        }
        Ok(())
    })?;
    Ok(core::ResponseMeta {
        finish_reason: finish.ok_or_else(|| missing(path, "finish_reason"))?,
        usage: usage.ok_or_else(|| missing(path, "usage"))?,
    })
}

/// OpenAI's usage dict, with the cached and reasoning counts in their details dicts.
fn usage_dict(v: Val<'_>, path: Path<'_>) -> Checked<core::Usage> {
    const NAMES: [&str; 5] = [
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "prompt_tokens_details",
        "completion_tokens_details",
    ];
    let mut counts: [Option<u64>; 5] = [None; 5];
    let detail = |v: Val<'_>, at: Path<'_>, inner: &str| -> Checked<u64> {
        let mut found = None;
        each(v, at, |key, v| {
            if key != inner {
                return Err(unknown(at, key));
            }
            found = Some(count(&v, at.key(key))?);
            Ok(())
        })?;
        found.ok_or_else(|| missing(at, inner))
    };
    each(v, path, |key, v| {
        let at = path.key(key);
        match key {
            "prompt_tokens" => counts[0] = Some(count(&v, at)?),
            "completion_tokens" => counts[1] = Some(count(&v, at)?),
            "total_tokens" => counts[2] = Some(count(&v, at)?),
            "prompt_tokens_details" => counts[3] = Some(detail(v, at, "cached_tokens")?),
            "completion_tokens_details" => counts[4] = Some(detail(v, at, "reasoning_tokens")?),
            _ => return Err(unknown(path, key)),
        }
        Ok(())
    })?;
    let mut got = [0u64; 5];
    for (i, c) in counts.iter().enumerate() {
        got[i] = c.ok_or_else(|| missing(path, NAMES[i]))?;
    }
    Ok(core::Usage {
        prompt_tokens: got[0],
        completion_tokens: got[1],
        total_tokens: got[2],
        cached_tokens: got[3],
        reasoning_tokens: got[4],
    })
}

/// A `Usage` state: `[prompt, completion, total, cached, reasoning]`.
fn usage_list(v: Val<'_>) -> Checked<core::Usage> {
    let what = "[prompt_tokens, completion_tokens, total_tokens, cached_tokens, reasoning_tokens]";
    let [p, c, t, ca, r] = items::<5>(v, what)?;
    Ok(core::Usage {
        prompt_tokens: count(&p, "prompt_tokens")?,
        completion_tokens: count(&c, "completion_tokens")?,
        total_tokens: count(&t, "total_tokens")?,
        cached_tokens: count(&ca, "cached_tokens")?,
        reasoning_tokens: count(&r, "reasoning_tokens")?,
    })
}

/// An AgenticMessage state: `{"role", "blocks", "name"?, "response_meta"?, "extra"?}`.
fn agentic_message(py: Python<'_>, state: Val<'_>) -> Checked<agentic::AgenticMessage> {
    let mut m = agentic::AgenticMessage::default();
    let (mut role, mut blocks) = (false, false);
    let root = Path::Root;
    each(state, root, |key, v| {
        let at = root.key(key);
        match key {
            "role" => (m.role, role) = (string(v, at)?, true),
            "name" => m.name = string(v, at)?,
            "blocks" => {
                m.blocks = list(v, at)?
                    .into_iter()
                    .enumerate()
                    .map(|(i, b)| block(py, b, Path::Index(&at, i)))
                    .collect::<Checked<_>>()?;
                blocks = true;
            }
            "response_meta" => m.response_meta = Some(meta(v, at)?),
            "extra" => m.extra = Some(extra(py, v, at)?),
            _ => return Err(unknown(root, key)),
        }
        Ok(())
    })?;
    if !role {
        return Err(missing(root, "role"));
    }
    if !blocks {
        return Err(missing(root, "blocks"));
    }
    Ok(m)
}

/// A ContentBlock state: `{"type", <the fields of its kind>, "index"?, "extra"?}`; a field
/// its kind does not use is an error, as in the constructor.
fn block(py: Python<'_>, v: Val<'_>, path: Path<'_>) -> Checked<agentic::ContentBlock> {
    let mut b = agentic::ContentBlock::new(BlockKind::Text);
    let mut kind = None;
    each(v, path, |key, v| {
        let at = path.key(key);
        match key {
            "type" => {
                let name = string(v, at)?;
                kind = Some(BlockKind::parse(&name).ok_or_else(|| {
                    Field::new(format!(
                        "field '{at}' must be a content block kind, got {name:?}"
                    ))
                })?);
            }
            "index" => b.index = Some(int64(&v, at)?),
            "extra" => b.extra = Some(extra(py, v, at)?),
            "is_error" => match v {
                Val::Bool(flag) => b.is_error = flag,
                Val::Py(ref o) if o.is_exact_instance_of::<pyo3::types::PyBool>() => {
                    b.is_error = o.is_truthy().unwrap_or(false)
                }
                _ => return Err(wrong(at, "a bool", &v)),
            },
            _ => {
                let slot = BlockField::parse(key).and_then(|f| b.str_field_mut(f));
                match slot {
                    Some(slot) => *slot = string(v, at)?,
                    None => return Err(unknown(path, key)),
                }
            }
        }
        Ok(())
    })?;
    b.kind = kind.ok_or_else(|| missing(path, "type"))?;
    if let Some(f) = b.stray_field() {
        return Err(Field::new(format!(
            "'{}' is a '{}' block, which has no field '{}'",
            Named(path),
            b.kind.name(),
            f.name()
        )));
    }
    Ok(b)
}
