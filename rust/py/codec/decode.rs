//! The Python side of decoding: a [`Builder`] that turns what the pure-Rust decoder reads
//! into Python objects, and builds registered types only through the registry (it never
//! imports or calls anything named by the data).

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{PyDate, PyDateTime, PyDelta, PyDict, PyInt, PyList, PyString, PyTime, PyTzInfo};

mod native;
mod value;

use super::checked::{attr, call, new_bytes, new_str};
use super::stdlib::stdlib;
use super::utf8::decode_str;
use crate::codec::decode::{Builder, Kind, Scalar};
use crate::py::errors::{self, Class};
pub use value::Val;

/// A value the registry or Python refused, with the Python error behind it if any.
pub struct BuildError {
    message: String,
    cause: Option<PyErr>,
}

impl BuildError {
    fn new(message: impl Into<String>) -> Self {
        BuildError {
            message: message.into(),
            cause: None,
        }
    }

    fn caused(message: impl Into<String>, cause: PyErr) -> Self {
        BuildError {
            message: message.into(),
            cause: Some(cause),
        }
    }

    pub fn into_pyerr(self, py: Python<'_>, offset: impl std::fmt::Display) -> PyErr {
        // Running out of memory says nothing about the data: it stays a MemoryError.
        if let Some(cause) = self.cause {
            if cause.is_instance_of::<pyo3::exceptions::PyMemoryError>(py) {
                return cause;
            }
            let err = errors::new_err(
                py,
                Class::DecodeError,
                format!("{} (at byte {offset})", self.message),
            );
            err.set_cause(py, Some(cause));
            return err;
        }
        let err = errors::new_err(
            py,
            Class::DecodeError,
            format!("{} (at byte {offset})", self.message),
        );
        err
    }
}

impl From<PyErr> for BuildError {
    fn from(e: PyErr) -> Self {
        BuildError::caused(format!("cannot build a value: {e}"), e)
    }
}

type Result<T> = std::result::Result<T, BuildError>;

pub struct PyBuilder<'py> {
    py: Python<'py>,
    names: Bound<'py, PyDict>,
    /// Called as `unknown(name, version, state)` for a name that is not registered; without
    /// it such a name is an error.
    unknown: Option<Bound<'py, PyAny>>,
    keys: KeyCache<'py>,
    /// The longest ASCII str that goes through `keys`, for values and for map keys.
    cached_len: [usize; 2],
    /// True while the state of one of rillet's own message types is read: its values are
    /// made as Rust values (see [`Val`]), which `native::build` moves into the message.
    native: bool,
    /// Registry entries already looked up, by name (a checkpoint names a handful of types,
    /// each many times).
    entries: Vec<(String, Entry<'py>)>,
    /// The key texts of each record shape seen inside a message state, by shape index.
    shape_texts: Vec<Option<value::ShapeTexts>>,
}

/// A registered type: `(version, from_state, migrate)`; `from_state` None for rillet's own.
#[derive(Clone)]
struct Entry<'py> {
    version: u32,
    from_state: Option<Bound<'py, PyAny>>,
    migrate: Option<Bound<'py, PyAny>>,
}

impl<'py> PyBuilder<'py> {
    pub fn new(
        py: Python<'py>,
        names: Bound<'py, PyDict>,
        unknown: Option<Bound<'py, PyAny>>,
    ) -> Self {
        let keys = KeyCache {
            slots: (0..KEY_SLOTS).map(|_| None).collect(),
        };
        PyBuilder {
            py,
            names,
            unknown,
            keys,
            cached_len: [MAX_CACHED_VALUE, MAX_CACHED_KEY],
            native: false,
            entries: Vec::new(),
            shape_texts: Vec::new(),
        }
    }

    /// Wraps a new reference returned by the C API (NULL means an exception is set).
    #[inline]
    fn owned(&self, ptr: *mut ffi::PyObject) -> Result<Bound<'py, PyAny>> {
        // SAFETY: callers pass the result of a C API call returning a new reference.
        Ok(unsafe { Bound::from_owned_ptr_or_err(self.py, ptr) }?)
    }
}

