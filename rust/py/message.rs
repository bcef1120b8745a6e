//! Python classes over [`crate::message`]: `Message`, `ToolCall`, `FunctionCall`,
//! `ResponseMeta`, `Usage` and `ContentPart`, plus their dict form (OpenAI chat-completions).
//!
//! Mutability, chosen deliberately: `Message` is mutable like Eino's struct and like what
//! Python users expect (`msg.content = "..."`), but it is a `frozen` pyclass whose fields sit
//! behind an interior mutex, so it is safe on free-threaded builds. The parts of a message
//! (`ToolCall`, `FunctionCall`, `ResponseMeta`, `Usage`, `ContentPart`) are immutable values;
//! to change one, build a new one and assign the field. Container getters (`tool_calls`,
//! `extra`, `user_input_multi_content`) return fresh copies: assign to change them.

use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyList, PyString};

use crate::message::{self as core, Map, Opaque, Part, Value};

// ---------------------------------------------------------------------------------------
// extra: Python dicts <-> Value trees

fn opaque_eq(a: &Opaque, b: &Opaque) -> bool {
    match (
        a.handle.downcast_ref::<Py<PyAny>>(),
        b.handle.downcast_ref::<Py<PyAny>>(),
    ) {
        (Some(x), Some(y)) => Python::attach(|py| x.bind(py).eq(y.bind(py)).unwrap_or(false)),
        _ => false,
    }
}

fn value_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(b) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Value::Int(i));
        }
    } else if let Ok(f) = obj.cast::<PyFloat>() {
        return Ok(Value::Float(f.value()));
    } else if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Value::Str(s.to_str()?.to_owned()));
    } else if let Ok(d) = obj.cast::<PyDict>() {
        return Ok(Value::Map(map_from_py(d)?));
    }
    Ok(Value::Opaque(Opaque {
        type_name: obj.get_type().name()?.to_string(),
        is_zero: !obj.is_truthy()?,
        handle: Arc::new(obj.clone().unbind()),
        eq: opaque_eq,
    }))
}

pub(crate) fn map_from_py(d: &Bound<'_, PyDict>) -> PyResult<Map> {
    let mut map = Map::with_capacity(d.len());
    for (k, v) in d.iter() {
        let Ok(key) = k.cast::<PyString>() else {
            return Err(PyTypeError::new_err(format!(
                "extra keys must be str, got {} key {}",
                k.get_type().name()?,
                k.repr()?
            )));
        };
        map.push((key.to_str()?.to_owned(), value_from_py(&v)?));
    }
    Ok(map)
}

fn value_to_py<'py>(py: Python<'py>, v: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match v {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Int(i) => i.into_pyobject(py)?.into_any(),
        Value::Float(f) => PyFloat::new(py, *f).into_any(),
        Value::Str(s) => PyString::new(py, s).into_any(),
        Value::Map(m) => map_to_py(py, m)?.into_any(),
        Value::Opaque(o) => match o.handle.downcast_ref::<Py<PyAny>>() {
            Some(obj) => obj.bind(py).clone(),
            None => py.None().into_bound(py),
        },
    })
}

pub(crate) fn map_to_py<'py>(py: Python<'py>, m: &Map) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (k, v) in m {
        d.set_item(k, value_to_py(py, v)?)?;
    }
    Ok(d)
}

fn extra_from_py(extra: Option<&Bound<'_, PyDict>>) -> PyResult<Option<Map>> {
    extra.map(map_from_py).transpose()
}

fn extra_to_py(py: Python<'_>, extra: &Option<Map>) -> PyResult<Option<Py<PyDict>>> {
    extra
        .as_ref()
        .map(|m| map_to_py(py, m).map(Bound::unbind))
        .transpose()
}

// ---------------------------------------------------------------------------------------
// repr helpers

/// A Python-style repr of a str (single quotes, common escapes), without calling Python.
fn repr_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('\'');
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\'' => out.push_str("\\'"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => out.push_str(&format!("\\x{:02x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('\'');
    out
}

fn repr_extra(py: Python<'_>, extra: &Option<Map>) -> PyResult<String> {
    match extra {
        Some(m) => Ok(map_to_py(py, m)?.repr()?.to_string()),
        None => Ok("None".into()),
    }
}

fn not_implemented(py: Python<'_>) -> Py<PyAny> {
    py.NotImplemented()
}

// ---------------------------------------------------------------------------------------
// FunctionCall

/// The function a tool call invokes: its name and its JSON arguments (a string).
#[pyclass(frozen, eq, from_py_object, module = "rillet", name = "FunctionCall")]
#[derive(Clone, PartialEq)]
pub struct FunctionCall(pub core::FunctionCall);

#[pymethods]
impl FunctionCall {
    #[new]
    #[pyo3(signature = (name="", arguments=""))]
    fn new(name: &str, arguments: &str) -> Self {
        FunctionCall(core::FunctionCall {
            name: name.into(),
            arguments: arguments.into(),
        })
    }

    #[getter]
    fn name(&self) -> &str {
        &self.0.name
    }

    #[getter]
    fn arguments(&self) -> &str {
        &self.0.arguments
    }

    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        function_to_dict(py, &self.0)
    }

    fn __repr__(&self) -> String {
        format!(
            "FunctionCall(name={}, arguments={})",
            repr_str(&self.0.name),
            repr_str(&self.0.arguments)
        )
    }

    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }
}

