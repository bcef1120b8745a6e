//! Python classes over [`crate::agentic`]: `ContentBlock` (an immutable value) and
//! `AgenticMessage` (mutable like `Message`: a frozen pyclass whose fields sit behind a
//! mutex; container getters return read-only views).
//!
//! One `ContentBlock` class with a `kind` serves every block kind: a block is built with
//! `ContentBlock(kind, field=...)` or a named constructor (`ContentBlock.text(...)`), and a
//! field the kind does not use is refused with a ValueError listing the ones it does.

use parking_lot::Mutex;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyList, PyString, PyTuple};

use crate::agentic::{self as core, BlockKind, ConversionError, Field};
use crate::py::errors::{self, Class};
use crate::py::message::{
    expected, extra_from_py, extra_to_py, list_items, map_to_py, meta_from_py, meta_to_dict,
    not_implemented, repr_extra, repr_str, str_value, Message, ResponseMeta, ToolCall,
};

fn kinds() -> String {
    BlockKind::ALL.map(|k| k.name()).join(", ")
}

fn parse_kind(kind: &str) -> PyResult<BlockKind> {
    BlockKind::parse(kind).ok_or_else(|| {
        PyValueError::new_err(format!(
            "unknown content block kind {kind:?}; the kinds are: {}",
            kinds()
        ))
    })
}

