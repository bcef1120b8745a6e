//! Python classes over [`crate::message`]: `Message`, `ToolCall`, `FunctionCall`,
//! `ResponseMeta`, `Usage` and `ContentPart`, plus their dict form (OpenAI chat-completions).
//!
//! Mutability, chosen deliberately: `Message` is mutable like Eino's struct and like what
//! Python users expect (`msg.content = "..."`), but it is a `frozen` pyclass whose fields sit
//! behind an interior mutex, so it is safe on free-threaded builds. The parts of a message
//! (`ToolCall`, `FunctionCall`, `ResponseMeta`, `Usage`, `ContentPart`) are immutable values;
//! to change one, build a new one and assign the field. Container getters return read-only
//! views (`tool_calls` and `user_input_multi_content` tuples, `extra` a read-only mapping),
//! so an in-place edit such as `msg.tool_calls.append(x)` fails loudly instead of changing
//! a copy: assign the field to change it.
//!
//! Every constructor takes a part either as its class or as its dict form (`ToolCall` or
//! dict, `FunctionCall` or dict, ...), and rejects anything else with a TypeError naming the
//! field and what it accepts.

use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString};

use crate::message::{self as core, Map, Opaque, Part, Value};
use crate::parts;

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

pub(crate) fn value_from_py(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
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
    } else if is_mapping_proxy(obj) {
        // What the `extra` getters return: reading it back stores its contents.
        return Ok(Value::Map(map_from_py(&mapping_to_dict(obj)?)?));
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

fn is_mapping_proxy(obj: &Bound<'_, PyAny>) -> bool {
    obj.get_type()
        .name()
        .is_ok_and(|n| n.to_str().is_ok_and(|n| n == "mappingproxy"))
}

/// A plain dict of a mapping's items.
fn mapping_to_dict<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(obj.py());
    d.update(obj.cast::<pyo3::types::PyMapping>()?)?;
    Ok(d)
}

/// A read-only view (`types.MappingProxyType`) of a fresh dict of `m`, nested maps too.
fn map_to_proxy<'py>(py: Python<'py>, m: &Map) -> PyResult<Bound<'py, PyAny>> {
    let d = PyDict::new(py);
    for (k, v) in m {
        match v {
            Value::Map(inner) => d.set_item(k, map_to_proxy(py, inner)?)?,
            v => d.set_item(k, value_to_py(py, v)?)?,
        }
    }
    Ok(pyo3::types::PyMappingProxy::new(py, d.cast::<pyo3::types::PyMapping>()?).into_any())
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

/// An `extra` argument: a dict or any other mapping (e.g. another message's `extra`), or None.
pub(crate) fn extra_from_py(
    extra: Option<&Bound<'_, PyAny>>,
    field: &str,
) -> PyResult<Option<Map>> {
    let Some(extra) = extra.filter(|e| !e.is_none()) else {
        return Ok(None);
    };
    if let Ok(d) = extra.cast::<PyDict>() {
        return map_from_py(d).map(Some);
    }
    if extra.cast::<pyo3::types::PyMapping>().is_ok() {
        return map_from_py(&mapping_to_dict(extra)?).map(Some);
    }
    Err(expected(field, "a dict with str keys (or None)", extra))
}

/// The `extra` getters: a read-only mapping, so `msg.extra["k"] = v` raises instead of
/// changing a copy.
pub(crate) fn extra_to_py(py: Python<'_>, extra: &Option<Map>) -> PyResult<Option<Py<PyAny>>> {
    extra
        .as_ref()
        .map(|m| map_to_proxy(py, m).map(Bound::unbind))
        .transpose()
}

/// The TypeError of a constructor or setter: `Message.content: expected str or ..., got int`.
pub(crate) fn expected(field: &str, what: &str, got: &Bound<'_, PyAny>) -> PyErr {
    let ty = got
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    PyTypeError::new_err(format!("{field}: expected {what}, got {ty}"))
}

/// The items of a list or tuple argument; anything else is a TypeError naming `field`.
pub(crate) fn list_items<'py>(
    obj: &Bound<'py, PyAny>,
    field: &str,
    what: &str,
) -> PyResult<Vec<Bound<'py, PyAny>>> {
    if let Ok(l) = obj.cast::<PyList>() {
        return Ok(l.iter().collect());
    }
    if let Ok(t) = obj.cast::<pyo3::types::PyTuple>() {
        return Ok(t.iter().collect());
    }
    Err(expected(field, what, obj))
}

