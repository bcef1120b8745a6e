//! rillet's own message types built straight from their decoded states, without calling a
//! Python `from_state` hook.
//!
//! The states are the ones `docs/checkpoint-format.md` lists (and the encoder writes), and
//! they are read strictly: a missing required field, a field the version does not have, or
//! a field of the wrong type is a DecodeError naming the type and the field. A state that
//! a migrate function returned goes through the same checks.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyList, PyString};

use super::{kind_of, BuildError, Result};
use crate::message::{self as core, Part};
use crate::py::message::{
    map_from_py, ContentPart, FunctionCall, Message, ResponseMeta, ToolCall, Usage,
};

/// Builds the object of the registered `name` from `state`.
pub(super) fn build<'py>(name: &str, state: &Bound<'py, PyAny>) -> Result<Bound<'py, PyAny>> {
    let py = state.py();
    let bad = |e: Field| BuildError::new(format!("cannot build {name} from its state: {}", e.0));
    let obj = match name {
        "rillet.Message" => Bound::new(py, Message::wrap(message(state).map_err(bad)?))?.into_any(),
        "rillet.ToolCall" => {
            Bound::new(py, ToolCall(tool_call(state, "").map_err(bad)?))?.into_any()
        }
        "rillet.ContentPart" => {
            Bound::new(py, ContentPart(part(state, "").map_err(bad)?))?.into_any()
        }
        "rillet.FunctionCall" => {
            let [name, arguments] = items::<2>(state, "[name, arguments]").map_err(bad)?;
            let f = core::FunctionCall {
                name: string(&name, "name").map_err(bad)?,
                arguments: string(&arguments, "arguments").map_err(bad)?,
            };
            Bound::new(py, FunctionCall(f))?.into_any()
        }
        "rillet.Usage" => Bound::new(py, Usage(usage_list(state).map_err(bad)?))?.into_any(),
        "rillet.ResponseMeta" => {
            let [finish, usage] = items::<2>(state, "[finish_reason, usage]").map_err(bad)?;
            let usage = if usage.is_none() {
                None
            } else if let Ok(u) = usage.cast_exact::<Usage>() {
                Some(u.get().0)
            } else {
                return Err(bad(Field(format!(
                    "field 'usage' must be a rillet.Usage or None, got {}",
                    kind_of(&usage)
                ))));
            };
            let meta = core::ResponseMeta {
                finish_reason: string(&finish, "finish_reason").map_err(bad)?,
                usage,
            };
            Bound::new(py, ResponseMeta(meta))?.into_any()
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
struct Field(String);

type Checked<T> = std::result::Result<T, Field>;

/// `path` joined with `key`, as `tool_calls[0].function`.
fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

/// A field's path, formatted only when an error names it.
#[derive(Clone, Copy)]
struct At<'a>(&'a str, &'a str);

impl std::fmt::Display for At<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.0.is_empty() {
            f.write_str(self.1)
        } else {
            write!(f, "{}.{}", self.0, self.1)
        }
    }
}

fn wrong(path: impl std::fmt::Display, what: &str, got: &Bound<'_, PyAny>) -> Field {
    Field(format!(
        "field '{path}' must be {what}, got {}",
        kind_of(got)
    ))
}

fn string(v: &Bound<'_, PyAny>, path: impl std::fmt::Display + Copy) -> Checked<String> {
    let s = v
        .cast_exact::<PyString>()
        .map_err(|_| wrong(path, "a str", v))?;
    s.to_str().map(str::to_owned).map_err(|_| {
        Field(format!(
            "field '{path}' is not valid UTF-8 (it holds lone surrogates)"
        ))
    })
}

fn count(v: &Bound<'_, PyAny>, path: impl std::fmt::Display + Copy) -> Checked<u64> {
    let what = "an int from 0 to 2**64-1";
    let i = v.cast_exact::<PyInt>().map_err(|_| wrong(path, what, v))?;
    i.extract::<u64>().map_err(|_| wrong(path, what, v))
}

fn dict<'a, 'py>(
    v: &'a Bound<'py, PyAny>,
    path: impl std::fmt::Display,
) -> Checked<&'a Bound<'py, PyDict>> {
    v.cast_exact::<PyDict>()
        .map_err(|_| wrong(path, "a dict", v))
}

fn list<'a, 'py>(
    v: &'a Bound<'py, PyAny>,
    path: impl std::fmt::Display,
) -> Checked<&'a Bound<'py, PyList>> {
    v.cast_exact::<PyList>()
        .map_err(|_| wrong(path, "a list", v))
}