impl<'py> Builder for PyBuilder<'py> {
    type Value = Val<'py>;
    type Error = BuildError;

    fn format(&mut self, version: u8) {
        if version >= 2 {
            // Format 2 already shares every repeated str of 4 bytes or more through its
            // string table: caching those too would only cost a lookup per unique str.
            self.cached_len = [MIN_UNSHARED_LEN; 2];
        }
    }

    #[inline]
    fn scalar(&mut self, s: Scalar<'_>, key: bool) -> Result<Val<'py>> {
        // Inside a message state, map keys are Rust strs too: `extra`'s keys move into
        // the message's map. (Record keys come from the shape table, made outside.)
        if self.native {
            if let Some(v) = native_scalar(&s) {
                return Ok(v);
            }
        }
        self.py_scalar(s, key).map(Val::Py)
    }

    fn container(
        &mut self,
        kind: Kind,
        items: &mut Vec<Val<'py>>,
        start: usize,
    ) -> Result<Val<'py>> {
        if self.native {
            match kind {
                Kind::List => return Ok(Val::List(items.drain(start..).collect())),
                Kind::Map if value::str_keys_distinct(&items[start..]) => {
                    let mut flat = items.drain(start..);
                    let pairs = std::iter::from_fn(|| Some((flat.next()?, flat.next()?)));
                    return Ok(Val::Map(pairs.collect()));
                }
                // Other keys, or a duplicate: the Python path builds or refuses them.
                _ => {}
            }
        }
        let py = self.py;
        Ok(Val::Py(match kind {
            Kind::List => self.list(items, start)?,
            Kind::Map => self.map(items, start)?,
            Kind::Tuple => self.tuple(items, start)?,
            Kind::Set | Kind::FrozenSet => self.set(items, start, kind == Kind::FrozenSet)?,
            Kind::Object => return self.object(items.drain(start..).collect()),
            _ => {
                let fields = items
                    .drain(start..)
                    .map(|v| v.into_py(py))
                    .collect::<PyResult<Vec<_>>>()?;
                match kind {
                    Kind::DateTime => datetime(py, &fields)?,
                    Kind::Date => date(py, &fields)?,
                    Kind::Time => time(py, &fields)?,
                    _ => timedelta(py, &fields)?,
                }
            }
        }))
    }

    fn record(
        &mut self,
        shape: usize,
        keys: &[Val<'py>],
        items: &mut Vec<Val<'py>>,
        start: usize,
    ) -> Result<Val<'py>> {
        if self.native {
            if let Some(texts) = self.shape_texts(shape, keys) {
                return Ok(Val::Record(texts, items.drain(start..).collect()));
            }
            return Ok(Val::Map(
                keys.iter().cloned().zip(items.drain(start..)).collect(),
            ));
        }
        self.record_dict(keys, items, start).map(Val::Py)
    }

    fn begin_object_state(&mut self, name: &Val<'py>) -> bool {
        self.native = self.is_native_type(name);
        self.native
    }

    fn end_object_state(&mut self) {
        self.native = false;
    }