// ---------------------------------------------------------------------------------------
// repr helpers

/// A Python-style repr of a str (single quotes, common escapes), without calling Python.
pub(crate) fn repr_str(s: &str) -> String {
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

pub(crate) fn repr_extra(py: Python<'_>, extra: &Option<Map>) -> PyResult<String> {
    match extra {
        Some(m) => Ok(map_to_py(py, m)?.repr()?.to_string()),
        None => Ok("None".into()),
    }
}

pub(crate) fn not_implemented(py: Python<'_>) -> Py<PyAny> {
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

    /// The name of the function (tool) to call.
    #[getter]
    fn name(&self) -> &str {
        &self.0.name
    }

    /// The arguments as the model wrote them: a JSON text, not parsed (see
    /// `parsed_arguments()`).
    #[getter]
    fn arguments(&self) -> &str {
        &self.0.arguments
    }

    /// The arguments decoded from JSON (usually a dict); empty arguments give `{}`. Raises
    /// ValueError naming the function when they are not valid JSON.
    fn parsed_arguments<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        parse_arguments(py, &self.0, None)
    }

    /// `{"name": ..., "arguments": ...}`, as in OpenAI's chat completions.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        function_to_dict(py, &self.0)
    }

    /// Reads `{"name": ..., "arguments": ...}`; missing keys are empty.
    #[staticmethod]
    fn from_dict(d: &Bound<'_, PyDict>) -> PyResult<Self> {
        function_from_dict(d).map(FunctionCall)
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

/// `json.loads` of the arguments; an error names the function (and the call id if known).
fn parse_arguments<'py>(
    py: Python<'py>,
    f: &core::FunctionCall,
    call_id: Option<&str>,
) -> PyResult<Bound<'py, PyAny>> {
    if f.arguments.trim().is_empty() {
        return Ok(PyDict::new(py).into_any());
    }
    let loads = py.import("json")?.getattr("loads")?;
    loads.call1((&f.arguments,)).map_err(|e| {
        let call = match call_id {
            Some(id) if !id.is_empty() => format!("tool call {} ", repr_str(id)),
            _ => String::new(),
        };
        let err = PyValueError::new_err(format!(
            "the arguments of {call}function {} are not valid JSON ({}): {}",
            repr_str(&f.name),
            e.value(py),
            repr_str(&f.arguments),
        ));
        err.set_cause(py, Some(e));
        err
    })
}

fn function_from_dict(d: &Bound<'_, PyDict>) -> PyResult<core::FunctionCall> {
    Ok(core::FunctionCall {
        name: get_str(d, intern!(d.py(), "name"))?,
        arguments: get_str(d, intern!(d.py(), "arguments"))?,
    })
}

/// A FunctionCall argument: the class or its dict form.
fn function_from_py(obj: &Bound<'_, PyAny>, field: &str) -> PyResult<core::FunctionCall> {
    if let Ok(f) = obj.cast::<FunctionCall>() {
        return Ok(f.get().0.clone());
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        return function_from_dict(d);
    }
    Err(expected(field, "FunctionCall | dict (or None)", obj))
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
        function: Option<&Bound<'_, PyAny>>,
        extra: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let function = match function.filter(|f| !f.is_none()) {
            Some(f) => function_from_py(f, "ToolCall.function")?,
            None => core::FunctionCall::default(),
        };
        Ok(ToolCall(core::ToolCall {
            index,
            id: id.into(),
            kind: r#type.into(),
            function,
            extra: extra_from_py(extra, "ToolCall.extra")?,
        }))
    }

    /// Which call a streamed delta belongs to (None outside streams).
    #[getter]
    fn index(&self) -> Option<i64> {
        self.0.index
    }

    /// The call's id, which the tool's answer (`Message.tool_call_id`) refers to.
    #[getter]
    fn id(&self) -> &str {
        &self.0.id
    }

    /// The kind of call: "function" (OpenAI's only kind today), or "" when a delta leaves
    /// it unset.
    #[getter(r#type)]
    fn kind(&self) -> &str {
        &self.0.kind
    }

    /// The function to call and its JSON arguments.
    #[getter]
    fn function(&self) -> FunctionCall {
        FunctionCall(self.0.function.clone())
    }

    /// Provider-specific data, as a read-only mapping (None when unset).
    #[getter]
    fn extra(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        extra_to_py(py, &self.0.extra)
    }

    /// The function's arguments decoded from JSON; raises ValueError naming the call id
    /// and the function when they are not valid JSON.
    fn parsed_arguments<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        parse_arguments(py, &self.0.function, Some(&self.0.id))
    }

    /// The OpenAI chat-completions dict (plus `index` and `extra` when set).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        tool_call_to_dict(py, &self.0)
    }

    /// Reads the dict form. A missing "type" stays unset (""), as in a streamed delta.
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