/// Refuses a block that sets a field its kind does not use.
fn check_fields(b: &core::ContentBlock) -> PyResult<()> {
    match b.stray_field() {
        None => Ok(()),
        Some(f) => Err(PyValueError::new_err(format!(
            "a '{}' block has no field {:?}; its fields are: {}",
            b.kind.name(),
            f.name(),
            b.kind
                .fields()
                .iter()
                .map(|f| f.name())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Raises `MessageConversionError` for `err`, with its `block` attribute set.
pub(crate) fn conversion_error(py: Python<'_>, err: ConversionError) -> PyErr {
    let made = errors::class(py, Class::MessageConversionError)
        .and_then(|c| c.call1((err.message.as_str(),)));
    match made {
        Ok(exc) => {
            let _ = exc.setattr("block", err.block);
            PyErr::from_value(exc)
        }
        Err(e) => e,
    }
}

// ---------------------------------------------------------------------------------------
// ContentBlock

/// One block of an AgenticMessage: text, reasoning, a refusal, media (image, audio, video,
/// file), a tool call or its result, a server-side tool call or result, an MCP tool call or
/// result. Immutable; `kind` says which fields are used (the others are empty).
#[pyclass(frozen, eq, from_py_object, module = "rillet", name = "ContentBlock")]
#[derive(Clone, PartialEq)]
pub struct ContentBlock(pub core::ContentBlock);

#[pymethods]
impl ContentBlock {
    #[new]
    #[pyo3(signature = (
        kind, *, index=None, text="", signature="", call_id="", name="", arguments="",
        server_label="", url="", data="", mime_type="", detail="", filename="", file_id="",
        is_error=false, extra=None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        kind: &str,
        index: Option<i64>,
        text: &str,
        signature: &str,
        call_id: &str,
        name: &str,
        arguments: &str,
        server_label: &str,
        url: &str,
        data: &str,
        mime_type: &str,
        detail: &str,
        filename: &str,
        file_id: &str,
        is_error: bool,
        extra: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let b = core::ContentBlock {
            kind: parse_kind(kind)?,
            index,
            text: text.into(),
            signature: signature.into(),
            call_id: call_id.into(),
            name: name.into(),
            arguments: arguments.into(),
            server_label: server_label.into(),
            url: url.into(),
            data: data.into(),
            mime_type: mime_type.into(),
            detail: detail.into(),
            filename: filename.into(),
            file_id: file_id.into(),
            is_error,
            extra: extra_from_py(extra, "ContentBlock.extra")?,
        };
        check_fields(&b)?;
        Ok(ContentBlock(b))
    }

    /// A text block (user input or model output). (`text` is the field's getter.)
    #[staticmethod]
    #[pyo3(signature = (text, *, index=None))]
    fn from_text(text: &str, index: Option<i64>) -> Self {
        let mut b = core::ContentBlock::text(BlockKind::Text, text);
        b.index = index;
        ContentBlock(b)
    }

    /// A reasoning block; `signature` is what the provider needs back verbatim.
    #[staticmethod]
    #[pyo3(signature = (text="", *, signature="", index=None))]
    fn reasoning(text: &str, signature: &str, index: Option<i64>) -> Self {
        let mut b = core::ContentBlock::text(BlockKind::Reasoning, text);
        b.signature = signature.into();
        b.index = index;
        ContentBlock(b)
    }

    /// A call of the function tool `name` with JSON `arguments`.
    #[staticmethod]
    #[pyo3(signature = (call_id, name, arguments="", *, index=None))]
    fn tool_call(call_id: &str, name: &str, arguments: &str, index: Option<i64>) -> Self {
        let mut b = core::ContentBlock::new(BlockKind::ToolCall);
        b.call_id = call_id.into();
        b.name = name.into();
        b.arguments = arguments.into();
        b.index = index;
        ContentBlock(b)
    }

    /// The result of the tool call `call_id`.
    #[staticmethod]
    #[pyo3(signature = (content, call_id, name="", *, is_error=false, index=None))]
    fn tool_result(
        content: &str,
        call_id: &str,
        name: &str,
        is_error: bool,
        index: Option<i64>,
    ) -> Self {
        let mut b = core::ContentBlock::text(BlockKind::ToolResult, content);
        b.call_id = call_id.into();
        b.name = name.into();
        b.is_error = is_error;
        b.index = index;
        ContentBlock(b)
    }

    /// An image: an http(s) or data: `url`, or base64 `data` with its `mime_type`.
    #[staticmethod]
    #[pyo3(signature = (url="", *, data="", mime_type="", detail="", index=None))]
    fn image(url: &str, data: &str, mime_type: &str, detail: &str, index: Option<i64>) -> Self {
        let mut b = core::ContentBlock::new(BlockKind::Image);
        b.url = url.into();
        b.data = data.into();
        b.mime_type = mime_type.into();
        b.detail = detail.into();
        b.index = index;
        ContentBlock(b)
    }

    /// This block with another stream index (None: not a stream chunk).
    fn with_index(&self, index: Option<i64>) -> Self {
        let mut b = self.0.clone();
        b.index = index;
        ContentBlock(b)
    }

    /// "text", "reasoning", "refusal", "image", "audio", "video", "file", "tool_call",
    /// "tool_result", "server_tool_call", "server_tool_result", "mcp_tool_call" or
    /// "mcp_tool_result".
    #[getter]
    fn kind(&self) -> &'static str {
        self.0.kind.name()
    }

    /// The block's stream index: chunks of one block share it (None outside a stream).
    #[getter]
    fn index(&self) -> Option<i64> {
        self.0.index
    }

    /// Text, reasoning or refusal text, or a tool result's content.
    #[getter(text)]
    fn get_text(&self) -> &str {
        &self.0.text
    }

    #[getter]
    fn signature(&self) -> &str {
        &self.0.signature
    }

    #[getter]
    fn call_id(&self) -> &str {
        &self.0.call_id
    }

    #[getter]
    fn name(&self) -> &str {
        &self.0.name
    }

    /// A tool call's JSON arguments, as the model sent them.
    #[getter]
    fn arguments(&self) -> &str {
        &self.0.arguments
    }

    #[getter]
    fn server_label(&self) -> &str {
        &self.0.server_label
    }

    #[getter]
    fn url(&self) -> &str {
        &self.0.url
    }

    /// Media content, base64.
    #[getter]
    fn data(&self) -> &str {
        &self.0.data
    }

    #[getter]
    fn mime_type(&self) -> &str {
        &self.0.mime_type
    }

    #[getter]
    fn detail(&self) -> &str {
        &self.0.detail
    }

    #[getter]
    fn filename(&self) -> &str {
        &self.0.filename
    }

    #[getter]
    fn file_id(&self) -> &str {
        &self.0.file_id
    }

    /// Whether a tool result reports a failure.
    #[getter]
    fn is_error(&self) -> bool {
        self.0.is_error
    }

    /// Provider-specific data as a read-only mapping (None when unset).
    #[getter]
    fn extra(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        extra_to_py(py, &self.0.extra)
    }

    /// `{"type": kind, <the fields set>, "index": ..., "extra": ...}`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        block_to_dict(py, &self.0)
    }

    /// Reads the dict form `to_dict` writes.
    #[staticmethod]
    fn from_dict(d: &Bound<'_, PyDict>) -> PyResult<Self> {
        block_from_dict(d).map(ContentBlock)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        block_repr(py, &self.0)
    }

    fn __copy__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    fn __deepcopy__(slf: Py<Self>, _memo: &Bound<'_, PyAny>) -> Py<Self> {
        slf
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyDict>,))> {
        let from_dict = slf.get_type().getattr("from_dict")?;
        Ok((from_dict, (slf.get().to_dict(slf.py())?,)))
    }
}

fn block_repr(py: Python<'_>, b: &core::ContentBlock) -> PyResult<String> {
    let mut fields = vec![repr_str(b.kind.name())];
    for &f in b.kind.fields() {
        if f == Field::IsError {
            if b.is_error {
                fields.push("is_error=True".into());
            }
        } else if !b.str_field(f).is_empty() {
            fields.push(format!("{}={}", f.name(), repr_str(b.str_field(f))));
        }
    }
    if let Some(i) = b.index {
        fields.push(format!("index={i}"));
    }
    if b.extra.is_some() {
        fields.push(format!("extra={}", repr_extra(py, &b.extra)?));
    }
    Ok(format!("ContentBlock({})", fields.join(", ")))
}

pub(crate) fn block_to_dict<'py>(
    py: Python<'py>,
    b: &core::ContentBlock,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item(intern!(py, "type"), b.kind.name())?;
    for &f in b.kind.fields() {
        if f == Field::IsError {
            if b.is_error {
                d.set_item(f.name(), true)?;
            }
        } else if !b.str_field(f).is_empty() {
            d.set_item(f.name(), b.str_field(f))?;
        }
    }
    if let Some(i) = b.index {
        d.set_item(intern!(py, "index"), i)?;
    }
    if let Some(extra) = &b.extra {
        d.set_item(intern!(py, "extra"), map_to_py(py, extra)?)?;
    }
    Ok(d)
}