fn function_to_dict<'py>(py: Python<'py>, f: &core::FunctionCall) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item(intern!(py, "name"), &f.name)?;
    d.set_item(intern!(py, "arguments"), &f.arguments)?;
    Ok(d)
}

// ---------------------------------------------------------------------------------------
// ToolCall

/// One tool call of an assistant message. `index` identifies the call across stream chunks.
#[pyclass(frozen, eq, from_py_object, module = "rillet", name = "ToolCall")]
#[derive(Clone, PartialEq)]
pub struct ToolCall(pub core::ToolCall);

#[pymethods]
impl ToolCall {
    #[new]
    #[pyo3(signature = (index=None, id="", r#type="function", function=None, extra=None))]
    fn new(
        index: Option<i64>,
        id: &str,
        r#type: &str,
        function: Option<FunctionCall>,
        extra: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        Ok(ToolCall(core::ToolCall {
            index,
            id: id.into(),
            kind: r#type.into(),
            function: function.map(|f| f.0).unwrap_or_default(),
            extra: extra_from_py(extra)?,
        }))
    }

    #[getter]
    fn index(&self) -> Option<i64> {
        self.0.index
    }

    #[getter]
    fn id(&self) -> &str {
        &self.0.id
    }

    #[getter(r#type)]
    fn kind(&self) -> &str {
        &self.0.kind
    }

    #[getter]
    fn function(&self) -> FunctionCall {
        FunctionCall(self.0.function.clone())
    }

    #[getter]
    fn extra(&self, py: Python<'_>) -> PyResult<Option<Py<PyDict>>> {
        extra_to_py(py, &self.0.extra)
    }

    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        tool_call_to_dict(py, &self.0)
    }

    #[staticmethod]
    fn from_dict(d: &Bound<'_, PyDict>) -> PyResult<Self> {
        tool_call_from_dict(d).map(ToolCall)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let t = &self.0;
        let index = t.index.map_or("None".to_owned(), |i| i.to_string());
        let mut s = format!(
            "ToolCall(index={index}, id={}, type={}, function=FunctionCall(name={}, arguments={})",
            repr_str(&t.id),
            repr_str(&t.kind),
            repr_str(&t.function.name),
            repr_str(&t.function.arguments)
        );
        if t.extra.is_some() {
            s.push_str(&format!(", extra={}", repr_extra(py, &t.extra)?));
        }
        s.push(')');
        Ok(s)
    }

    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }
}

fn tool_call_to_dict<'py>(py: Python<'py>, t: &core::ToolCall) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    if let Some(i) = t.index {
        d.set_item(intern!(py, "index"), i)?;
    }
    d.set_item(intern!(py, "id"), &t.id)?;
    d.set_item(intern!(py, "type"), &t.kind)?;
    d.set_item(intern!(py, "function"), function_to_dict(py, &t.function)?)?;
    if let Some(extra) = &t.extra {
        d.set_item(intern!(py, "extra"), map_to_py(py, extra)?)?;
    }
    Ok(d)
}

fn tool_call_from_dict(d: &Bound<'_, PyDict>) -> PyResult<core::ToolCall> {
    let mut tc = core::ToolCall {
        kind: core::ToolCall::FUNCTION.to_owned(),
        ..Default::default()
    };
    for (k, v) in d.iter() {
        let Ok(key) = k.cast::<PyString>() else {
            continue;
        };
        let key = key.to_str()?;
        match key {
            "index" => tc.index = v.extract()?,
            "id" => tc.id = str_value(&v, key)?,
            "type" if !v.is_none() => tc.kind = str_value(&v, key)?,
            "function" => {
                if let Some(f) = dict_value(&v, key)? {
                    tc.function.name = get_str(&f, intern!(f.py(), "name"))?;
                    tc.function.arguments = get_str(&f, intern!(f.py(), "arguments"))?;
                }
            }
            "extra" => tc.extra = dict_value(&v, key)?.map(|e| map_from_py(&e)).transpose()?,
            _ => {}
        }
    }
    Ok(tc)
}