pub(crate) fn tool_call_to_dict<'py>(
    py: Python<'py>,
    t: &core::ToolCall,
) -> PyResult<Bound<'py, PyDict>> {
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
    // A missing type is unset, not "function": a later delta of the same call may carry
    // the real one (Eino keeps the first non-empty type).
    let mut tc = core::ToolCall::default();
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
            "extra" => tc.extra = extra_from_py(Some(&v), "ToolCall.extra")?,
            _ => {}
        }
    }
    Ok(tc)
}

/// Accepts a ToolCall or its dict form; `i` is its place in the list, for errors.
fn tool_call_from_py(obj: &Bound<'_, PyAny>, i: usize) -> PyResult<core::ToolCall> {
    if let Ok(tc) = obj.cast::<ToolCall>() {
        return Ok(tc.get().0.clone());
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        return tool_call_from_dict(d);
    }
    Err(expected(
        &format!("Message.tool_calls[{i}]"),
        "ToolCall | dict",
        obj,
    ))
}

fn tool_calls_from_py(list: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<core::ToolCall>> {
    let Some(list) = list.filter(|l| !l.is_none()) else {
        return Ok(Vec::new());
    };
    list_items(
        list,
        "Message.tool_calls",
        "a list of ToolCall | dict (or None)",
    )?
    .iter()
    .enumerate()
    .map(|(i, item)| tool_call_from_py(item, i))
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

    /// Tokens of the prompt (input).
    #[getter]
    fn prompt_tokens(&self) -> u64 {
        self.0.prompt_tokens
    }

    /// Tokens of the completion (output).
    #[getter]
    fn completion_tokens(&self) -> u64 {
        self.0.completion_tokens
    }

    /// Prompt plus completion tokens, as the provider reported them.
    #[getter]
    fn total_tokens(&self) -> u64 {
        self.0.total_tokens
    }

    /// Prompt tokens served from the provider's cache (a part of prompt_tokens).
    #[getter]
    fn cached_tokens(&self) -> u64 {
        self.0.cached_tokens
    }

    /// Completion tokens spent on reasoning (a part of completion_tokens).
    #[getter]
    fn reasoning_tokens(&self) -> u64 {
        self.0.reasoning_tokens
    }

    /// OpenAI's usage dict (cached and reasoning tokens in `*_tokens_details`).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        usage_to_dict(py, &self.0)
    }

    /// Reads OpenAI's usage dict (details nested or flat); missing counts are 0.
    #[staticmethod]
    fn from_dict(d: &Bound<'_, PyDict>) -> PyResult<Self> {
        usage_from_dict(d).map(Usage)
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
    fn new(finish_reason: &str, usage: Option<&Bound<'_, PyAny>>) -> PyResult<Self> {
        let usage = match usage.filter(|u| !u.is_none()) {
            Some(u) => Some(usage_from_py(u, "ResponseMeta.usage")?),
            None => None,
        };
        Ok(ResponseMeta(core::ResponseMeta {
            finish_reason: finish_reason.into(),
            usage,
        }))
    }

    /// Why the model stopped: "stop", "length", "tool_calls", ... ("" when unknown).
    #[getter]
    fn finish_reason(&self) -> &str {
        &self.0.finish_reason
    }

    /// The token counts, when the provider reported them.
    #[getter]
    fn usage(&self) -> Option<Usage> {
        self.0.usage.map(Usage)
    }

    /// `{"finish_reason": ..., "usage": {...} | None}`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        meta_to_dict(py, &self.0)
    }

    /// Reads the dict form `to_dict` writes.
    #[staticmethod]
    fn from_dict(d: &Bound<'_, PyDict>) -> PyResult<Self> {
        meta_from_dict(d).map(ResponseMeta)
    }

    pub(crate) fn __repr__(&self) -> String {
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

fn usage_from_py(obj: &Bound<'_, PyAny>, field: &str) -> PyResult<core::Usage> {
    if let Ok(u) = obj.cast::<Usage>() {
        return Ok(u.get().0);
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        return usage_from_dict(d);
    }
    Err(expected(field, "Usage | dict (or None)", obj))
}

/// A ResponseMeta argument: the class or its dict form; None is None.
pub(crate) fn meta_from_py(
    obj: Option<&Bound<'_, PyAny>>,
    field: &str,
) -> PyResult<Option<core::ResponseMeta>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    if let Ok(m) = obj.cast::<ResponseMeta>() {
        return Ok(Some(m.get().0.clone()));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        return meta_from_dict(d).map(Some);
    }
    Err(expected(field, "ResponseMeta | dict (or None)", obj))
}

pub(crate) fn meta_to_dict<'py>(
    py: Python<'py>,
    m: &core::ResponseMeta,
) -> PyResult<Bound<'py, PyDict>> {
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
        usage: match d.get_item(intern!(d.py(), "usage"))? {
            Some(u) if !u.is_none() => Some(usage_from_py(&u, "ResponseMeta.usage")?),
            _ => None,
        },
    })
}