pub(crate) fn block_from_dict(d: &Bound<'_, PyDict>) -> PyResult<core::ContentBlock> {
    let kind = match d.get_item(intern!(d.py(), "type"))? {
        Some(k) => parse_kind(&str_value(&k, "type")?)?,
        None => {
            return Err(PyValueError::new_err(
                "a content block dict needs a \"type\" key (its kind)",
            ))
        }
    };
    let mut b = core::ContentBlock::new(kind);
    for (k, v) in d.iter() {
        let Ok(key) = k.cast::<PyString>() else {
            continue;
        };
        let key = key.to_str()?;
        match key {
            "type" => {}
            "index" => b.index = v.extract::<Option<i64>>()?,
            "extra" => b.extra = extra_from_py(Some(&v), "ContentBlock.extra")?,
            "is_error" => b.is_error = v.is_truthy()?,
            _ => {
                let Some(f) = Field::parse(key) else { continue };
                if let Some(s) = b.str_field_mut(f) {
                    *s = str_value(&v, key)?;
                }
            }
        }
    }
    check_fields(&b)?;
    Ok(b)
}

const BLOCKS: &str = "a list of ContentBlock | dict | str";

/// One block argument: a ContentBlock, its dict form, or a str (a text block).
fn block_from_py(obj: &Bound<'_, PyAny>, field: &str) -> PyResult<core::ContentBlock> {
    if let Ok(b) = obj.cast::<ContentBlock>() {
        return Ok(b.get().0.clone());
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        return block_from_dict(d);
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(core::ContentBlock::text(BlockKind::Text, s.to_str()?));
    }
    Err(expected(field, "ContentBlock | dict | str", obj))
}

fn blocks_from_py(
    obj: Option<&Bound<'_, PyAny>>,
    field: &str,
) -> PyResult<Vec<core::ContentBlock>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(Vec::new());
    };
    list_items(obj, field, BLOCKS)?
        .iter()
        .enumerate()
        .map(|(i, b)| block_from_py(b, &format!("{field}[{i}]")))
        .collect()
}