/// Accepts a ToolCall or its dict form.
fn tool_call_from_py(obj: &Bound<'_, PyAny>) -> PyResult<core::ToolCall> {
    if let Ok(tc) = obj.cast::<ToolCall>() {
        return Ok(tc.get().0.clone());
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        return tool_call_from_dict(d);
    }
    Err(PyTypeError::new_err(format!(
        "tool_calls items must be ToolCall or dict, not {}",
        obj.get_type().name()?
    )))
}

fn tool_calls_from_py(list: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<core::ToolCall>> {
    let Some(list) = list.filter(|l| !l.is_none()) else {
        return Ok(Vec::new());
    };
    list.try_iter()?
        .map(|item| tool_call_from_py(&item?))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Usage and ResponseMeta

/// Token counts of a model response.
#[pyclass(frozen, eq, from_py_object, module = "rillet", name = "Usage")]
#[derive(Clone, PartialEq)]
pub struct Usage(pub core::Usage);

#[pymethods]
impl Usage {
    #[new]
    #[pyo3(signature = (prompt_tokens=0, completion_tokens=0, total_tokens=0, cached_tokens=0, reasoning_tokens=0))]
    fn new(
        prompt_tokens: u64,
        completion_tokens: u64,
        total_tokens: u64,
        cached_tokens: u64,
        reasoning_tokens: u64,
    ) -> Self {
        Usage(core::Usage {
            prompt_tokens,
            completion_tokens,
            total_tokens,
            cached_tokens,
            reasoning_tokens,
        })
    }

    #[getter]
    fn prompt_tokens(&self) -> u64 {
        self.0.prompt_tokens
    }

    #[getter]
    fn completion_tokens(&self) -> u64 {
        self.0.completion_tokens
    }

    #[getter]
    fn total_tokens(&self) -> u64 {
        self.0.total_tokens
    }

    #[getter]
    fn cached_tokens(&self) -> u64 {
        self.0.cached_tokens
    }

    #[getter]
    fn reasoning_tokens(&self) -> u64 {
        self.0.reasoning_tokens
    }

    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        usage_to_dict(py, &self.0)
    }

    fn __repr__(&self) -> String {
        let u = &self.0;
        format!(
            "Usage(prompt_tokens={}, completion_tokens={}, total_tokens={}, cached_tokens={}, reasoning_tokens={})",
            u.prompt_tokens, u.completion_tokens, u.total_tokens, u.cached_tokens, u.reasoning_tokens
        )
    }

    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }
}

/// OpenAI's usage shape: cached and reasoning tokens sit in `*_tokens_details`.
fn usage_to_dict<'py>(py: Python<'py>, u: &core::Usage) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item(intern!(py, "prompt_tokens"), u.prompt_tokens)?;
    d.set_item(intern!(py, "completion_tokens"), u.completion_tokens)?;
    d.set_item(intern!(py, "total_tokens"), u.total_tokens)?;
    let cached = PyDict::new(py);
    cached.set_item(intern!(py, "cached_tokens"), u.cached_tokens)?;
    d.set_item(intern!(py, "prompt_tokens_details"), cached)?;
    let reasoning = PyDict::new(py);
    reasoning.set_item(intern!(py, "reasoning_tokens"), u.reasoning_tokens)?;
    d.set_item(intern!(py, "completion_tokens_details"), reasoning)?;
    Ok(d)
}

fn usage_from_dict<'py>(d: &Bound<'py, PyDict>) -> PyResult<core::Usage> {
    let py = d.py();
    let detail = |outer: &Bound<'py, PyString>, inner: &Bound<'py, PyString>| -> PyResult<u64> {
        match get_dict(d, outer)? {
            Some(details) => Ok(get_opt(&details, inner)?.unwrap_or(0)),
            None => Ok(get_opt(d, inner)?.unwrap_or(0)),
        }
    };
    Ok(core::Usage {
        prompt_tokens: get_opt(d, intern!(d.py(), "prompt_tokens"))?.unwrap_or(0),
        completion_tokens: get_opt(d, intern!(d.py(), "completion_tokens"))?.unwrap_or(0),
        total_tokens: get_opt(d, intern!(d.py(), "total_tokens"))?.unwrap_or(0),
        cached_tokens: detail(
            intern!(py, "prompt_tokens_details"),
            intern!(py, "cached_tokens"),
        )?,
        reasoning_tokens: detail(
            intern!(py, "completion_tokens_details"),
            intern!(py, "reasoning_tokens"),
        )?,
    })
}

/// Metadata of a model response: why it finished and what it cost.
#[pyclass(frozen, eq, from_py_object, module = "rillet", name = "ResponseMeta")]
#[derive(Clone, PartialEq)]
pub struct ResponseMeta(pub core::ResponseMeta);