// ---------------------------------------------------------------------------------------
// ContentPart

/// One part of a multi-part user input: text (`ContentPart("...")`), an image
/// (`ContentPart.image(bytes_or_url)`) or a file (`ContentPart.file(bytes, filename=...)` or
/// `ContentPart.file(file_id=...)`).
#[pyclass(frozen, eq, from_py_object, module = "rillet", name = "ContentPart")]
#[derive(Clone, PartialEq)]
pub struct ContentPart(pub Part);

/// The bytes of `obj` (bytes or bytearray), else None.
fn bytes_of(obj: &Bound<'_, PyAny>) -> Option<Vec<u8>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        Some(b.as_bytes().to_vec())
    } else if let Ok(b) = obj.cast::<PyByteArray>() {
        Some(b.to_vec())
    } else {
        None
    }
}

fn non_empty(data: Vec<u8>, what: &str) -> PyResult<Vec<u8>> {
    if data.is_empty() {
        Err(PyValueError::new_err(format!(
            "{what} got empty bytes: pass the file's contents (e.g. Path(...).read_bytes())"
        )))
    } else {
        Ok(data)
    }
}

fn image_from_bytes(data: Vec<u8>, mime_type: Option<&str>, detail: String) -> PyResult<Part> {
    let data = non_empty(data, "ContentPart.image()")?;
    let supported = parts::IMAGE_MIME_TYPES.join(", ");
    let mime = match mime_type {
        Some(m) if parts::IMAGE_MIME_TYPES.contains(&m) => m,
        Some(m) => {
            return Err(PyValueError::new_err(format!(
                "unsupported image MIME type {m:?}: pass one of {supported}"
            )))
        }
        None => parts::sniff_image(&data).ok_or_else(|| {
            PyValueError::new_err(format!(
                "cannot tell the image type from its bytes: pass mime_type= (one of {supported})"
            ))
        })?,
    };
    Ok(Part::ImageUrl {
        url: parts::data_url(mime, &data),
        detail,
    })
}

/// The MIME type of a file named `filename`, from a few common extensions.
fn mime_from_filename(filename: &str) -> Option<&'static str> {
    let ext = filename.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match ext.as_str() {
        "pdf" => "application/pdf",
        "txt" => "text/plain",
        "md" => "text/markdown",
        "csv" => "text/csv",
        "html" | "htm" => "text/html",
        "json" => "application/json",
        _ => return None,
    })
}

fn file_from_bytes(data: Vec<u8>, filename: String, mime_type: Option<&str>) -> PyResult<Part> {
    let data = non_empty(data, "ContentPart.file()")?;
    if filename.is_empty() {
        return Err(PyValueError::new_err(
            "ContentPart.file() from bytes needs filename= (providers show it to the model)",
        ));
    }
    let mime = match mime_type {
        Some(m) if parts::is_mime(m) => m,
        Some(m) => {
            return Err(PyValueError::new_err(format!(
                "unknown MIME type {m:?}: pass a type/subtype such as \"application/pdf\""
            )))
        }
        None => parts::sniff_file(&data)
            .or_else(|| mime_from_filename(&filename))
            .ok_or_else(|| {
                PyValueError::new_err(format!(
                    "cannot tell the MIME type of {filename:?}: pass mime_type= (e.g. \"application/pdf\")"
                ))
            })?,
    };
    Ok(Part::File {
        filename,
        file_data: parts::data_url(mime, &data),
        file_id: String::new(),
    })
}