/// Content given as a str (one text block) or a list of blocks.
fn content_blocks(content: &Bound<'_, PyAny>, field: &str) -> PyResult<Vec<core::ContentBlock>> {
    if let Ok(s) = content.cast::<PyString>() {
        let s = s.to_str()?;
        return Ok(if s.is_empty() {
            Vec::new()
        } else {
            vec![core::ContentBlock::text(BlockKind::Text, s)]
        });
    }
    blocks_from_py(Some(content), field)
}

// ---------------------------------------------------------------------------------------
// AgenticMessage

/// A message made of an ordered list of content blocks (Eino's ``schema.AgenticMessage``).
/// Mutable (assign a field to change it) and safe to share between threads.
///
/// Fields:
///
/// * ``role``: "system", "user" or "assistant". Tool results travel in a user message, as
///   ``tool_result`` blocks.
/// * ``blocks``: the content blocks, in order (ContentBlock, dict or str).
/// * ``name``: the author's name.
/// * ``response_meta``: finish reason and token usage (ResponseMeta or dict).
/// * ``extra``: provider-specific data, a dict with str keys.
#[pyclass(frozen, module = "rillet", name = "AgenticMessage")]
pub struct AgenticMessage {
    inner: Mutex<core::AgenticMessage>,
}

impl AgenticMessage {
    pub fn wrap(m: core::AgenticMessage) -> Self {
        AgenticMessage {
            inner: Mutex::new(m),
        }
    }

    /// A copy of the fields, taken under the lock.
    pub fn snapshot(&self) -> core::AgenticMessage {
        self.inner.lock().clone()
    }

    /// Runs `f` on the fields under the lock. `f` must not call into Python.
    pub fn with<R>(&self, f: impl FnOnce(&core::AgenticMessage) -> R) -> R {
        f(&self.inner.lock())
    }

    /// Replaces the fields with `f`'s result; the old value is released after the lock.
    fn replace<T>(&self, f: impl FnOnce(&mut core::AgenticMessage) -> T) -> T {
        f(&mut self.inner.lock())
    }
}

fn message(role: &str, blocks: Vec<core::ContentBlock>, name: &str) -> AgenticMessage {
    AgenticMessage::wrap(core::AgenticMessage {
        role: role.into(),
        name: name.into(),
        blocks,
        ..Default::default()
    })
}

#[pymethods]
impl AgenticMessage {
    #[new]
    #[pyo3(signature = (role="", blocks=None, *, name="", response_meta=None, extra=None))]
    fn new(
        role: &str,
        blocks: Option<&Bound<'_, PyAny>>,
        name: &str,
        response_meta: Option<&Bound<'_, PyAny>>,
        extra: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        Ok(AgenticMessage::wrap(core::AgenticMessage {
            role: role.into(),
            name: name.into(),
            blocks: blocks_from_py(blocks, "AgenticMessage.blocks")?,
            response_meta: meta_from_py(response_meta, "AgenticMessage.response_meta")?,
            extra: extra_from_py(extra, "AgenticMessage.extra")?,
        }))
    }

    /// A system message of one text block.
    #[staticmethod]
    #[pyo3(signature = (content, *, name=""))]
    fn system(content: &Bound<'_, PyAny>, name: &str) -> PyResult<Self> {
        Ok(message(
            "system",
            content_blocks(content, "AgenticMessage.system")?,
            name,
        ))
    }

    /// A user message: a str (one text block) or a list of blocks.
    #[staticmethod]
    #[pyo3(signature = (content, *, name=""))]
    fn user(content: &Bound<'_, PyAny>, name: &str) -> PyResult<Self> {
        Ok(message(
            "user",
            content_blocks(content, "AgenticMessage.user")?,
            name,
        ))
    }

    /// An assistant message: a str (one text block) or a list of blocks.
    #[staticmethod]
    #[pyo3(signature = (content=None, *, name=""))]
    fn assistant(content: Option<&Bound<'_, PyAny>>, name: &str) -> PyResult<Self> {
        let blocks = match content {
            Some(c) => content_blocks(c, "AgenticMessage.assistant")?,
            None => Vec::new(),
        };
        Ok(message("assistant", blocks, name))
    }

    /// The result of the tool call `call_id`: a user message of one tool_result block.
    #[staticmethod]
    #[pyo3(signature = (content, call_id, name="", *, is_error=false))]
    fn tool_result(content: &str, call_id: &str, name: &str, is_error: bool) -> Self {
        let mut b = core::ContentBlock::text(BlockKind::ToolResult, content);
        b.call_id = call_id.into();
        b.name = name.into();
        b.is_error = is_error;
        message("user", vec![b], "")
    }