#[pymethods]
impl ResponseMeta {
    #[new]
    #[pyo3(signature = (finish_reason="", usage=None))]
    fn new(finish_reason: &str, usage: Option<Usage>) -> Self {
        ResponseMeta(core::ResponseMeta {
            finish_reason: finish_reason.into(),
            usage: usage.map(|u| u.0),
        })
    }

    #[getter]
    fn finish_reason(&self) -> &str {
        &self.0.finish_reason
    }

    #[getter]
    fn usage(&self) -> Option<Usage> {
        self.0.usage.map(Usage)
    }

    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        meta_to_dict(py, &self.0)
    }

    fn __repr__(&self) -> String {
        let usage = self.usage().map_or("None".to_owned(), |u| u.__repr__());
        format!(
            "ResponseMeta(finish_reason={}, usage={usage})",
            repr_str(&self.0.finish_reason)
        )
    }

    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }
}

fn meta_to_dict<'py>(py: Python<'py>, m: &core::ResponseMeta) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item(intern!(py, "finish_reason"), &m.finish_reason)?;
    match &m.usage {
        Some(u) => d.set_item(intern!(py, "usage"), usage_to_dict(py, u)?)?,
        None => d.set_item(intern!(py, "usage"), py.None())?,
    }
    Ok(d)
}

fn meta_from_dict(d: &Bound<'_, PyDict>) -> PyResult<core::ResponseMeta> {
    Ok(core::ResponseMeta {
        finish_reason: get_str(d, intern!(d.py(), "finish_reason"))?,
        usage: get_dict(d, intern!(d.py(), "usage"))?
            .as_ref()
            .map(usage_from_dict)
            .transpose()?,
    })
}

// ---------------------------------------------------------------------------------------
// ContentPart

/// One part of a multi-part user input: `ContentPart.text(...)` or `ContentPart.image(url)`.
#[pyclass(frozen, eq, from_py_object, module = "rillet", name = "ContentPart")]
#[derive(Clone, PartialEq)]
pub struct ContentPart(pub Part);

#[pymethods]
impl ContentPart {
    /// A text part (`ContentPart(text="...")`) or an image part (`ContentPart(image_url=url,
    /// detail="auto"|"low"|"high")`; the URL may be a ``data:`` URL).
    #[new]
    #[pyo3(signature = (text=None, *, image_url=None, detail=""))]
    fn new(text: Option<String>, image_url: Option<String>, detail: &str) -> PyResult<Self> {
        let detail = detail.to_owned();
        match (text, image_url) {
            (Some(t), None) => Ok(ContentPart(Part::Text(t))),
            (None, Some(url)) => Ok(ContentPart(Part::ImageUrl { url, detail })),
            _ => Err(PyValueError::new_err(
                "ContentPart takes exactly one of text= or image_url=",
            )),
        }
    }

    /// "text" or "image_url", as in OpenAI's content parts.
    #[getter(r#type)]
    fn kind(&self) -> &'static str {
        match self.0 {
            Part::Text(_) => "text",
            Part::ImageUrl { .. } => "image_url",
        }
    }

    /// The text of a text part, else None.
    #[getter(text)]
    fn get_text(&self) -> Option<&str> {
        match &self.0 {
            Part::Text(t) => Some(t),
            Part::ImageUrl { .. } => None,
        }
    }

    #[getter]
    fn url(&self) -> Option<&str> {
        match &self.0 {
            Part::ImageUrl { url, .. } => Some(url),
            Part::Text(_) => None,
        }
    }

    #[getter]
    fn detail(&self) -> Option<&str> {
        match &self.0 {
            Part::ImageUrl { detail, .. } => Some(detail),
            Part::Text(_) => None,
        }
    }

    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        part_to_dict(py, &self.0)
    }

    #[staticmethod]
    fn from_dict(d: &Bound<'_, PyDict>) -> PyResult<Self> {
        part_from_dict(d).map(ContentPart)
    }

    fn __repr__(&self) -> String {
        match &self.0 {
            Part::Text(t) => format!("ContentPart(text={})", repr_str(t)),
            Part::ImageUrl { url, detail } if detail.is_empty() => {
                format!("ContentPart(image_url={})", repr_str(url))
            }
            Part::ImageUrl { url, detail } => {
                format!(
                    "ContentPart(image_url={}, detail={})",
                    repr_str(url),
                    repr_str(detail)
                )
            }
        }
    }
}

fn part_to_dict<'py>(py: Python<'py>, p: &Part) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match p {
        Part::Text(t) => {
            d.set_item(intern!(py, "type"), "text")?;
            d.set_item(intern!(py, "text"), t)?;
        }
        Part::ImageUrl { url, detail } => {
            d.set_item(intern!(py, "type"), "image_url")?;
            let image = PyDict::new(py);
            image.set_item(intern!(py, "url"), url)?;
            if !detail.is_empty() {
                image.set_item(intern!(py, "detail"), detail)?;
            }
            d.set_item(intern!(py, "image_url"), image)?;
        }
    }
    Ok(d)
}

