//! The chat message data model, in pure Rust (no PyO3 types), after Eino's `schema.Message`.
//!
//! Text is stored as Rust `String`s: concatenating a stream of chunks is then a series of
//! `push_str` memcpys with no interpreter involved, and the binding creates one Python `str`
//! per field when Python reads it. `extra` values that have no Rust counterpart (lists,
//! custom objects) are carried as [`Opaque`] handles that the binding fills in.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// A function call requested by the model.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FunctionCall {
    pub name: String,
    /// The JSON arguments, as streamed by the model (not parsed).
    pub arguments: String,
}

/// One tool call of an assistant message; `index` identifies a call across stream chunks.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ToolCall {
    pub index: Option<i64>,
    pub id: String,
    pub kind: String,
    pub function: FunctionCall,
    pub extra: Option<Map>,
}

/// Token counts reported by the model. Cached and reasoning tokens are details of the
/// prompt and completion counts respectively.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    pub cached_tokens: u64,
    pub reasoning_tokens: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResponseMeta {
    pub finish_reason: String,
    pub usage: Option<Usage>,
}

/// One part of a multi-part user input (OpenAI's content parts).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Part {
    Text(String),
    /// An http(s) URL or a `data:<mime>;base64,...` URL (images given as bytes).
    ImageUrl {
        url: String,
        detail: String,
    },
    /// A file: inline (`file_data` a base64 `data:` URL, with its `filename`) or a file the
    /// provider stores (`file_id`); the unused fields are empty.
    File {
        filename: String,
        file_data: String,
        file_id: String,
    },
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Message {
    pub role: String,
    pub content: String,
    /// Multi-part user input (text, image and file parts); empty for plain text messages.
    pub user_input_multi_content: Vec<Part>,
    pub name: String,
    pub reasoning_content: String,
    /// OpenAI's refusal text; concatenated like `content`.
    pub refusal: String,
    pub tool_calls: Vec<ToolCall>,
    pub tool_call_id: String,
    pub tool_name: String,
    pub response_meta: Option<ResponseMeta>,
    pub extra: Option<Map>,
}

/// An `extra` mapping: insertion-ordered, usually a handful of keys.
pub type Map = Vec<(String, Value)>;

/// A dynamically typed `extra` value. The variants are the types whose merge rule differs.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    Map(Map),
    Opaque(Opaque),
}

/// A value of a type Rust does not model (a list, a custom object), owned by the binding.
#[derive(Clone)]
pub struct Opaque {
    pub type_name: String,
    /// Go's "zero value" test; the binding uses Python truthiness.
    pub is_zero: bool,
    pub handle: Arc<dyn Any + Send + Sync>,
    /// Value equality supplied by the binding (identity is the fallback).
    pub eq: fn(&Opaque, &Opaque) -> bool,
}

impl PartialEq for Opaque {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.handle, &other.handle) || (self.eq)(self, other)
    }
}

impl fmt::Debug for Opaque {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{}>", self.type_name)
    }
}

impl Value {
    /// The type name used in merge error messages.
    pub fn type_name(&self) -> &str {
        match self {
            Value::Null => "None",
            Value::Bool(_) => "bool",
            Value::Int(_) => "int",
            Value::Float(_) => "float",
            Value::Str(_) => "str",
            Value::Map(_) => "dict",
            Value::Opaque(o) => &o.type_name,
        }
    }
}

impl Message {
    pub fn new(role: &str, content: &str) -> Self {
        Message {
            role: role.into(),
            content: content.into(),
            ..Default::default()
        }
    }
}

impl ToolCall {
    /// The default type of a tool call, as OpenAI sends it.
    pub const FUNCTION: &'static str = "function";
}

#[cfg(test)]
impl ToolCall {
    /// `(index, id, name, arguments)`: what tests compare of a call.
    pub(crate) fn fields(&self) -> (Option<i64>, &str, &str, &str) {
        (
            self.index,
            self.id.as_str(),
            self.function.name.as_str(),
            self.function.arguments.as_str(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opaque(id: u8) -> Opaque {
        Opaque {
            type_name: "list".into(),
            is_zero: false,
            handle: Arc::new(id),
            eq: |a, b| a.handle.downcast_ref::<u8>() == b.handle.downcast_ref::<u8>(),
        }
    }

    #[test]
    fn opaque_values_compare_with_the_binding_equality() {
        assert_eq!(Value::Opaque(opaque(1)), Value::Opaque(opaque(1)));
        assert_ne!(Value::Opaque(opaque(1)), Value::Opaque(opaque(2)));
        assert_eq!(Value::Opaque(opaque(1)).type_name(), "list");
    }

    #[test]
    fn messages_compare_by_value() {
        let mut a = Message::new("user", "hi");
        let b = a.clone();
        assert_eq!(a, b);
        a.extra = Some(vec![("k".into(), Value::Int(1))]);
        assert_ne!(a, b);
    }
}