    /// The blocks of a Message, without loss (a tool message becomes a user message with
    /// one tool_result block). Raises MessageConversionError for what blocks cannot hold.
    #[staticmethod]
    fn from_message(py: Python<'_>, message: &Bound<'_, Message>) -> PyResult<Self> {
        core::AgenticMessage::from_message(&message.get().snapshot())
            .map(AgenticMessage::wrap)
            .map_err(|e| conversion_error(py, e))
    }

    /// The Message holding the same information. Raises MessageConversionError, naming the
    /// block, when a Message cannot hold it (a signed reasoning block, a server or MCP tool
    /// block, audio, several tool results, blocks out of a Message's order).
    fn to_message(&self, py: Python<'_>) -> PyResult<Message> {
        self.snapshot()
            .to_message()
            .map(Message::wrap)
            .map_err(|e| conversion_error(py, e))
    }

    /// One Message per tool_result block, or `[to_message()]` when there are none.
    fn to_messages(&self, py: Python<'_>) -> PyResult<Vec<Message>> {
        self.snapshot()
            .to_messages()
            .map(|ms| ms.into_iter().map(Message::wrap).collect())
            .map_err(|e| conversion_error(py, e))
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
    fn name(&self) -> String {
        self.inner.lock().name.clone()
    }

    #[setter]
    fn set_name(&self, v: String) {
        self.inner.lock().name = v;
    }

    /// The blocks, as a tuple: assign a list to change them.
    #[getter]
    fn blocks<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let blocks = self.inner.lock().blocks.clone();
        PyTuple::new(py, blocks.into_iter().map(ContentBlock))
    }

    #[setter]
    fn set_blocks(&self, v: &Bound<'_, PyAny>) -> PyResult<()> {
        let blocks = blocks_from_py(Some(v), "AgenticMessage.blocks")?;
        let old = self.replace(|m| std::mem::replace(&mut m.blocks, blocks));
        drop(old);
        Ok(())
    }

    /// The text blocks' text, joined with newlines ("" when there is none): what a Message's
    /// `content` would show.
    #[getter]
    fn content(&self) -> String {
        self.with(|m| {
            m.blocks
                .iter()
                .filter(|b| b.kind == BlockKind::Text)
                .map(|b| b.text.as_str())
                .collect::<Vec<_>>()
                .join("\n")
        })
    }