fn part_from_dict(d: &Bound<'_, PyDict>) -> PyResult<Part> {
    match get_str(d, intern!(d.py(), "type"))?.as_str() {
        "text" => Ok(Part::Text(get_str(d, intern!(d.py(), "text"))?)),
        "image_url" => {
            let image = get_dict(d, intern!(d.py(), "image_url"))?.ok_or_else(|| {
                PyValueError::new_err("an image_url part needs an 'image_url' dict")
            })?;
            Ok(Part::ImageUrl {
                url: get_str(&image, intern!(image.py(), "url"))?,
                detail: get_str(&image, intern!(image.py(), "detail"))?,
            })
        }
        other => Err(PyValueError::new_err(format!(
            "unsupported content part type {other:?}: expected 'text' or 'image_url'"
        ))),
    }
}

fn parts_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Vec<Part>> {
    let mut parts = Vec::new();
    for item in obj.try_iter()? {
        let item = item?;
        if let Ok(p) = item.cast::<ContentPart>() {
            parts.push(p.get().0.clone());
        } else if let Ok(d) = item.cast::<PyDict>() {
            parts.push(part_from_dict(d)?);
        } else if let Ok(s) = item.cast::<PyString>() {
            parts.push(Part::Text(s.to_str()?.to_owned()));
        } else {
            return Err(PyTypeError::new_err(format!(
                "content parts must be ContentPart, dict or str, not {}",
                item.get_type().name()?
            )));
        }
    }
    Ok(parts)
}

// ---------------------------------------------------------------------------------------
// dict access helpers

fn get_opt<'py, T>(d: &Bound<'py, PyDict>, key: &Bound<'py, PyString>) -> PyResult<Option<T>>
where
    T: for<'a> FromPyObject<'a, 'py>,
    for<'a> <T as FromPyObject<'a, 'py>>::Error: Into<PyErr>,
{
    match d.get_item(key)? {
        Some(v) if !v.is_none() => v
            .extract::<T>()
            .map(Some)
            .map_err(|e| PyTypeError::new_err(format!("bad value for {key:?}: {}", e.into()))),
        _ => Ok(None),
    }
}

fn get_str<'py>(d: &Bound<'py, PyDict>, key: &Bound<'py, PyString>) -> PyResult<String> {
    Ok(get_opt::<String>(d, key)?.unwrap_or_default())
}

fn get_dict<'py>(
    d: &Bound<'py, PyDict>,
    key: &Bound<'py, PyString>,
) -> PyResult<Option<Bound<'py, PyDict>>> {
    match d.get_item(key)? {
        Some(v) if !v.is_none() => Ok(Some(v.cast_into::<PyDict>().map_err(|e| {
            PyTypeError::new_err(format!("{key:?} must be a dict: {}", PyErr::from(e)))
        })?)),
        _ => Ok(None),
    }
}

// ---------------------------------------------------------------------------------------
// Message

/// A chat message (Eino's `schema.Message`). Mutable; safe to share between threads.
#[pyclass(frozen, module = "rillet", name = "Message")]
pub struct Message {
    inner: Mutex<core::Message>,
}

impl Message {
    pub fn wrap(m: core::Message) -> Self {
        Message {
            inner: Mutex::new(m),
        }
    }

    /// A copy of the fields, taken under the lock (used before calling into Python).
    pub fn snapshot(&self) -> core::Message {
        self.inner.lock().clone()
    }

    /// Runs `f` on the fields under the lock. `f` must not call into Python.
    pub fn with<R>(&self, f: impl FnOnce(&core::Message) -> R) -> R {
        f(&self.inner.lock())
    }
}

/// Sets `content` from a str, or `user_input_multi_content` from a list of parts.
fn set_content(m: &mut core::Message, content: &Bound<'_, PyAny>) -> PyResult<()> {
    if let Ok(s) = content.cast::<PyString>() {
        m.content = s.to_str()?.to_owned();
    } else if !content.is_none() {
        m.user_input_multi_content = parts_from_py(content)?;
    }
    Ok(())
}