/// A `data:` URL shortened for a repr (other strings as they are).
fn repr_long(s: &str) -> String {
    const KEEP: usize = 48;
    match s
        .char_indices()
        .nth(KEEP)
        .filter(|_| s.starts_with("data:"))
    {
        Some((i, _)) => format!("{}...({} chars)", repr_str(&s[..i]), s.len()),
        None => repr_str(s),
    }
}

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

    /// An image part from its bytes (sent base64-encoded in a ``data:`` URL; the MIME type is
    /// read from the bytes unless given) or from an http(s) or ``data:`` URL.
    #[staticmethod]
    #[pyo3(signature = (source, *, mime_type=None, detail=""))]
    fn image(source: &Bound<'_, PyAny>, mime_type: Option<&str>, detail: &str) -> PyResult<Self> {
        let detail = detail.to_owned();
        if let Some(data) = bytes_of(source) {
            return image_from_bytes(data, mime_type, detail).map(ContentPart);
        }
        let Ok(url) = source.cast::<PyString>() else {
            return Err(expected(
                "ContentPart.image(source)",
                "bytes or a URL str",
                source,
            ));
        };
        let url = url.to_str()?.to_owned();
        if mime_type.is_some() {
            return Err(PyValueError::new_err(
                "ContentPart.image(url) takes no mime_type= (a data: URL carries its own)",
            ));
        }
        if let Some(problem) = parts::image_url_error(&url) {
            return Err(PyValueError::new_err(problem));
        }
        Ok(ContentPart(Part::ImageUrl { url, detail }))
    }

    /// A file part: its bytes (sent base64-encoded in a ``data:`` URL) with its ``filename``
    /// and MIME type (read from PDF bytes or the filename's extension unless given), or the
    /// id of a file uploaded to the provider (``file_id=``).
    #[staticmethod]
    #[pyo3(signature = (data=None, *, filename="", mime_type=None, file_id=None))]
    fn file(
        data: Option<&Bound<'_, PyAny>>,
        filename: &str,
        mime_type: Option<&str>,
        file_id: Option<String>,
    ) -> PyResult<Self> {
        match (data.filter(|d| !d.is_none()), file_id) {
            (Some(d), None) => {
                let bytes =
                    bytes_of(d).ok_or_else(|| expected("ContentPart.file(data)", "bytes", d))?;
                file_from_bytes(bytes, filename.to_owned(), mime_type).map(ContentPart)
            }
            (None, Some(id)) if !id.is_empty() => {
                if mime_type.is_some() {
                    return Err(PyValueError::new_err(
                        "ContentPart.file(file_id=...) takes no mime_type= (the provider knows it)",
                    ));
                }
                Ok(ContentPart(Part::File {
                    filename: filename.to_owned(),
                    file_data: String::new(),
                    file_id: id,
                }))
            }
            (None, Some(_)) => Err(PyValueError::new_err(
                "ContentPart.file(file_id=...) got an empty file id",
            )),
            _ => Err(PyValueError::new_err(
                "ContentPart.file() takes exactly one of data (bytes) or file_id=",
            )),
        }
    }

    /// "text", "image_url" or "file", as in OpenAI's content parts.
    #[getter(r#type)]
    fn kind(&self) -> &'static str {
        match self.0 {
            Part::Text(_) => "text",
            Part::ImageUrl { .. } => "image_url",
            Part::File { .. } => "file",
        }
    }

    /// The text of a text part, else None.
    #[getter(text)]
    fn get_text(&self) -> Option<&str> {
        match &self.0 {
            Part::Text(t) => Some(t),
            _ => None,
        }
    }

    /// The URL of an image part (maybe a ``data:`` URL), else None.
    #[getter]
    fn url(&self) -> Option<&str> {
        match &self.0 {
            Part::ImageUrl { url, .. } => Some(url),
            _ => None,
        }
    }

    /// The detail level of an image part ("auto", "low", "high" or ""), else None.
    #[getter]
    fn detail(&self) -> Option<&str> {
        match &self.0 {
            Part::ImageUrl { detail, .. } => Some(detail),
            _ => None,
        }
    }

    /// The filename of a file part ("" if none was given), else None.
    #[getter]
    fn filename(&self) -> Option<&str> {
        match &self.0 {
            Part::File { filename, .. } => Some(filename),
            _ => None,
        }
    }

    /// The ``data:`` URL of a file part given as bytes, else None.
    #[getter]
    fn file_data(&self) -> Option<&str> {
        match &self.0 {
            Part::File { file_data, .. } if !file_data.is_empty() => Some(file_data),
            _ => None,
        }
    }

    /// The provider's id of a file part given by id, else None.
    #[getter]
    fn file_id(&self) -> Option<&str> {
        match &self.0 {
            Part::File { file_id, .. } if !file_id.is_empty() => Some(file_id),
            _ => None,
        }
    }

    /// The MIME type of an image or file carried in a ``data:`` URL, else None.
    #[getter]
    fn mime_type(&self) -> Option<&str> {
        match &self.0 {
            Part::ImageUrl { url, .. } => parts::data_url_mime(url),
            Part::File { file_data, .. } => parts::data_url_mime(file_data),
            Part::Text(_) => None,
        }
    }

    /// OpenAI's content-part dict: `{"type": "text", "text": ...}`,
    /// `{"type": "image_url", "image_url": {"url": ..., "detail": ...}}` or
    /// `{"type": "file", "file": {"filename": ..., "file_data": ...}}` (or `{"file_id": ...}`).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        part_to_dict(py, &self.0)
    }

    /// Reads OpenAI's content-part dict.
    #[staticmethod]
    fn from_dict(d: &Bound<'_, PyDict>) -> PyResult<Self> {
        part_from_dict(d).map(ContentPart)
    }

    fn __repr__(&self) -> String {
        match &self.0 {
            Part::Text(t) => format!("ContentPart(text={})", repr_str(t)),
            Part::ImageUrl { url, detail } if detail.is_empty() => {
                format!("ContentPart(image_url={})", repr_long(url))
            }
            Part::ImageUrl { url, detail } => {
                format!(
                    "ContentPart(image_url={}, detail={})",
                    repr_long(url),
                    repr_str(detail)
                )
            }
            Part::File {
                filename,
                file_data,
                file_id,
            } => {
                let mut fields = Vec::new();
                if !filename.is_empty() {
                    fields.push(format!("filename={}", repr_str(filename)));
                }
                if !file_data.is_empty() {
                    fields.push(format!("file_data={}", repr_long(file_data)));
                }
                if !file_id.is_empty() {
                    fields.push(format!("file_id={}", repr_str(file_id)));
                }
                format!("ContentPart.file({})", fields.join(", "))
            }
        }
    }
}