    /// The tool_call blocks as ToolCall values (`id` the block's `call_id`, `index` its
    /// stream index), in order: the form tools, middlewares and the ReAct loop read.
    #[getter]
    fn tool_calls<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let calls: Vec<_> = self.with(|m| {
            m.blocks
                .iter()
                .filter(|b| b.kind == BlockKind::ToolCall)
                .map(|b| crate::message::ToolCall {
                    index: b.index,
                    id: b.call_id.clone(),
                    kind: crate::message::ToolCall::FUNCTION.into(),
                    function: crate::message::FunctionCall {
                        name: b.name.clone(),
                        arguments: b.arguments.clone(),
                    },
                    extra: b.extra.clone(),
                })
                .collect()
        });
        PyTuple::new(py, calls.into_iter().map(ToolCall))
    }

    #[getter]
    fn response_meta(&self) -> Option<ResponseMeta> {
        self.inner.lock().response_meta.clone().map(ResponseMeta)
    }

    #[setter]
    fn set_response_meta(&self, v: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let meta = meta_from_py(v, "AgenticMessage.response_meta")?;
        self.inner.lock().response_meta = meta;
        Ok(())
    }

    #[getter]
    fn extra(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let extra = self.inner.lock().extra.clone();
        extra_to_py(py, &extra)
    }

    #[setter]
    fn set_extra(&self, v: Option<&Bound<'_, PyAny>>) -> PyResult<()> {
        let extra = extra_from_py(v, "AgenticMessage.extra")?;
        let old = self.replace(|m| std::mem::replace(&mut m.extra, extra));
        drop(old);
        Ok(())
    }

    /// `{"role": ..., "blocks": [...], "name"?, "response_meta"?, "extra"?}`.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        agentic_to_dict(py, &self.snapshot())
    }

    /// Reads the dict form `to_dict` writes; unknown keys are ignored.
    #[staticmethod]
    fn from_dict(d: &Bound<'_, PyDict>) -> PyResult<Self> {
        agentic_from_dict(d).map(AgenticMessage::wrap)
    }

    /// A shallow copy (blocks are immutable).
    fn copy(&self) -> Self {
        AgenticMessage::wrap(self.snapshot())
    }

    fn __copy__(&self) -> Self {
        self.copy()
    }

    fn __deepcopy__(&self, py: Python<'_>, memo: &Bound<'_, PyAny>) -> PyResult<Self> {
        let d = agentic_to_dict(py, &self.snapshot())?;
        let deepcopy = py.import("copy")?.getattr("deepcopy")?;
        let copied = deepcopy.call1((d, memo))?;
        agentic_from_dict(copied.cast::<PyDict>()?).map(AgenticMessage::wrap)
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyDict>,))> {
        let from_dict = slf.get_type().getattr("from_dict")?;
        Ok((from_dict, (slf.get().to_dict(slf.py())?,)))
    }

    fn __eq__(&self, py: Python<'_>, other: &Bound<'_, PyAny>) -> Py<PyAny> {
        let Ok(other) = other.cast::<AgenticMessage>() else {
            return not_implemented(py);
        };
        let equal = std::ptr::eq(self, other.get()) || self.snapshot() == other.get().snapshot();
        PyBool::new(py, equal).to_owned().into_any().unbind()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let m = self.snapshot();
        let blocks: PyResult<Vec<_>> = m.blocks.iter().map(|b| block_repr(py, b)).collect();
        let mut fields = vec![
            format!("role={}", repr_str(&m.role)),
            format!("blocks=[{}]", blocks?.join(", ")),
        ];
        if !m.name.is_empty() {
            fields.push(format!("name={}", repr_str(&m.name)));
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
        Ok(format!("AgenticMessage({})", fields.join(", ")))
    }
}

pub(crate) fn agentic_to_dict<'py>(
    py: Python<'py>,
    m: &core::AgenticMessage,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item(intern!(py, "role"), &m.role)?;
    let blocks: PyResult<Vec<_>> = m.blocks.iter().map(|b| block_to_dict(py, b)).collect();
    d.set_item(intern!(py, "blocks"), PyList::new(py, blocks?)?)?;
    if !m.name.is_empty() {
        d.set_item(intern!(py, "name"), &m.name)?;
    }
    if let Some(meta) = &m.response_meta {
        d.set_item(intern!(py, "response_meta"), meta_to_dict(py, meta)?)?;
    }
    if let Some(extra) = &m.extra {
        d.set_item(intern!(py, "extra"), map_to_py(py, extra)?)?;
    }
    Ok(d)
}

pub(crate) fn agentic_from_dict(d: &Bound<'_, PyDict>) -> PyResult<core::AgenticMessage> {
    let mut m = core::AgenticMessage::default();
    for (k, v) in d.iter() {
        let Ok(key) = k.cast::<PyString>() else {
            continue;
        };
        match key.to_str()? {
            "role" => m.role = str_value(&v, "role")?,
            "name" => m.name = str_value(&v, "name")?,
            "blocks" => m.blocks = blocks_from_py(Some(&v), "AgenticMessage.blocks")?,
            "response_meta" => {
                m.response_meta = meta_from_py(Some(&v), "AgenticMessage.response_meta")?
            }
            "extra" => m.extra = extra_from_py(Some(&v), "AgenticMessage.extra")?,
            _ => {}
        }
    }
    Ok(m)
}

/// Reads an agentic chunk for concatenation: an AgenticMessage or None (not one).
pub(crate) fn agentic_chunk(obj: &Bound<'_, PyAny>) -> Option<core::AgenticMessage> {
    obj.cast::<AgenticMessage>()
        .ok()
        .map(|m| m.get().snapshot())
}

/// A TypeError for a chunk of the wrong message type in an agentic stream.
pub(crate) fn not_agentic(obj: &Bound<'_, PyAny>) -> PyErr {
    let ty = obj
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    PyTypeError::new_err(format!(
        "a stream of AgenticMessage chunks got a {ty} chunk: one stream holds one message type"
    ))
}