#[pymethods]
impl Message {
    #[new]
    #[pyo3(signature = (
        role="", content=None, name="", reasoning_content="",
        tool_calls=None, tool_call_id="", tool_name="", response_meta=None,
        extra=None, *, user_input_multi_content=None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        role: &str,
        content: Option<&Bound<'_, PyAny>>,
        name: &str,
        reasoning_content: &str,
        tool_calls: Option<&Bound<'_, PyAny>>,
        tool_call_id: &str,
        tool_name: &str,
        response_meta: Option<ResponseMeta>,
        extra: Option<&Bound<'_, PyDict>>,
        user_input_multi_content: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let mut m = core::Message {
            role: role.into(),
            name: name.into(),
            reasoning_content: reasoning_content.into(),
            tool_calls: tool_calls_from_py(tool_calls)?,
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            response_meta: response_meta.map(|r| r.0),
            extra: extra_from_py(extra)?,
            ..Default::default()
        };
        if let Some(c) = content {
            set_content(&mut m, c)?;
        }
        if let Some(parts) = user_input_multi_content.filter(|p| !p.is_none()) {
            m.user_input_multi_content = parts_from_py(parts)?;
        }
        Ok(Message::wrap(m))
    }

    /// A system message.
    #[staticmethod]
    #[pyo3(signature = (content, *, name=""))]
    fn system(content: String, name: &str) -> Self {
        Message::wrap(core::Message {
            role: "system".into(),
            content,
            name: name.into(),
            ..Default::default()
        })
    }

    /// A user message; `content` is a str or a list of parts (ContentPart, dict or str).
    #[staticmethod]
    #[pyo3(signature = (content, *, name=""))]
    fn user(content: &Bound<'_, PyAny>, name: &str) -> PyResult<Self> {
        let mut m = core::Message {
            role: "user".into(),
            name: name.into(),
            ..Default::default()
        };
        set_content(&mut m, content)?;
        Ok(Message::wrap(m))
    }

    /// An assistant message, optionally with tool calls.
    #[staticmethod]
    #[pyo3(signature = (content="", tool_calls=None, *, name="", reasoning_content=""))]
    fn assistant(
        content: &str,
        tool_calls: Option<&Bound<'_, PyAny>>,
        name: &str,
        reasoning_content: &str,
    ) -> PyResult<Self> {
        Ok(Message::wrap(core::Message {
            role: "assistant".into(),
            content: content.into(),
            name: name.into(),
            reasoning_content: reasoning_content.into(),
            tool_calls: tool_calls_from_py(tool_calls)?,
            ..Default::default()
        }))
    }

    /// The result of the tool call `tool_call_id`.
    #[staticmethod]
    #[pyo3(signature = (content, tool_call_id, tool_name=""))]
    fn tool_message(content: String, tool_call_id: String, tool_name: &str) -> Self {
        let tool_name = tool_name.into();
        Message::wrap(core::Message {
            role: "tool".into(),
            content,
            tool_call_id,
            tool_name,
            ..Default::default()
        })
    }

    #[getter]
    fn role(&self) -> String {
        self.inner.lock().role.clone()
    }

    #[setter]
    fn set_role(&self, v: String) {
        self.inner.lock().role = v;
    }

    #[getter]
    fn content<'py>(&self, py: Python<'py>) -> Bound<'py, PyString> {
        PyString::new(py, &self.inner.lock().content)
    }

    /// A str sets the text; a list of parts sets `user_input_multi_content`.
    #[setter(content)]
    fn set_content_attr(&self, v: &Bound<'_, PyAny>) -> PyResult<()> {
        if let Ok(s) = v.cast::<PyString>() {
            let text = s.to_str()?.to_owned();
            self.inner.lock().content = text;
            return Ok(());
        }
        let parts = parts_from_py(v)?;
        self.inner.lock().user_input_multi_content = parts;
        Ok(())
    }

    #[getter]
    fn user_input_multi_content(&self) -> Vec<ContentPart> {
        self.inner
            .lock()
            .user_input_multi_content
            .iter()
            .cloned()
            .map(ContentPart)
            .collect()
    }

    #[setter]
    fn set_user_input_multi_content(&self, v: &Bound<'_, PyAny>) -> PyResult<()> {
        let parts = if v.is_none() {
            Vec::new()
        } else {
            parts_from_py(v)?
        };
        self.inner.lock().user_input_multi_content = parts;
        Ok(())
    }

    #[getter]
    fn name(&self) -> String {
        self.inner.lock().name.clone()
    }

    #[setter]
    fn set_name(&self, v: String) {
        self.inner.lock().name = v;
    }

    #[getter]
    fn reasoning_content(&self) -> String {
        self.inner.lock().reasoning_content.clone()
    }

    #[setter]
    fn set_reasoning_content(&self, v: String) {
        self.inner.lock().reasoning_content = v;
    }

    /// A new list each time: assign `msg.tool_calls = [...]` to change the calls.
    #[getter]
    fn tool_calls(&self) -> Vec<ToolCall> {
        self.inner
            .lock()
            .tool_calls
            .iter()
            .cloned()
            .map(ToolCall)
            .collect()
    }

    #[setter]
    fn set_tool_calls(&self, v: &Bound<'_, PyAny>) -> PyResult<()> {
        let calls = tool_calls_from_py(Some(v))?;
        // The old calls may hold Python values: released after the lock, not under it.
        let old = std::mem::replace(&mut self.inner.lock().tool_calls, calls);
        drop(old);
        Ok(())
    }

    #[getter]
    fn tool_call_id(&self) -> String {
        self.inner.lock().tool_call_id.clone()
    }

    #[setter]
    fn set_tool_call_id(&self, v: String) {
        self.inner.lock().tool_call_id = v;
    }

    #[getter]
    fn tool_name(&self) -> String {
        self.inner.lock().tool_name.clone()
    }

    #[setter]
    fn set_tool_name(&self, v: String) {
        self.inner.lock().tool_name = v;
    }

    #[getter]
    fn response_meta(&self) -> Option<ResponseMeta> {
        self.inner.lock().response_meta.clone().map(ResponseMeta)
    }

    #[setter]
    fn set_response_meta(&self, v: Option<ResponseMeta>) {
        self.inner.lock().response_meta = v.map(|r| r.0);
    }

    /// A new dict each time: assign `msg.extra = {...}` to change it.
    #[getter]
    fn extra(&self, py: Python<'_>) -> PyResult<Option<Py<PyDict>>> {
        let extra = self.inner.lock().extra.clone();
        extra_to_py(py, &extra)
    }

    #[setter]
    fn set_extra(&self, v: Option<&Bound<'_, PyDict>>) -> PyResult<()> {
        let extra = extra_from_py(v)?;
        // The old values may be Python objects: released after the lock, not under it.
        let old = std::mem::replace(&mut self.inner.lock().extra, extra);
        drop(old);
        Ok(())
    }

    /// The OpenAI chat-completions dict of this message (plus rillet's own keys
    /// `tool_name`, `response_meta` and `extra` when set). `from_dict` reads it back.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        message_to_dict(py, &self.snapshot())
    }

    #[staticmethod]
    fn from_dict(d: &Bound<'_, PyDict>) -> PyResult<Self> {
        message_from_dict(d).map(Message::wrap)
    }

    fn copy(&self) -> Self {
        Message::wrap(self.snapshot())
    }

    fn __copy__(&self) -> Self {
        self.copy()
    }

    fn __deepcopy__(&self, py: Python<'_>, memo: &Bound<'_, PyAny>) -> PyResult<Self> {
        let mut m = self.snapshot();
        if let Some(extra) = &m.extra {
            let deepcopy = py.import("copy")?.getattr("deepcopy")?;
            let copied = deepcopy.call1((map_to_py(py, extra)?, memo))?;
            m.extra = Some(map_from_py(copied.cast::<PyDict>()?)?);
        }
        Ok(Message::wrap(m))
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyDict>,))> {
        let from_dict = slf.get_type().getattr("from_dict")?;
        Ok((from_dict, (slf.get().to_dict(slf.py())?,)))
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> Py<PyAny> {
        let Ok(other) = other.cast::<Message>() else {
            return not_implemented(py);
        };
        // Compare snapshots: extra values may call Python's ==, never under a lock.
        let equal = std::ptr::eq(self, other.get()) || self.snapshot() == other.get().snapshot();
        PyBool::new(py, equal).to_owned().into_any().unbind()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        message_repr(py, &self.snapshot())
    }
}