pub(crate) fn part_to_dict<'py>(py: Python<'py>, p: &Part) -> PyResult<Bound<'py, PyDict>> {
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
        Part::File {
            filename,
            file_data,
            file_id,
        } => {
            d.set_item(intern!(py, "type"), "file")?;
            let file = PyDict::new(py);
            for (key, v) in [
                (intern!(py, "filename"), filename),
                (intern!(py, "file_data"), file_data),
                (intern!(py, "file_id"), file_id),
            ] {
                if !v.is_empty() {
                    file.set_item(key, v)?;
                }
            }
            d.set_item(intern!(py, "file"), file)?;
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
        "file" => {
            let file = get_dict(d, intern!(d.py(), "file"))?
                .ok_or_else(|| PyValueError::new_err("a file part needs a 'file' dict"))?;
            let py = file.py();
            let part = Part::File {
                filename: get_str(&file, intern!(py, "filename"))?,
                file_data: get_str(&file, intern!(py, "file_data"))?,
                file_id: get_str(&file, intern!(py, "file_id"))?,
            };
            match &part {
                Part::File {
                    file_data, file_id, ..
                } if file_data.is_empty() == file_id.is_empty() => Err(PyValueError::new_err(
                    "a file part's 'file' dict needs exactly one of 'file_data' (a data: URL) or 'file_id'",
                )),
                _ => Ok(part),
            }
        }
        other => Err(PyValueError::new_err(format!(
            "unsupported content part type {other:?}: expected 'text', 'image_url' or 'file'"
        ))),
    }
}