/// The items of a list state of exactly `N` items.
fn items<'py, const N: usize>(
    v: &Bound<'py, PyAny>,
    what: &str,
) -> Checked<[Bound<'py, PyAny>; N]> {
    let l = list(v, what)?;
    let got: Vec<_> = l.iter().collect();
    got.try_into().map_err(|got: Vec<_>| {
        Field(format!(
            "expected a list {what} of {N} items, got {}",
            got.len()
        ))
    })
}

/// Calls `f(key, value)` for each item of a state dict, whose keys must be strs.
fn each<'py>(
    d: &Bound<'py, PyDict>,
    path: &str,
    mut f: impl FnMut(&str, Bound<'py, PyAny>) -> Checked<()>,
) -> Checked<()> {
    for (k, v) in d.iter() {
        let key = k
            .cast_exact::<PyString>()
            .ok()
            .and_then(|s| s.to_str().ok());
        let key = key.ok_or_else(|| {
            Field(format!(
                "'{}' has a key that is not a str ({})",
                path,
                kind_of(&k)
            ))
        })?;
        f(key, v)?;
    }
    Ok(())
}

fn unknown(path: &str, key: &str) -> Field {
    Field(format!(
        "unknown field '{}' (a newer rillet's state? upgrade rillet)",
        join(path, key)
    ))
}

fn missing(path: &str, key: &str) -> Field {
    Field(format!("missing field '{}'", join(path, key)))
}

fn message(state: &Bound<'_, PyAny>) -> Checked<core::Message> {
    let d = dict(state, "state")?;
    let mut m = core::Message::default();
    let (mut role, mut content, mut content_text) = (false, false, None);
    each(d, "", |key, v| {
        match key {
            "role" => {
                m.role = string(&v, key)?;
                role = true;
            }
            "content" => {
                content = true;
                if let Ok(s) = v.cast_exact::<PyString>() {
                    m.content = string(s.as_any(), key)?;
                } else if let Ok(l) = v.cast_exact::<PyList>() {
                    m.user_input_multi_content = l
                        .iter()
                        .enumerate()
                        .map(|(i, p)| part(&p, &format!("content[{i}]")))
                        .collect::<Checked<_>>()?;
                } else {
                    return Err(wrong(key, "a str or a list of content parts", &v));
                }
            }
            "content_text" => content_text = Some(string(&v, key)?),
            "name" => m.name = string(&v, key)?,
            "reasoning_content" => m.reasoning_content = string(&v, key)?,
            "refusal" => m.refusal = string(&v, key)?,
            "tool_call_id" => m.tool_call_id = string(&v, key)?,
            "tool_name" => m.tool_name = string(&v, key)?,
            "tool_calls" => {
                m.tool_calls = list(&v, key)?
                    .iter()
                    .enumerate()
                    .map(|(i, t)| tool_call(&t, &format!("tool_calls[{i}]")))
                    .collect::<Checked<_>>()?;
            }
            "response_meta" => m.response_meta = Some(meta(&v, key)?),
            "extra" => m.extra = Some(extra(&v, key)?),
            _ => return Err(unknown("", key)),
        }
        Ok(())
    })?;
    if !role {
        return Err(missing("", "role"));
    }
    if !content {
        return Err(missing("", "content"));
    }
    if let Some(text) = content_text {
        if m.user_input_multi_content.is_empty() {
            return Err(Field(
                "field 'content_text' is only allowed when 'content' is a list of parts".into(),
            ));
        }
        m.content = text;
    }
    Ok(m)
}

fn extra(v: &Bound<'_, PyAny>, path: &str) -> Checked<core::Map> {
    map_from_py(dict(v, path)?).map_err(|e| Field(format!("field '{path}': {}", e.value(v.py()))))
}