fn message_repr(py: Python<'_>, m: &core::Message) -> PyResult<String> {
    let mut fields = vec![
        format!("role={}", repr_str(&m.role)),
        format!("content={}", repr_str(&m.content)),
    ];
    let mut text = |key: &str, v: &str| {
        if !v.is_empty() {
            fields.push(format!("{key}={}", repr_str(v)));
        }
    };
    text("name", &m.name);
    text("reasoning_content", &m.reasoning_content);
    text("tool_call_id", &m.tool_call_id);
    text("tool_name", &m.tool_name);
    if !m.user_input_multi_content.is_empty() {
        let parts: Vec<_> = m
            .user_input_multi_content
            .iter()
            .map(|p| ContentPart(p.clone()).__repr__())
            .collect();
        fields.push(format!("user_input_multi_content=[{}]", parts.join(", ")));
    }
    if !m.tool_calls.is_empty() {
        let calls: PyResult<Vec<_>> = m
            .tool_calls
            .iter()
            .map(|t| ToolCall(t.clone()).__repr__(py))
            .collect();
        fields.push(format!("tool_calls=[{}]", calls?.join(", ")));
    }
    if let Some(meta) = &m.response_meta {
        fields.push(format!(
            "response_meta={}",
            ResponseMeta(meta.clone()).__repr__()
        ));
    }
    if m.extra.is_some() {
        fields.push(format!("extra={}", repr_extra(py, &m.extra)?));
    }
    Ok(format!("Message({})", fields.join(", ")))
}