/// A list (or tuple) of parts; `field` names the argument in errors.
fn parts_from_py(obj: &Bound<'_, PyAny>, field: &str, what: &str) -> PyResult<Vec<Part>> {
    let mut parts = Vec::new();
    for (i, item) in list_items(obj, field, what)?.into_iter().enumerate() {
        if let Ok(p) = item.cast::<ContentPart>() {
            parts.push(p.get().0.clone());
        } else if let Ok(d) = item.cast::<PyDict>() {
            parts.push(part_from_dict(d)?);
        } else if let Ok(s) = item.cast::<PyString>() {
            parts.push(Part::Text(s.to_str()?.to_owned()));
        } else {
            return Err(expected(
                &format!("{field}[{i}]"),
                "ContentPart | dict | str",
                &item,
            ));
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

/// A chat message (Eino's `schema.Message`, in OpenAI's chat-completions shape). Mutable
/// (assign a field to change it) and safe to share between threads.
///
/// Fields:
///
/// * ``role``: "system", "user", "assistant" or "tool".
/// * ``content``: the text. Passing a list of parts (ContentPart, dict or str) instead sets
///   ``user_input_multi_content``; anything else is a TypeError.
/// * ``user_input_multi_content``: the parts of a multi-part user input (text, images, files).
/// * ``name``: the author's name, for several participants of one role.
/// * ``reasoning_content``: the model's reasoning text, when it streams one.
/// * ``refusal``: the model's refusal text (OpenAI's ``refusal``), concatenated like content.
/// * ``tool_calls``: the calls an assistant message asks for (ToolCall or dict).
/// * ``tool_call_id`` and ``tool_name``: which call a tool message answers.
/// * ``response_meta``: finish reason and token usage (ResponseMeta or dict).
/// * ``extra``: provider-specific data, a dict with str keys.
///
/// Container fields read back as read-only views (``tool_calls`` and
/// ``user_input_multi_content`` as tuples, ``extra`` as a read-only mapping): change them by
/// assigning, e.g. ``msg.tool_calls = [*msg.tool_calls, call]``.
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

const CONTENT: &str = "str or a list of ContentPart | dict";
const PARTS: &str = "a list of ContentPart | dict | str (or None)";

/// Sets `content` from a str, or `user_input_multi_content` from a list of parts.
fn set_content(m: &mut core::Message, content: &Bound<'_, PyAny>, field: &str) -> PyResult<()> {
    if let Ok(s) = content.cast::<PyString>() {
        m.content = s.to_str()?.to_owned();
    } else if !content.is_none() {
        m.user_input_multi_content = parts_from_py(content, field, CONTENT)?;
    }
    Ok(())
}

#[pymethods]
impl Message {
    #[new]
    #[pyo3(signature = (
        role="", content=None, name="", reasoning_content="",
        tool_calls=None, tool_call_id="", tool_name="", response_meta=None,
        extra=None, *, user_input_multi_content=None, refusal="",
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
        response_meta: Option<&Bound<'_, PyAny>>,
        extra: Option<&Bound<'_, PyAny>>,
        user_input_multi_content: Option<&Bound<'_, PyAny>>,
        refusal: &str,
    ) -> PyResult<Self> {
        let mut m = core::Message {
            role: role.into(),
            name: name.into(),
            reasoning_content: reasoning_content.into(),
            refusal: refusal.into(),
            tool_calls: tool_calls_from_py(tool_calls)?,
            tool_call_id: tool_call_id.into(),
            tool_name: tool_name.into(),
            response_meta: meta_from_py(response_meta, "Message.response_meta")?,
            extra: extra_from_py(extra, "Message.extra")?,
            ..Default::default()
        };
        if let Some(c) = content {
            set_content(&mut m, c, "Message.content")?;
        }
        if let Some(parts) = user_input_multi_content.filter(|p| !p.is_none()) {
            m.user_input_multi_content =
                parts_from_py(parts, "Message.user_input_multi_content", PARTS)?;
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
        set_content(&mut m, content, "Message.user")?;
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

    /// "system", "user", "assistant" or "tool".
    #[getter]
    fn role(&self) -> String {
        self.inner.lock().role.clone()
    }

    #[setter]
    fn set_role(&self, v: String) {
        self.inner.lock().role = v;
    }

    /// The text. Assigning a list of parts sets `user_input_multi_content` instead.
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
        if v.is_none() {
            return Err(expected("Message.content", CONTENT, v));
        }
        let parts = parts_from_py(v, "Message.content", CONTENT)?;
        self.inner.lock().user_input_multi_content = parts;
        Ok(())
    }

    /// The parts of a multi-part user input, as a tuple (assign a list to change them).
    #[getter]
    fn user_input_multi_content<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
        let parts = self.inner.lock().user_input_multi_content.clone();
        pyo3::types::PyTuple::new(py, parts.into_iter().map(ContentPart))
    }

    #[setter]
    fn set_user_input_multi_content(&self, v: &Bound<'_, PyAny>) -> PyResult<()> {
        let parts = if v.is_none() {
            Vec::new()
        } else {
            parts_from_py(v, "Message.user_input_multi_content", PARTS)?
        };
        self.inner.lock().user_input_multi_content = parts;
        Ok(())
    }

    /// The author's name ("" when unset).
    #[getter]
    fn name(&self) -> String {
        self.inner.lock().name.clone()
    }

    #[setter]
    fn set_name(&self, v: String) {
        self.inner.lock().name = v;
    }

    /// The model's reasoning text ("" when none).
    #[getter]
    fn reasoning_content(&self) -> String {
        self.inner.lock().reasoning_content.clone()
    }

    #[setter]
    fn set_reasoning_content(&self, v: String) {
        self.inner.lock().reasoning_content = v;
    }

    /// The model's refusal text (OpenAI's `refusal`; "" when none). Streamed pieces are
    /// concatenated like `content`.
    #[getter]
    fn refusal(&self) -> String {
        self.inner.lock().refusal.clone()
    }

    #[setter]
    fn set_refusal(&self, v: String) {
        self.inner.lock().refusal = v;
    }

    /// The tool calls, as a tuple: assign `msg.tool_calls = [...]` to change them.
    #[getter]
    fn tool_calls<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, pyo3::types::PyTuple>> {
        let calls = self.inner.lock().tool_calls.clone();
        pyo3::types::PyTuple::new(py, calls.into_iter().map(ToolCall))
    }

    #[setter]
    fn set_tool_calls(&self, v: &Bound<'_, PyAny>) -> PyResult<()> {
        let calls = tool_calls_from_py(Some(v))?;
        // The old calls may hold Python values: released after the lock, not under it.
        let old = std::mem::replace(&mut self.inner.lock().tool_calls, calls);
        drop(old);
        Ok(())
    }

    /// The id of the tool call a tool message answers.
    #[getter]
    fn tool_call_id(&self) -> String {
        self.inner.lock().tool_call_id.clone()
    }

    #[setter]
    fn set_tool_call_id(&self, v: String) {
        self.inner.lock().tool_call_id = v;
    }

    /// The name of the tool a tool message comes from.
    #[getter]
    fn tool_name(&self) -> String {
        self.inner.lock().tool_name.clone()
    }

    #[setter]
    fn set_tool_name(&self, v: String) {
        self.inner.lock().tool_name = v;
    }

    /// Finish reason and token usage (None when the provider sent none).
    #[getter]
    fn response_meta(&self) -> Option<ResponseMeta> {
        self.inner.lock().response_meta.clone().map(ResponseMeta)
    }

    #[setter]
    fn set_response_meta(&self, v: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let meta = meta_from_py(v, "Message.response_meta")?;
        self.inner.lock().response_meta = meta;
        Ok(())
    }

    /// Provider-specific data as a read-only mapping (None when unset): assign
    /// `msg.extra = {**(msg.extra or {}), "k": v}` to change it.
    #[getter]
    fn extra(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let extra = self.inner.lock().extra.clone();
        extra_to_py(py, &extra)
    }

    #[setter]
    fn set_extra(&self, v: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let extra = extra_from_py(v, "Message.extra")?;
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

    /// Reads the dict form `to_dict` writes (an OpenAI chat-completions message or chunk
    /// delta); unknown keys are ignored.
    #[staticmethod]
    fn from_dict(d: &Bound<'_, PyDict>) -> PyResult<Self> {
        message_from_dict(d).map(Message::wrap)
    }

    /// A shallow copy (the parts are immutable, so it shares nothing mutable but `extra`'s
    /// values).
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
    text("refusal", &m.refusal);
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
    text("refusal", &m.refusal)?;
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
/// streamed chunk holds one or two keys. Unknown keys are ignored.
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
            "content" => set_content(&mut m, &v, "Message.content")?,
            "content_text" => content_text = Some(str_value(&v, key)?),
            "name" => m.name = str_value(&v, key)?,
            "reasoning_content" => m.reasoning_content = str_value(&v, key)?,
            "refusal" => m.refusal = str_value(&v, key)?,
            "tool_calls" => m.tool_calls = tool_calls_from_py(Some(&v))?,
            "tool_call_id" => m.tool_call_id = str_value(&v, key)?,
            "tool_name" => m.tool_name = str_value(&v, key)?,
            "response_meta" => m.response_meta = meta_from_py(Some(&v), "Message.response_meta")?,
            "extra" => m.extra = extra_from_py(Some(&v), "Message.extra")?,
            _ => {}
        }
    }
    if let Some(text) = content_text {
        m.content = text;
    }
    Ok(m)
}

/// A str field of a dict form; None reads as "".
pub(crate) fn str_value(v: &Bound<'_, PyAny>, key: &str) -> PyResult<String> {
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