fn tool_call(v: &Bound<'_, PyAny>, path: &str) -> Checked<core::ToolCall> {
    let d = dict(v, if path.is_empty() { "state" } else { path })?;
    let mut t = core::ToolCall::default();
    let (mut id, mut kind, mut function) = (false, false, false);
    each(d, path, |key, v| {
        let at = At(path, key);
        match key {
            "index" => {
                let i = v
                    .cast_exact::<PyInt>()
                    .ok()
                    .and_then(|i| i.extract::<i64>().ok());
                t.index = Some(i.ok_or_else(|| wrong(at, "a 64-bit int", &v))?);
            }
            "id" => (t.id, id) = (string(&v, at)?, true),
            "type" => (t.kind, kind) = (string(&v, at)?, true),
            "function" => {
                let at = at.to_string();
                let f = dict(&v, &at)?;
                let (mut name, mut arguments) = (None, None);
                each(f, &at, |key, v| {
                    match key {
                        "name" => name = Some(string(&v, &join(&at, key))?),
                        "arguments" => arguments = Some(string(&v, &join(&at, key))?),
                        _ => return Err(unknown(&at, key)),
                    }
                    Ok(())
                })?;
                t.function = core::FunctionCall {
                    name: name.ok_or_else(|| missing(&at, "name"))?,
                    arguments: arguments.ok_or_else(|| missing(&at, "arguments"))?,
                };
                function = true;
            }
            "extra" => t.extra = Some(extra(&v, &at.to_string())?),
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

fn part(v: &Bound<'_, PyAny>, path: &str) -> Checked<Part> {
    let d = dict(v, if path.is_empty() { "state" } else { path })?;
    let (mut kind, mut text, mut image) = (None, None, None);
    each(d, path, |key, v| {
        let at = At(path, key);
        match key {
            "type" => kind = Some(string(&v, at)?),
            "text" => text = Some(string(&v, at)?),
            "image_url" => {
                let at = at.to_string();
                let (mut url, mut detail) = (None, String::new());
                each(dict(&v, &at)?, &at, |key, v| {
                    match key {
                        "url" => url = Some(string(&v, &join(&at, key))?),
                        "detail" => detail = string(&v, &join(&at, key))?,
                        _ => return Err(unknown(&at, key)),
                    }
                    Ok(())
                })?;
                let url = url.ok_or_else(|| missing(&at, "url"))?;
                image = Some(Part::ImageUrl { url, detail });
            }
            _ => return Err(unknown(path, key)),
        }
        Ok(())
    })?;
    match (kind.as_deref(), text, image) {
        (Some("text"), Some(t), None) => Ok(Part::Text(t)),
        (Some("image_url"), None, Some(image)) => Ok(image),
        (Some("text"), None, _) => Err(missing(path, "text")),
        (Some("image_url"), _, None) => Err(missing(path, "image_url")),
        (None, _, _) => Err(missing(path, "type")),
        (Some(other), _, _) if other != "text" && other != "image_url" => Err(Field(format!(
            "field '{}' must be 'text' or 'image_url', got {other:?}",
            join(path, "type")
        ))),
        _ => Err(Field(format!(
            "'{}' has both 'text' and 'image_url'",
            if path.is_empty() { "state" } else { path }
        ))),
    }
}

/// The `response_meta` dict of a message state.
fn meta(v: &Bound<'_, PyAny>, path: &str) -> Checked<core::ResponseMeta> {
    let (mut finish, mut usage) = (None, None);
    each(dict(v, path)?, path, |key, v| {
        let at = At(path, key);
        match key {
            "finish_reason" => finish = Some(string(&v, at)?),
            "usage" if v.is_none() => usage = Some(None),
            "usage" => usage = Some(Some(usage_dict(&v, &at.to_string())?)),
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
fn usage_dict(v: &Bound<'_, PyAny>, path: &str) -> Checked<core::Usage> {
    let mut counts: [Option<u64>; 5] = [None; 5];
    let detail = |v: &Bound<'_, PyAny>, at: &str, inner: &str| -> Checked<u64> {
        let mut found = None;
        each(dict(v, at)?, at, |key, v| {
            if key != inner {
                return Err(unknown(at, key));
            }
            found = Some(count(&v, &join(at, key))?);
            Ok(())
        })?;
        found.ok_or_else(|| missing(at, inner))
    };
    each(dict(v, path)?, path, |key, v| {
        let at = At(path, key);
        match key {
            "prompt_tokens" => counts[0] = Some(count(&v, at)?),
            "completion_tokens" => counts[1] = Some(count(&v, at)?),
            "total_tokens" => counts[2] = Some(count(&v, at)?),
            "prompt_tokens_details" => {
                counts[3] = Some(detail(&v, &at.to_string(), "cached_tokens")?)
            }
            "completion_tokens_details" => {
                counts[4] = Some(detail(&v, &at.to_string(), "reasoning_tokens")?)
            }
            _ => return Err(unknown(path, key)),
        }
        Ok(())
    })?;
    let names = [
        "prompt_tokens",
        "completion_tokens",
        "total_tokens",
        "prompt_tokens_details",
        "completion_tokens_details",
    ];
    let mut got = [0u64; 5];
    for (i, c) in counts.iter().enumerate() {
        got[i] = c.ok_or_else(|| missing(path, names[i]))?;
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
fn usage_list(v: &Bound<'_, PyAny>) -> Checked<core::Usage> {
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