pub(crate) fn message_to_dict<'py>(
    py: Python<'py>,
    m: &core::Message,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item(intern!(py, "role"), &m.role)?;
    if m.user_input_multi_content.is_empty() {
        d.set_item(intern!(py, "content"), &m.content)?;
    } else {
        let parts: PyResult<Vec<_>> = m
            .user_input_multi_content
            .iter()
            .map(|p| part_to_dict(py, p))
            .collect();
        d.set_item(intern!(py, "content"), PyList::new(py, parts?)?)?;
        if !m.content.is_empty() {
            // Both set: keep the text too, so the dict round-trips exactly.
            d.set_item(intern!(py, "content_text"), &m.content)?;
        }
    }
    let text = |key: &str, v: &str| {
        if v.is_empty() {
            Ok(())
        } else {
            d.set_item(key, v)
        }
    };
    text("name", &m.name)?;
    text("reasoning_content", &m.reasoning_content)?;
    text("tool_call_id", &m.tool_call_id)?;
    text("tool_name", &m.tool_name)?;
    if !m.tool_calls.is_empty() {
        let calls: PyResult<Vec<_>> = m
            .tool_calls
            .iter()
            .map(|t| tool_call_to_dict(py, t))
            .collect();
        d.set_item(intern!(py, "tool_calls"), PyList::new(py, calls?)?)?;
    }
    if let Some(meta) = &m.response_meta {
        d.set_item(intern!(py, "response_meta"), meta_to_dict(py, meta)?)?;
    }
    if let Some(extra) = &m.extra {
        d.set_item(intern!(py, "extra"), map_to_py(py, extra)?)?;
    }
    Ok(d)
}

/// Reads the dict form. It walks the dict's items rather than looking up every field: a
/// streamed chunk holds one or two keys. Unknown keys (OpenAI's `refusal`, ...) are ignored.
pub(crate) fn message_from_dict(d: &Bound<'_, PyDict>) -> PyResult<core::Message> {
    let mut m = core::Message::default();
    let mut content_text = None;
    for (k, v) in d.iter() {
        let Ok(key) = k.cast::<PyString>() else {
            continue;
        };
        let key = key.to_str()?;
        match key {
            "role" => m.role = str_value(&v, key)?,
            "content" => set_content(&mut m, &v)?,
            "content_text" => content_text = Some(str_value(&v, key)?),
            "name" => m.name = str_value(&v, key)?,
            "reasoning_content" => m.reasoning_content = str_value(&v, key)?,
            "tool_calls" => m.tool_calls = tool_calls_from_py(Some(&v))?,
            "tool_call_id" => m.tool_call_id = str_value(&v, key)?,
            "tool_name" => m.tool_name = str_value(&v, key)?,
            "response_meta" => {
                m.response_meta = dict_value(&v, key)?
                    .map(|d| meta_from_dict(&d))
                    .transpose()?
            }
            "extra" => m.extra = dict_value(&v, key)?.map(|d| map_from_py(&d)).transpose()?,
            _ => {}
        }
    }
    if let Some(text) = content_text {
        m.content = text;
    }
    Ok(m)
}

/// A str field of a dict form; None reads as "".
fn str_value(v: &Bound<'_, PyAny>, key: &str) -> PyResult<String> {
    if v.is_none() {
        return Ok(String::new());
    }
    match v.cast::<PyString>() {
        Ok(s) => Ok(s.to_str()?.to_owned()),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{key:?} must be a str, not {}",
            v.get_type().name()?
        ))),
    }
}

fn dict_value<'py>(v: &Bound<'py, PyAny>, key: &str) -> PyResult<Option<Bound<'py, PyDict>>> {
    if v.is_none() {
        return Ok(None);
    }
    match v.cast::<PyDict>() {
        Ok(d) => Ok(Some(d.clone())),
        Err(_) => Err(PyTypeError::new_err(format!(
            "{key:?} must be a dict, not {}",
            v.get_type().name()?
        ))),
    }
}

/// Reads a chunk for concatenation: a Message (borrowed, no copy) or its dict form.
pub(crate) fn with_chunk<R>(
    obj: &Bound<'_, PyAny>,
    f: impl FnOnce(&core::Message) -> R,
) -> PyResult<R> {
    if let Ok(m) = obj.cast::<Message>() {
        return Ok(m.get().with(f));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        return Ok(f(&message_from_dict(d)?));
    }
    Err(PyTypeError::new_err(format!(
        "message chunks must be rillet.Message or dict, not {}",
        obj.get_type().name()?
    )))
}