    #[inline]
    fn reuse(&mut self, entry: &mut Val<'py>) -> Val<'py> {
        if let Val::Py(o) = entry {
            return Val::Py(o.clone());
        }
        // A str first read inside a message state and now used outside one becomes (and
        // stays) a Python str; the other way round, a Python str's text is read in place.
        // If the str cannot be made now (no memory), the Rust value is handed out as it is:
        // the container that takes it makes the str, or raises.
        if !self.native && !matches!(entry, Val::Py(_)) {
            if let Ok(o) = entry.clone().into_py(self.py) {
                *entry = Val::Py(o);
            }
        }
        entry.clone()
    }
}

/// A scalar as a Rust value, for the types a message field can hold; None for the others
/// (bytes, big ints, uuids...), which stay Python objects.
#[inline]
fn native_scalar(s: &Scalar<'_>) -> Option<Val<'static>> {
    Some(match *s {
        Scalar::Nil => Val::Nil,
        Scalar::Bool(v) => Val::Bool(v),
        Scalar::Int(v) => Val::Int(v),
        Scalar::UInt(v) => Val::UInt(v),
        Scalar::Float(v) => Val::Float(v),
        // Invalid UTF-8 goes the Python way, which reports it.
        Scalar::Str(text) => Val::Str(utf8(text)?.to_owned()),
        _ => return None,
    })
}

/// `text` as a str if it is strict UTF-8. Short ASCII strs (keys, roles, ids) are the
/// common case and skip the general validator's setup.
#[inline]
fn utf8(text: &[u8]) -> Option<&str> {
    if text.len() <= 32 && text.is_ascii() {
        // SAFETY: ASCII bytes are valid UTF-8.
        return Some(unsafe { std::str::from_utf8_unchecked(text) });
    }
    simdutf8::basic::from_utf8(text).ok()
}

impl<'py> PyBuilder<'py> {
    /// The key texts of record shape `shape`, made once per shape (None if a key is not
    /// valid UTF-8, which the Python path reports).
    fn shape_texts(&mut self, shape: usize, keys: &[Val<'py>]) -> Option<value::ShapeTexts> {
        if self.shape_texts.len() <= shape {
            self.shape_texts.resize(shape + 1, None);
        }
        if self.shape_texts[shape].is_none() {
            let texts: Option<Vec<Box<str>>> =
                keys.iter().map(|k| k.text().map(Box::from)).collect();
            self.shape_texts[shape] = Some(std::rc::Rc::new(texts?.into()));
        }
        self.shape_texts[shape].clone()
    }

    /// Whether `name` is registered as one of rillet's own types (no `from_state` hook).
    fn is_native_type(&mut self, name: &Val<'py>) -> bool {
        let Val::Py(name) = name else {
            return false;
        };
        matches!(self.entry(name), Ok(Some(e)) if e.from_state.is_none())
    }

    /// The registry entry of `name`, if it is registered.
    fn entry(&mut self, name: &Bound<'py, PyAny>) -> PyResult<Option<Entry<'py>>> {
        let text = name
            .cast_exact::<PyString>()
            .ok()
            .and_then(|s| s.to_str().ok());
        if let Some(text) = text {
            if let Some((_, e)) = self.entries.iter().find(|(n, _)| n == text) {
                return Ok(Some(e.clone()));
            }
        }
        let Some(found) = self.names.get_item(name)? else {
            return Ok(None);
        };
        let (version, from_state, migrate): (u32, Bound<'py, PyAny>, Option<Bound<'py, PyAny>>) =
            found.extract()?;
        let entry = Entry {
            version,
            from_state: (!from_state.is_none()).then_some(from_state),
            migrate,
        };
        // A handful of types per checkpoint; past that, look the rare others up each time.
        if let (Some(text), true) = (text, self.entries.len() < 16) {
            self.entries.push((text.to_owned(), entry.clone()));
        }
        Ok(Some(entry))
    }

    #[inline]
    fn py_scalar(&mut self, s: Scalar<'_>, key: bool) -> Result<Bound<'py, PyAny>> {
        let py = self.py;
        // SAFETY (all arms): C API constructors given valid pointers and lengths.
        unsafe {
            match s {
                Scalar::Str(text) if text.len() <= MAX_CACHED_KEY && text.is_ascii() => {
                    if text.len() <= self.cached_len[key as usize] {
                        Ok(self.keys.get(py, text)?)
                    } else {
                        self.owned(new_ascii(text))
                    }
                }
                Scalar::Str(text) => {
                    decode_str(py, text).map_err(|e| BuildError::caused("expected a UTF-8 str", e))
                }
                Scalar::Int(v) => self.owned(ffi::PyLong_FromLongLong(v)),
                Scalar::Nil => Ok(py.None().into_bound(py)),
                Scalar::Bool(v) => Ok(pyo3::types::PyBool::new(py, v).to_owned().into_any()),
                Scalar::Float(v) => self.owned(ffi::PyFloat_FromDouble(v)),
                Scalar::UInt(v) => self.owned(ffi::PyLong_FromUnsignedLongLong(v)),
                Scalar::Bin(b) => Ok(new_bytes(py, b)?.into_any()),
                Scalar::BigInt {
                    negative,
                    magnitude,
                } => {
                    let from_bytes = attr(py.get_type::<PyInt>().as_any(), c"from_bytes")?;
                    let magnitude = new_bytes(py, magnitude)?.into_any();
                    let int = call(&from_bytes, &[&magnitude, &new_str(py, "big")?])?;
                    Ok(if negative { int.neg()? } else { int })
                }
                Scalar::SurrogateStr(b) => self.owned(ffi::PyUnicode_DecodeUTF8(
                    b.as_ptr().cast(),
                    b.len() as ffi::Py_ssize_t,
                    c"surrogatepass".as_ptr(),
                )),
                Scalar::Uuid(b) => {
                    // UUID(hex=None, bytes=b)
                    let args = [&py.None().into_bound(py), &new_bytes(py, b)?.into_any()];
                    Ok(call(stdlib(py)?.uuid.bind(py).as_any(), &args)?)
                }
                Scalar::Decimal(text) => call(
                    stdlib(py)?.decimal.bind(py).as_any(),
                    &[&new_str(py, text)?],
                )
                .map_err(|e| BuildError::caused(format!("invalid decimal {text:?}"), e)),
            }
        }
    }
}

impl<'py> PyBuilder<'py> {
    /// A format-2 record: the decoder checked that the keys are distinct strs.
    fn record_dict(
        &self,
        keys: &[Val<'py>],
        items: &mut Vec<Val<'py>>,
        start: usize,
    ) -> Result<Bound<'py, PyAny>> {
        // SAFETY: a new dict filled with the C API; every insert is checked.
        unsafe {
            let dict = self.owned(_PyDict_NewPresized(keys.len() as ffi::Py_ssize_t))?;
            for (k, v) in keys.iter().zip(items.drain(start..)) {
                let v = v.into_py(self.py)?;
                // Shape keys are made as Python strs outside message states: each record
                // borrows its shape's strs (the dict takes its own reference).
                let made;
                let k = match k {
                    Val::Py(k) => k,
                    other => {
                        made = other.clone().into_py(self.py)?;
                        &made
                    }
                };
                if ffi::PyDict_SetItem(dict.as_ptr(), k.as_ptr(), v.as_ptr()) != 0 {
                    return Err(PyErr::fetch(self.py).into());
                }
            }
            Ok(dict)
        }
    }

    #[inline]
    fn list(&self, items: &mut Vec<Val<'py>>, start: usize) -> Result<Bound<'py, PyAny>> {
        let n = items.len() - start;
        // SAFETY: a new list of n NULL slots, each filled at most once with a stolen
        // reference (a list left with NULL slots by an error is still freed safely).
        unsafe {
            let list = self.owned(ffi::PyList_New(n as ffi::Py_ssize_t))?;
            for (i, v) in items.drain(start..).enumerate() {
                let v = v.into_py(self.py)?;
                ffi::PyList_SET_ITEM(list.as_ptr(), i as ffi::Py_ssize_t, v.into_ptr());
            }
            Ok(list)
        }
    }

    fn tuple(&self, items: &mut Vec<Val<'py>>, start: usize) -> Result<Bound<'py, PyAny>> {
        let n = items.len() - start;
        // SAFETY: as for lists.
        unsafe {
            let tuple = self.owned(ffi::PyTuple_New(n as ffi::Py_ssize_t))?;
            for (i, v) in items.drain(start..).enumerate() {
                let v = v.into_py(self.py)?;
                ffi::PyTuple_SET_ITEM(tuple.as_ptr(), i as ffi::Py_ssize_t, v.into_ptr());
            }
            Ok(tuple)
        }
    }

    #[inline]
    fn map(&self, items: &mut Vec<Val<'py>>, start: usize) -> Result<Bound<'py, PyAny>> {
        // SAFETY: a new dict, filled with the C API; every failure is checked.
        let dict = unsafe {
            self.owned(_PyDict_NewPresized(
                ((items.len() - start) / 2) as ffi::Py_ssize_t,
            ))?
        };
        let pairs = self.py_items(items, start)?;
        let mut pairs = pairs.into_iter();
        let pairs = std::iter::from_fn(|| Some((pairs.next()?, pairs.next()?)));
        self.fill_unique(&dict, pairs, "map key", |d, (k, v)| unsafe {
            (
                ffi::PyDict_SetItem(d, k.as_ptr(), v.as_ptr()),
                ffi::PyDict_Size(d),
                k,
            )
        })?;
        Ok(dict)
    }

    fn set(
        &self,
        items: &mut Vec<Val<'py>>,
        start: usize,
        frozen: bool,
    ) -> Result<Bound<'py, PyAny>> {
        let items = self.py_items(items, start)?;
        // SAFETY: a brand-new set or frozenset may be filled with PySet_Add.
        let set = unsafe {
            self.owned(if frozen {
                ffi::PyFrozenSet_New(std::ptr::null_mut())
            } else {
                ffi::PySet_New(std::ptr::null_mut())
            })?
        };
        self.fill_unique(&set, items.into_iter(), "set element", |s, v| unsafe {
            (ffi::PySet_Add(s, v.as_ptr()), ffi::PySet_Size(s), v)
        })?;
        Ok(set)
    }

    /// `items[start..]` as Python objects, taken off the stack.
    fn py_items(
        &self,
        items: &mut Vec<Val<'py>>,
        start: usize,
    ) -> PyResult<Vec<Bound<'py, PyAny>>> {
        items.drain(start..).map(|v| v.into_py(self.py)).collect()
    }

    /// Inserts every item with `insert`, which returns (status, new size, the key), and
    /// refuses unhashable keys and keys equal to an earlier one.
    fn fill_unique<T>(
        &self,
        target: &Bound<'py, PyAny>,
        items: impl Iterator<Item = T>,
        what: &str,
        insert: impl Fn(*mut ffi::PyObject, T) -> (i32, ffi::Py_ssize_t, Bound<'py, PyAny>),
    ) -> Result<()> {
        for (n, item) in items.enumerate() {
            let (status, len, key) = insert(target.as_ptr(), item);
            if status != 0 {
                let e = PyErr::fetch(self.py);
                return Err(BuildError::caused(
                    format!("unhashable {what} of type {}", kind_of(&key)),
                    e,
                ));
            }
            if len != n as ffi::Py_ssize_t + 1 {
                return Err(BuildError::new(format!(
                    "duplicate {what} {}",
                    short_repr(&key)
                )));
            }
        }
        Ok(())
    }

    /// `[name, version, state]` → the registered class, migrating older versions first.
    fn object(&mut self, f: Vec<Val<'py>>) -> Result<Val<'py>> {
        let py = self.py;
        let [name, version, state]: [Val<'py>; 3] = f.try_into().map_err(|_| {
            BuildError::new("expected [name, version, state] in a registered object")
        })?;
        let name = name.into_py(py)?;
        let name = name
            .cast_exact::<PyString>()
            .map_err(|_| BuildError::new("expected a str as registered type name"))?;
        let version: u32 = match version {
            Val::Int(v) => u32::try_from(v).ok(),
            Val::UInt(v) => u32::try_from(v).ok(),
            Val::Py(v) => v.extract().ok(),
            _ => None,
        }
        .ok_or_else(|| BuildError::new("expected a non-negative int as registered type version"))?;
        let Some(entry) = self.entry(name.as_any())? else {
            if let Some(unknown) = &self.unknown {
                return unknown
                    .call1((name, version, state.into_py(py)?))
                    .map(Val::Py)
                    .map_err(|e| BuildError::caused(format!("the unknown= hook failed: {e}"), e));
            }
            return Err(BuildError::new(format!(
                "unknown registered type {name}: call rillet.codec.register_type(<its class>, name={name}) before decoding, or pass unknown=\"placeholder\" to inspect it",
                name = short_repr(name.as_any())
            )));
        };
        let Entry {
            version: current,
            from_state,
            migrate,
        } = entry;
        let mut state = state;
        if version > current {
            return Err(BuildError::new(format!(
                "{name} version {version} is newer than the registered version {current}; upgrade the code that registers it"
            )));
        }
        if version < current {
            let Some(migrate) = migrate else {
                return Err(BuildError::new(format!(
                    "{name} version {version} is older than the registered version {current}, and no migrate function was registered"
                )));
            };
            let migrated = migrate.call1((state.into_py(py)?, version)).map_err(|e| {
                BuildError::caused(
                    format!("migrating {name} from version {version} failed: {e}"),
                    e,
                )
            })?;
            state = Val::Py(migrated);
        }
        let Some(from_state) = from_state else {
            // rillet's own message types: built from the state's fields in Rust.
            return native::build(py, name.to_str()?, state).map(Val::Py);
        };
        from_state
            .call1((state.into_py(py)?,))
            .map(Val::Py)
            .map_err(|e| {
                BuildError::caused(format!("building {name} from its state failed: {e}"), e)
            })
    }
}

fn field<'py, T: pyo3::conversion::FromPyObjectOwned<'py>>(
    f: &[Bound<'py, PyAny>],
    i: usize,
    what: &str,
) -> Result<T> {
    f[i].extract::<T>()
        .map_err(|_| BuildError::new(format!("expected {what}")))
}

fn datetime<'py>(py: Python<'py>, f: &[Bound<'py, PyAny>]) -> Result<Bound<'py, PyAny>> {
    let what = "datetime fields [year, month, day, hour, minute, second, microsecond, fold, tz]";
    let tz = tzinfo(py, &f[8])?;
    let fold: u8 = field(f, 7, what)?;
    let dt = PyDateTime::new_with_fold(
        py,
        field(f, 0, what)?,
        field(f, 1, what)?,
        field(f, 2, what)?,
        field(f, 3, what)?,
        field(f, 4, what)?,
        field(f, 5, what)?,
        field(f, 6, what)?,
        tz.as_ref(),
        fold_flag(fold)?,
    );
    Ok(dt
        .map_err(|e| BuildError::caused(format!("invalid datetime: {e}"), e))?
        .into_any())
}

fn date<'py>(py: Python<'py>, f: &[Bound<'py, PyAny>]) -> Result<Bound<'py, PyAny>> {
    let what = "date fields [year, month, day]";
    let d = PyDate::new(
        py,
        field(f, 0, what)?,
        field(f, 1, what)?,
        field(f, 2, what)?,
    );
    Ok(
        d.map_err(|e| BuildError::caused(format!("invalid date: {e}"), e))?
            .into_any(),
    )
}

fn time<'py>(py: Python<'py>, f: &[Bound<'py, PyAny>]) -> Result<Bound<'py, PyAny>> {
    let what = "time fields [hour, minute, second, microsecond, fold, tz]";
    let tz = tzinfo(py, &f[5])?;
    let fold: u8 = field(f, 4, what)?;
    let t = PyTime::new_with_fold(
        py,
        field(f, 0, what)?,
        field(f, 1, what)?,
        field(f, 2, what)?,
        field(f, 3, what)?,
        tz.as_ref(),
        fold_flag(fold)?,
    );
    Ok(
        t.map_err(|e| BuildError::caused(format!("invalid time: {e}"), e))?
            .into_any(),
    )
}

fn timedelta<'py>(py: Python<'py>, f: &[Bound<'py, PyAny>]) -> Result<Bound<'py, PyAny>> {
    let what = "timedelta fields [days, seconds, microseconds]";
    let (days, seconds, micros): (i32, i32, i32) =
        (field(f, 0, what)?, field(f, 1, what)?, field(f, 2, what)?);
    // Only the normalised form Python itself stores is accepted, so decoding is exact.
    if !(0..86_400).contains(&seconds) || !(0..1_000_000).contains(&micros) {
        return Err(BuildError::new(format!("expected normalised {what}")));
    }
    let d = PyDelta::new(py, days, seconds, micros, false);
    Ok(
        d.map_err(|e| BuildError::caused(format!("invalid timedelta: {e}"), e))?
            .into_any(),
    )
}

fn fold_flag(fold: u8) -> Result<bool> {
    match fold {
        0 | 1 => Ok(fold == 1),
        _ => Err(BuildError::new("expected fold 0 or 1")),
    }
}

/// nil, offset seconds, a ZoneInfo key, or `[seconds, microseconds, name]`.
fn tzinfo<'py>(py: Python<'py>, v: &Bound<'py, PyAny>) -> Result<Option<Bound<'py, PyTzInfo>>> {
    let std = stdlib(py)?;
    let tz = if v.is_none() {
        return Ok(None);
    } else if let Ok(seconds) = v.cast_exact::<PyInt>() {
        let seconds: i64 = seconds.extract()?;
        if seconds == 0 {
            std.utc.bind(py).clone()
        } else {
            std.timezone
                .bind(py)
                .call1((py.get_type::<PyDelta>().call1((0, seconds))?,))?
        }
    } else if let Ok(key) = v.cast_exact::<PyString>() {
        std.zoneinfo.bind(py).call1((key,)).map_err(|e| {
            BuildError::caused(format!("unknown time zone {}", short_repr(key.as_any())), e)
        })?
    } else if let Ok(list) = v.cast_exact::<PyList>() {
        let parts = (list.len() == 3).then(|| -> PyResult<_> {
            Ok((
                list.get_item(0)?.extract::<i64>()?,
                list.get_item(1)?.extract::<i64>()?,
                list.get_item(2)?
                    .extract::<Option<Bound<'py, PyString>>>()?,
            ))
        });
        let (seconds, micros, name) = parts
            .and_then(|p| p.ok())
            .ok_or_else(|| BuildError::new("expected a tz as [seconds, microseconds, name]"))?;
        let delta = py.get_type::<PyDelta>().call1((0, seconds, micros))?;
        match name {
            Some(name) => std.timezone.bind(py).call1((delta, name))?,
            None => std.timezone.bind(py).call1((delta,))?,
        }
    } else {
        return Err(BuildError::new(
            "expected a tz: nil, offset seconds, a zone key or [seconds, microseconds, name]",
        ));
    };
    Ok(Some(tz.cast_into::<PyTzInfo>().map_err(PyErr::from)?))
}

fn kind_of(v: &Bound<'_, PyAny>) -> String {
    v.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// A repr for error messages, cut short so a hostile input cannot make a huge message.
fn short_repr(v: &Bound<'_, PyAny>) -> String {
    let r = v
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "<value>".into());
    if r.chars().count() > 80 {
        format!("{}...", r.chars().take(77).collect::<String>())
    } else {
        r
    }
}

extern "C" {
    /// CPython's dict constructor sized for `minused` items (private but exported; ormsgpack
    /// and orjson use it too): avoids resizing while a decoded map is filled.
    fn _PyDict_NewPresized(minused: ffi::Py_ssize_t) -> *mut ffi::PyObject;
}

/// Short ASCII values (roles, names, enum-like tags) repeat too, and sharing them is invisible.
const MAX_CACHED_VALUE: usize = 16;
/// Dict keys up to this many bytes go through the key cache.
const MAX_CACHED_KEY: usize = 64;
const KEY_SLOTS: usize = 512;
/// Format 2 writers share strs of 4 UTF-8 bytes or more; shorter ones repeat as they are.
const MIN_UNSHARED_LEN: usize = 3;

/// A direct-mapped cache of short ASCII dict keys, per decode call, so repeated keys such as
/// "role" and "content" are created once and shared. Fixed size: hostile keys can only evict.
struct KeyCache<'py> {
    slots: Vec<Option<Bound<'py, PyAny>>>,
}

impl<'py> KeyCache<'py> {
    /// The shared str of `text`, made and cached on a miss; a failed allocation raises (and
    /// leaves the slot as it was).
    #[inline]
    fn get(&mut self, py: Python<'py>, text: &[u8]) -> PyResult<Bound<'py, PyAny>> {
        self.get_with(py, text, new_ascii)
    }

    /// `get` with the constructor passed in, so tests can make it fail.
    #[inline(always)]
    fn get_with(
        &mut self,
        py: Python<'py>,
        text: &[u8],
        make: unsafe fn(&[u8]) -> *mut ffi::PyObject,
    ) -> PyResult<Bound<'py, PyAny>> {
        let slot = &mut self.slots[hash(text) % KEY_SLOTS];
        if let Some(s) = slot {
            // SAFETY: cached strings are exact compact ASCII strs made by `new_ascii`.
            let cached = unsafe {
                std::slice::from_raw_parts(
                    ffi::PyUnicode_DATA(s.as_ptr()) as *const u8,
                    ffi::PyUnicode_GET_LENGTH(s.as_ptr()) as usize,
                )
            };
            if cached == text {
                return Ok(s.clone());
            }
        }
        // SAFETY: `text` is ASCII (checked by the reader).
        let s = unsafe { Bound::from_owned_ptr_or_err(py, make(text)) }?;
        *slot = Some(s.clone());
        Ok(s)
    }
}

/// A cheap hash of a short key: its length and first and last 8 bytes. Collisions only
/// cost a cache miss, and the cache is direct-mapped, so hostile keys cannot slow it down.
#[inline]
fn hash(b: &[u8]) -> usize {
    let n = b.len();
    let head = match b.first_chunk::<8>() {
        Some(w) => u64::from_le_bytes(*w),
        None => b.iter().fold(0u64, |h, &c| (h << 8) | c as u64),
    };
    let tail = b.last_chunk::<8>().map_or(0, |w| u64::from_le_bytes(*w));
    let h = (head ^ tail.rotate_left(29) ^ n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
    (h >> 40) as usize
}

/// A new str from ASCII bytes, copied straight into a compact ASCII object.
///
/// # Safety
/// `text` must be ASCII. Returns a new reference, or NULL with an exception set.
unsafe fn new_ascii(text: &[u8]) -> *mut ffi::PyObject {
    let s = ffi::PyUnicode_New(text.len() as ffi::Py_ssize_t, 127);
    if !s.is_null() {
        std::ptr::copy_nonoverlapping(text.as_ptr(), ffi::PyUnicode_DATA(s) as *mut u8, text.len());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use pyo3::exceptions::PyMemoryError;

    /// A constructor that fails as CPython's do when they cannot allocate.
    unsafe fn no_memory(_: &[u8]) -> *mut ffi::PyObject {
        ffi::PyErr_NoMemory()
    }

    #[test]
    fn a_key_that_cannot_be_made_raises_and_is_not_cached() {
        Python::initialize();
        Python::attach(|py| {
            let mut keys = KeyCache {
                slots: (0..KEY_SLOTS).map(|_| None).collect(),
            };
            let err = keys.get_with(py, b"role", no_memory).unwrap_err();
            assert!(err.is_instance_of::<PyMemoryError>(py));
            let role = keys.get(py, b"role").unwrap();
            assert_eq!(role.extract::<String>().unwrap(), "role");
            // A hit needs no allocation.
            let again = keys.get_with(py, b"role", no_memory).unwrap();
            assert!(again.is(&role));
        });
    }
}
