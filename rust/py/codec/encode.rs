//! The encoder: one walk over Python objects into a [`Writer`], driven by a loop over an
//! explicit stack of [`Frame`]s rather than by recursion, so no nesting depth and no small
//! thread stack can overflow the C stack (the decoder works the same way).
//!
//! Dispatch is on the exact type pointer, so subclasses of builtins never pass for their base
//! (they must be registered). Nesting is bounded by `max_depth`, and every container on
//! the current path is remembered so a reference cycle is reported as such. Items are held
//! as strong references while a user hook may run, so a hook that mutates a container being
//! encoded gets an error, not a dangling pointer (dicts written through format 2's tables
//! are copied first, so such a hook gets the copy written instead).
//!
//! Format 2 shares repeated strings and dict key lists through [`Sharing`], keyed by object
//! identity (see `crate::codec::repeats` for the define-on-second-sight rule).

use std::cell::RefCell;
use std::collections::HashSet;
use std::ptr::addr_of_mut;

use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::{
    PyDate, PyDateAccess, PyDateTime, PyDelta, PyDeltaAccess, PyDict, PyIterator, PyString, PyTime,
    PyTimeAccess, PyTuple, PyTzInfo, PyTzInfoAccess,
};

mod native;

use super::stdlib::stdlib;
use crate::codec::ext;
use crate::codec::repeats::{AddrRepeats, ShapeRepeats, Use};
use crate::codec::wire::{TooLong, Writer};
use crate::py::errors::{self, Class};

/// One step of the path from the top-level object to a failing value.
enum Seg {
    Index(usize),
    Key(Py<PyAny>),
    /// A field of a registered object's state.
    Field(Py<PyAny>),
    SetItem,
    MapKey,
}

/// An encoding failure. `message` contains `{path}`, filled in once the path is complete.
struct Failure {
    message: String,
    cause: Option<PyErr>,
    /// Innermost step first; filled from the frames left when the walk stops.
    path: Vec<Seg>,
}

type Result<T = (), E = Box<Failure>> = std::result::Result<T, E>;

fn fail(message: String) -> Box<Failure> {
    Box::new(Failure {
        message,
        cause: None,
        path: Vec::new(),
    })
}

fn fail_with(message: String, cause: PyErr) -> Box<Failure> {
    Box::new(Failure {
        message,
        cause: Some(cause),
        path: Vec::new(),
    })
}

impl From<TooLong> for Box<Failure> {
    fn from(e: TooLong) -> Self {
        fail(format!(
            "a value of length {} at {{path}} is longer than the format allows (4 GiB - 1)",
            e.0
        ))
    }
}

/// Strings shorter than this many UTF-8 bytes are always written in full: a reference
/// (3 bytes) would not be shorter.
const MIN_SHARED_STR: usize = 4;
/// Dicts with more keys are always written as maps (large dicts are rarely records).
const MAX_SHAPE_KEYS: usize = 64;
/// How many distinct strings and shapes one encode tracks, bounding its memory.
const MAX_TRACKED: usize = 1 << 20;

/// Format 2's tables, keyed by object identity. Every tracked object is kept alive until
/// the encode ends, so an address can never be reused by a different object meanwhile.
struct Sharing {
    strings: AddrRepeats,
    shapes: ShapeRepeats,
    keep: Vec<Py<PyAny>>,
}

impl Sharing {
    fn new() -> Self {
        Sharing {
            strings: AddrRepeats::new(MAX_TRACKED),
            shapes: ShapeRepeats::new(MAX_TRACKED),
            keep: Vec::new(),
        }
    }

    /// Empties the tables for the next encode on this thread, unless they grew large.
    fn recycle(mut self) {
        self.keep.clear();
        if self.strings.capacity() + self.shapes.capacity() <= KEEP_TRACKED {
            self.strings.clear();
            self.shapes.clear();
            TABLES.with(|t| *t.borrow_mut() = Some(self));
        }
    }
}

/// Tables above this many slots are freed after use instead of kept.
const KEEP_TRACKED: usize = 1 << 16;

thread_local! {
    /// The tables of the last encode on this thread, emptied, so each encode does not
    /// regrow them. Taken out while in use: a to_state hook may encode again.
    static TABLES: RefCell<Option<Sharing>> = const { RefCell::new(None) };
}

/// How many containers of the current path are searched linearly for a cycle; deeper ones
/// are also kept in a hash set, so a very deep path costs O(1) per container, not O(depth).
const SCAN_OPEN: usize = 64;

pub fn encode<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    types: &Bound<'py, PyDict>,
    max_depth: usize,
    version: u8,
    buf: Vec<u8>,
) -> (PyResult<()>, Vec<u8>) {
    let share = (version >= 2).then(|| {
        TABLES
            .with(|t| t.borrow_mut().take())
            .unwrap_or_else(Sharing::new)
    });
    let mut enc = Encoder {
        py,
        w: Writer { buf },
        types,
        max_depth,
        open: Vec::new(),
        deep: HashSet::new(),
        frames: Vec::new(),
        share,
        items: Vec::new(),
        shape: Vec::new(),
        keys: None,
    };
    enc.w.envelope(version);
    let result = enc.run(obj).map_err(|mut f| {
        f.path = enc.path();
        into_pyerr(py, *f)
    });
    enc.frames.clear();
    enc.items.clear();
    if let Some(share) = enc.share.take() {
        share.recycle();
    }
    (result, enc.w.buf)
}

/// A container being written, resumed each time its current child is done. The walk is a
/// loop over a stack of these (not recursion), so no nesting depth can overflow the C stack.
/// Each frame holds its container strongly: a user hook may drop every other reference.
enum Frame<'py> {
    /// A list, at item `i` of the `n` it had when it was started.
    List {
        list: Bound<'py, PyAny>,
        i: usize,
        n: usize,
    },
    /// A tuple inside its ext, begun at `mark`.
    Tuple {
        tuple: Bound<'py, PyAny>,
        i: usize,
        mark: usize,
    },
    /// A set or frozenset inside its ext.
    Set {
        iter: Bound<'py, PyIterator>,
        seen: usize,
        n: usize,
        mark: usize,
        code: i8,
    },
    /// A dict as a msgpack map. `key` is the current item's key; `val` its value, pending
    /// while the key is written.
    Map {
        dict: Bound<'py, PyAny>,
        pos: ffi::Py_ssize_t,
        seen: usize,
        n: usize,
        fields: bool,
        key: Option<Bound<'py, PyAny>>,
        val: Option<Bound<'py, PyAny>>,
    },
    /// A format-2 snapshot of a dict: its items are `self.items[base..end]`, at `i`.
    /// `in_key` is set only when writing a key failed (for the error path).
    Record {
        /// Held so that its address in `open` stays its own.
        _dict: Bound<'py, PyAny>,
        base: usize,
        i: usize,
        end: usize,
        keys_too: bool,
        fields: bool,
        in_key: bool,
    },
    /// A registered object inside its ext; `state` is pending until it is written.
    Object {
        /// Held so that its address in `open` stays its own.
        _obj: Bound<'py, PyAny>,
        state: Option<Bound<'py, PyAny>>,
        fields: bool,
        mark: usize,
    },
}

struct Encoder<'a, 'py> {
    py: Python<'py>,
    w: Writer,
    types: &'a Bound<'py, PyDict>,
    max_depth: usize,
    /// The containers on the current path (one per frame), for cycle detection and the
    /// depth bound; those past the first SCAN_OPEN are in `deep` as well.
    open: Vec<*mut ffi::PyObject>,
    deep: HashSet<usize>,
    /// The containers being written, innermost last.
    frames: Vec<Frame<'py>>,
    /// Format 2 only.
    share: Option<Sharing>,
    /// Format 2: the items of the dicts being written, innermost last (one stack for all
    /// nesting levels), and a scratch list of one dict's key addresses.
    items: Vec<(Bound<'py, PyAny>, Bound<'py, PyAny>)>,
    shape: Vec<usize>,
    /// The interned keys of rillet's message states, once one is written natively.
    keys: Option<native::Keys>,
}

macro_rules! is_type {
    ($t:expr, $ty:ident) => {
        $t == addr_of_mut!(ffi::$ty)
    };
}

impl<'py> Encoder<'_, 'py> {
    /// Writes `root`: a scalar at once, a container by pushing a frame and then stepping
    /// until no frame is left.
    fn run(&mut self, root: &Bound<'py, PyAny>) -> Result {
        self.value(root)?;
        while !self.frames.is_empty() {
            self.step()?;
        }
        Ok(())
    }

    /// Writes the next child of the innermost container, or finishes that container.
    /// A failure about the container itself pops its frame first, so the error path
    /// (built from the frames left) names the container; a child's failure leaves it.
    fn step(&mut self) -> Result {
        let py = self.py;
        let Some(top) = self.frames.last_mut() else {
            return Ok(());
        };
        match top {
            Frame::List { list, i, n } => {
                let p = list.as_ptr();
                // SAFETY: `p` is an exact list held by the frame; the size is re-read before
                // each access and the item is held strongly while it is written.
                let len = unsafe { ffi::PyList_GET_SIZE(p) } as usize;
                if *i == *n {
                    return self.finish();
                }
                if *i >= len {
                    return self.fail_own(changed("list"));
                }
                let item = unsafe {
                    Bound::from_borrowed_ptr(py, ffi::PyList_GET_ITEM(p, *i as ffi::Py_ssize_t))
                };
                *i += 1;
                self.value(&item)
            }
            Frame::Tuple { tuple, i, .. } => {
                let p = tuple.as_ptr();
                // SAFETY: an exact tuple is immutable and the frame holds it, so its items
                // live as long as the frame.
                if *i == unsafe { ffi::PyTuple_GET_SIZE(p) } as usize {
                    return self.finish();
                }
                let item = unsafe {
                    Borrowed::from_ptr(py, ffi::PyTuple_GET_ITEM(p, *i as ffi::Py_ssize_t))
                };
                *i += 1;
                self.value(&item)
            }
            Frame::Set { iter, seen, n, .. } => match iter.next() {
                None => self.finish(),
                Some(Err(e)) => {
                    self.fail_own(fail_with("cannot iterate the set at {path}".into(), e))
                }
                Some(Ok(item)) => {
                    *seen += 1;
                    if *seen > *n {
                        return self.fail_own(changed("set"));
                    }
                    self.value(&item)
                }
            },
            Frame::Map {
                dict,
                pos,
                seen,
                n,
                key,
                val,
                ..
            } => {
                if let Some(v) = val.take() {
                    return self.value(&v);
                }
                let (mut k, mut v) = (std::ptr::null_mut(), std::ptr::null_mut());
                // SAFETY: an exact dict held by the frame. PyDict_Next is memory-safe even if
                // a hook mutates the dict; key and value are held strongly by the frame.
                if unsafe { ffi::PyDict_Next(dict.as_ptr(), pos, &mut k, &mut v) } == 0 {
                    return self.finish();
                }
                *seen += 1;
                if *seen > *n {
                    return self.fail_own(changed("dict"));
                }
                let k = unsafe { Bound::from_borrowed_ptr(py, k) };
                *val = Some(unsafe { Bound::from_borrowed_ptr(py, v) });
                let key = key.insert(k).as_ptr();
                // SAFETY: the frame holds the key until its next item.
                let key = unsafe { Borrowed::from_ptr(py, key) };
                self.value(&key)
            }
            Frame::Record {
                i, end, keys_too, ..
            } => {
                if *i == *end {
                    return self.finish();
                }
                let (k, v) = (self.items[*i].0.as_ptr(), self.items[*i].1.as_ptr());
                *i += 1;
                if *keys_too {
                    // SAFETY: snapshot keys are exact strs, held by `self.items`.
                    unsafe { self.str(k) }.map_err(|f| self.at_record_key(f))?;
                }
                // SAFETY: `self.items` holds the value until this frame is finished (nested
                // dicts only push and truncate above it), so borrowing it costs no refcount.
                let v = unsafe { Borrowed::from_ptr(py, v) };
                self.value(&v)
            }
            Frame::Object { state, fields, .. } => match state.take() {
                None => self.finish(),
                Some(state) if *fields && state.is_exact_instance_of::<PyDict>() => {
                    self.dict(&state, true)
                }
                Some(state) => self.value(&state),
            },
        }
    }

    /// Pops the innermost frame and completes its container.
    fn finish(&mut self) -> Result {
        let Some(frame) = self.frames.pop() else {
            return Ok(());
        };
        self.leave();
        match frame {
            Frame::List { list, n, .. } => {
                // SAFETY: an exact list.
                if n != unsafe { ffi::PyList_GET_SIZE(list.as_ptr()) } as usize {
                    return Err(changed("list"));
                }
            }
            Frame::Tuple { mark, .. } => self.w.ext_end(mark, ext::TUPLE)?,
            Frame::Set {
                seen,
                n,
                mark,
                code,
                ..
            } => {
                if seen != n {
                    return Err(changed("set"));
                }
                self.w.ext_end(mark, code)?;
            }
            Frame::Map { dict, seen, n, .. } => {
                // SAFETY: an exact dict.
                if seen != n || n != unsafe { ffi::PyDict_Size(dict.as_ptr()) } as usize {
                    return Err(changed("dict"));
                }
            }
            Frame::Record { base, .. } => self.items.truncate(base),
            Frame::Object { mark, .. } => self.w.ext_end(mark, ext::OBJECT)?,
        }
        Ok(())
    }

    /// A failure of the innermost container itself: its frame is popped so that the error
    /// path ends at the container.
    fn fail_own(&mut self, f: Box<Failure>) -> Result {
        self.frames.pop();
        Err(f)
    }

    /// Marks the innermost record as failing on a key, for the error path.
    fn at_record_key(&mut self, f: Box<Failure>) -> Box<Failure> {
        if let Some(Frame::Record { in_key, .. }) = self.frames.last_mut() {
            *in_key = true;
        }
        f
    }

    /// The path from the top level to the current child, innermost step first.
    fn path(&self) -> Vec<Seg> {
        let key = |k: &Bound<'py, PyAny>, fields: bool| {
            let k = k.clone().unbind();
            if fields {
                Seg::Field(k)
            } else {
                Seg::Key(k)
            }
        };
        let mut path = Vec::new();
        for frame in self.frames.iter().rev() {
            path.push(match frame {
                Frame::List { i, .. } | Frame::Tuple { i, .. } => Seg::Index(i.saturating_sub(1)),
                Frame::Set { .. } => Seg::SetItem,
                Frame::Map {
                    key: Some(k),
                    val: None,
                    fields,
                    ..
                } => key(k, *fields),
                Frame::Map { .. } => Seg::MapKey,
                Frame::Record { in_key: true, .. } => Seg::MapKey,
                Frame::Record { i, fields, .. } => match self.items.get(i.wrapping_sub(1)) {
                    Some((k, _)) => key(k, *fields),
                    None => Seg::MapKey,
                },
                Frame::Object { .. } => continue,
            });
        }
        path
    }

    /// Writes a scalar, or begins a container (pushes its frame).
    fn value(&mut self, o: &Bound<'py, PyAny>) -> Result {
        let p = o.as_ptr();
        // SAFETY: `p` is a live object (borrowed from `o`); the type objects are statics.
        unsafe {
            let t = ffi::Py_TYPE(p);
            if is_type!(t, PyUnicode_Type) {
                self.str(p)
            } else if is_type!(t, PyDict_Type) {
                self.dict(o, false)
            } else if is_type!(t, PyLong_Type) {
                self.int(o)
            } else if is_type!(t, PyList_Type) {
                self.list(o)
            } else if p == ffi::Py_None() {
                self.w.nil();
                Ok(())
            } else if is_type!(t, PyBool_Type) {
                self.w.bool(p == ffi::Py_True());
                Ok(())
            } else if is_type!(t, PyFloat_Type) {
                self.w.float(ffi::PyFloat_AS_DOUBLE(p));
                Ok(())
            } else if is_type!(t, PyTuple_Type) {
                self.tuple(o)
            } else if is_type!(t, PyBytes_Type) {
                let data = std::slice::from_raw_parts(
                    ffi::PyBytes_AS_STRING(p) as *const u8,
                    ffi::PyBytes_Size(p) as usize,
                );
                Ok(self.w.bin(data)?)
            } else if is_type!(t, PySet_Type) {
                self.set(o, ext::SET)
            } else if is_type!(t, PyFrozenSet_Type) {
                self.set(o, ext::FROZENSET)
            } else {
                self.other(o)
            }
        }
    }

    /// # Safety
    /// `p` must be a live exact `str`.
    unsafe fn str(&mut self, p: *mut ffi::PyObject) -> Result {
        let data = utf8_of(self.py, p)
            .map_err(|e| fail_with("cannot encode the str at {path}".into(), e))?;
        if let Some(data) = data {
            if data.len() >= MIN_SHARED_STR {
                if let Some(share) = self.share.as_mut() {
                    match share.strings.note(p as usize) {
                        Use::First => share
                            .keep
                            .push(Bound::from_borrowed_ptr(self.py, p).unbind()),
                        Use::Plain => {}
                        Use::Define(_) => return Ok(self.w.ext(ext::STR_DEF, data)?),
                        Use::Ref(i) => {
                            self.w.index_ref(ext::STR_REF, i);
                            return Ok(());
                        }
                    }
                }
            }
            return Ok(self.w.str(data)?);
        }
        // Lone surrogates have no UTF-8 form: write them with "surrogatepass" in their ext.
        let bytes = ffi::PyUnicode_AsEncodedString(p, c"utf-8".as_ptr(), c"surrogatepass".as_ptr());
        let bytes = Bound::from_owned_ptr_or_err(self.py, bytes)
            .map_err(|e| fail_with("cannot encode the str at {path} as UTF-8".into(), e))?;
        let data = bytes.cast_unchecked::<pyo3::types::PyBytes>().as_bytes();
        Ok(self.w.ext(ext::SURROGATE_STR, data)?)
    }

    fn int(&mut self, o: &Bound<'py, PyAny>) -> Result {
        let p = o.as_ptr();
        let mut overflow = 0;
        // SAFETY: `p` is an exact int; the overflow protocol never raises for ints.
        let v = unsafe { ffi::PyLong_AsLongLongAndOverflow(p, &mut overflow) };
        if overflow == 0 {
            self.w.int(v);
            return Ok(());
        }
        if overflow > 0 {
            // SAFETY: as above; on failure the error is fetched and cleared.
            let u = unsafe { ffi::PyLong_AsUnsignedLongLong(p) };
            if u != u64::MAX || PyErr::take(self.py).is_none() {
                self.w.uint(u);
                return Ok(());
            }
        }
        self.bigint(o)
            .map_err(|e| fail_with("cannot encode the int at {path}".into(), e))
    }

    /// Ints outside [-2**63, 2**64): sign byte and big-endian magnitude.
    fn bigint(&mut self, o: &Bound<'py, PyAny>) -> PyResult<()> {
        let negative = o.lt(0)?;
        let magnitude = o.abs()?;
        let bits: usize = magnitude.call_method0("bit_length")?.extract()?;
        let bytes = magnitude.call_method1("to_bytes", (bits.div_ceil(8), "big"))?;
        let mut payload = vec![negative as u8];
        payload.extend_from_slice(bytes.cast::<pyo3::types::PyBytes>()?.as_bytes());
        self.w
            .ext(ext::BIGINT, &payload)
            .map_err(|_| pyo3::exceptions::PyOverflowError::new_err("int too large"))
    }

    /// Enters a container: enforces the depth bound and reports reference cycles.
    fn enter(&mut self, o: &Bound<'py, PyAny>) -> Result {
        let p = o.as_ptr();
        let depth = self.open.len();
        let cycle = if depth <= SCAN_OPEN {
            self.open.contains(&p)
        } else {
            self.open[..SCAN_OPEN].contains(&p) || self.deep.contains(&(p as usize))
        };
        if cycle {
            let ty = type_name(o);
            return Err(fail(format!(
                "reference cycle: the {ty} at {{path}} contains itself"
            )));
        }
        if depth >= self.max_depth {
            return Err(fail(format!(
                "nesting deeper than max_depth={} at {{path}}",
                self.max_depth
            )));
        }
        if depth >= SCAN_OPEN {
            self.deep.insert(p as usize);
        }
        self.open.push(p);
        Ok(())
    }

    fn leave(&mut self) {
        if let Some(p) = self.open.pop() {
            if self.open.len() >= SCAN_OPEN {
                self.deep.remove(&(p as usize));
            }
        }
    }

    fn list(&mut self, o: &Bound<'py, PyAny>) -> Result {
        self.enter(o)?;
        // SAFETY: `o` is an exact list.
        let n = unsafe { ffi::PyList_GET_SIZE(o.as_ptr()) } as usize;
        self.w.array(n)?;
        self.frames.push(Frame::List {
            list: o.clone(),
            i: 0,
            n,
        });
        Ok(())
    }

    /// Begins a dict: a map, or in format 2 a record when its keys repeat; `fields` marks a
    /// registered object's state (for error paths).
    fn dict(&mut self, o: &Bound<'py, PyAny>, fields: bool) -> Result {
        self.enter(o)?;
        let base = self.items.len();
        let Some(usage) = self.snapshot(o.as_ptr()) else {
            return self.map(o, fields);
        };
        let n = self.items.len() - base;
        let header = self.record_header(base, n, usage);
        if header.is_err() {
            self.items.truncate(base);
        }
        header?;
        self.frames.push(Frame::Record {
            _dict: o.clone(),
            base,
            i: base,
            end: base + n,
            keys_too: matches!(usage, Use::First | Use::Plain),
            fields,
            in_key: false,
        });
        Ok(())
    }

    /// In format 2, for a dict of 1 to MAX_SHAPE_KEYS str keys: pushes its items onto
    /// `self.items` (held strongly, so hooks run while writing it cannot free them) and
    /// notes its key list. None means "write it as a plain map".
    fn snapshot(&mut self, p: *mut ffi::PyObject) -> Option<Use> {
        let share = self.share.as_mut()?;
        let n = unsafe { ffi::PyDict_Size(p) } as usize;
        if n == 0 || n > MAX_SHAPE_KEYS {
            return None;
        }
        let base = self.items.len();
        let (mut pos, mut k, mut v) = (0, std::ptr::null_mut(), std::ptr::null_mut());
        // SAFETY: `p` is an exact dict and no Python code runs during this loop.
        while unsafe { ffi::PyDict_Next(p, &mut pos, &mut k, &mut v) } != 0 {
            let is_str = unsafe { ffi::Py_TYPE(k) == addr_of_mut!(ffi::PyUnicode_Type) };
            // A str whose UTF-8 form cannot be made now (no memory) is written the plain
            // way too, which tries again and raises.
            if !is_str || !matches!(unsafe { utf8_of(self.py, k) }, Ok(Some(_))) {
                self.items.truncate(base);
                self.shape.clear();
                return None;
            }
            self.shape.push(k as usize);
            self.items.push(unsafe {
                (
                    Bound::from_borrowed_ptr(self.py, k),
                    Bound::from_borrowed_ptr(self.py, v),
                )
            });
        }
        let usage = share.shapes.note(&self.shape[..]);
        self.shape.clear();
        if usage == Use::First {
            // Identity keys the shape table: keep its keys alive until the encode ends.
            let keys = self.items[base..].iter().map(|(k, _)| k.clone().unbind());
            share.keep.extend(keys);
        }
        Some(usage)
    }

    /// Writes the head of the snapshot `self.items[base..]`: a map header the first time
    /// its key list is seen, then the head of a record `[shape, values...]`.
    fn record_header(&mut self, base: usize, n: usize, usage: Use) -> Result {
        match usage {
            Use::First | Use::Plain => self.w.map(n)?,
            Use::Define(_) => {
                self.w.array(n + 1)?;
                let mark = self.w.ext_begin();
                self.w.array(n)?;
                for (key, _) in &self.items[base..] {
                    // SAFETY: snapshot keys are exact strs whose UTF-8 form was checked.
                    self.w.str(
                        unsafe { utf8_of(self.py, key.as_ptr()) }
                            .ok()
                            .flatten()
                            .unwrap_or_default(),
                    )?;
                }
                self.w.ext_end(mark, ext::SHAPE_DEF)?;
            }
            Use::Ref(i) => {
                self.w.array(n + 1)?;
                self.w.index_ref(ext::SHAPE_REF, i);
            }
        }
        Ok(())
    }

    /// Begins a dict as a msgpack map.
    fn map(&mut self, o: &Bound<'py, PyAny>, fields: bool) -> Result {
        // SAFETY: `o` is an exact dict.
        let n = unsafe { ffi::PyDict_Size(o.as_ptr()) } as usize;
        self.w.map(n)?;
        self.frames.push(Frame::Map {
            dict: o.clone(),
            pos: 0,
            seen: 0,
            n,
            fields,
            key: None,
            val: None,
        });
        Ok(())
    }

    fn tuple(&mut self, o: &Bound<'py, PyAny>) -> Result {
        self.enter(o)?;
        // SAFETY: an exact tuple.
        let n = unsafe { ffi::PyTuple_GET_SIZE(o.as_ptr()) } as usize;
        let mark = self.w.ext_begin();
        self.w.array(n)?;
        self.frames.push(Frame::Tuple {
            tuple: o.clone(),
            i: 0,
            mark,
        });
        Ok(())
    }

    fn set(&mut self, o: &Bound<'py, PyAny>, code: i8) -> Result {
        self.enter(o)?;
        let n = o
            .len()
            .map_err(|e| fail_with("cannot size the set at {path}".into(), e))?;
        let mark = self.w.ext_begin();
        self.w.array(n)?;
        let iter = o
            .try_iter()
            .map_err(|e| fail_with("cannot iterate the set at {path}".into(), e))?;
        self.frames.push(Frame::Set {
            iter,
            seen: 0,
            n,
            mark,
            code,
        });
        Ok(())
    }

    /// Everything that is not a core builtin: stdlib values and registered types.
    fn other(&mut self, o: &Bound<'py, PyAny>) -> Result {
        let std =
            stdlib(self.py).map_err(|e| fail_with("cannot import the stdlib types".into(), e))?;
        let ty = o.get_type();
        if o.is_exact_instance_of::<PyDateTime>() {
            self.datetime(o)
        } else if o.is_exact_instance_of::<PyDate>() {
            let d = unsafe { o.cast_unchecked::<PyDate>() };
            self.fixed(
                ext::DATE,
                &[
                    d.get_year() as i64,
                    d.get_month() as i64,
                    d.get_day() as i64,
                ],
            )
        } else if o.is_exact_instance_of::<PyTime>() {
            self.time(o)
        } else if o.is_exact_instance_of::<PyDelta>() {
            let d = unsafe { o.cast_unchecked::<PyDelta>() };
            self.fixed(
                ext::TIMEDELTA,
                &[
                    d.get_days() as i64,
                    d.get_seconds() as i64,
                    d.get_microseconds() as i64,
                ],
            )
        } else if ty.is(std.uuid.bind(self.py)) {
            let bytes = o
                .getattr("bytes")
                .and_then(|b| Ok(b.cast_into::<pyo3::types::PyBytes>()?));
            let bytes = bytes.map_err(|e| fail_with("cannot read the UUID at {path}".into(), e))?;
            Ok(self.w.ext(ext::UUID, bytes.as_bytes())?)
        } else if ty.is(std.decimal.bind(self.py)) {
            let text = o
                .str()
                .map_err(|e| fail_with("cannot format the Decimal at {path}".into(), e))?;
            Ok(self
                .w
                .ext(ext::DECIMAL, text.to_str().unwrap_or_default().as_bytes())?)
        } else {
            match self.types.get_item(&ty) {
                Ok(Some(entry)) => self.registered(o, &entry),
                _ => Err(unsupported(o)),
            }
        }
    }

    /// A structured ext made of small integers only (date, timedelta).
    fn fixed(&mut self, code: i8, items: &[i64]) -> Result {
        let mark = self.w.ext_begin();
        self.w.array(items.len())?;
        items.iter().for_each(|&i| self.w.int(i));
        Ok(self.w.ext_end(mark, code)?)
    }

    fn datetime(&mut self, o: &Bound<'py, PyAny>) -> Result {
        let d = unsafe { o.cast_unchecked::<PyDateTime>() };
        let (date, time) = (
            [
                d.get_year() as i64,
                d.get_month() as i64,
                d.get_day() as i64,
            ],
            clock(d),
        );
        self.with_tz(
            ext::DATETIME,
            &[&date[..], &time[..]].concat(),
            d.get_tzinfo(),
        )
    }

    fn time(&mut self, o: &Bound<'py, PyAny>) -> Result {
        let t = unsafe { o.cast_unchecked::<PyTime>() };
        self.with_tz(ext::TIME, &clock(t), t.get_tzinfo())
    }

    /// A datetime or time: its integer fields, then the tz.
    fn with_tz(&mut self, code: i8, fields: &[i64], tz: Option<Bound<'py, PyTzInfo>>) -> Result {
        let mark = self.w.ext_begin();
        self.w.array(fields.len() + 1)?;
        fields.iter().for_each(|&v| self.w.int(v));
        self.tzinfo(tz)?;
        Ok(self.w.ext_end(mark, code)?)
    }

    /// nil (naive), an int (a `timezone` offset in seconds), a str (a `ZoneInfo` key), or
    /// `[seconds, microseconds, name]` for a named or sub-second `timezone`.
    fn tzinfo(&mut self, tz: Option<Bound<'py, PyTzInfo>>) -> Result {
        let Some(tz) = tz else {
            self.w.nil();
            return Ok(());
        };
        let std =
            stdlib(self.py).map_err(|e| fail_with("cannot import the stdlib types".into(), e))?;
        if tz.is(std.utc.bind(self.py)) {
            self.w.int(0);
            return Ok(());
        }
        let ty = tz.get_type();
        let result = if ty.is(std.timezone.bind(self.py)) {
            self.fixed_offset(&tz, std.timezone.bind(self.py))
        } else if ty.is(std.zoneinfo.bind(self.py)) {
            self.zone_key(&tz)
        } else {
            let name = type_name(&tz);
            return Err(fail(format!(
                "cannot encode the tzinfo {name} at {{path}}: only datetime.timezone and zoneinfo.ZoneInfo are supported"
            )));
        };
        result.map_err(|e| fail_with("cannot encode the tzinfo at {path}".into(), e))
    }

    fn fixed_offset(
        &mut self,
        tz: &Bound<'py, PyTzInfo>,
        timezone: &Bound<'py, pyo3::types::PyType>,
    ) -> PyResult<()> {
        let none = self.py.None();
        let offset = tz.call_method1("utcoffset", (&none,))?;
        let delta = offset.cast::<PyDelta>()?;
        let seconds = delta.get_days() as i64 * 86_400 + delta.get_seconds() as i64;
        let micros = delta.get_microseconds() as i64;
        let name = tz.call_method1("tzname", (&none,))?;
        let default = timezone
            .call1((&offset,))?
            .call_method1("tzname", (&none,))?;
        if micros == 0 && name.eq(&default)? {
            self.w.int(seconds);
            return Ok(());
        }
        self.w
            .array(3)
            .map_err(|_| pyo3::exceptions::PyOverflowError::new_err("tz"))?;
        self.w.int(seconds);
        self.w.int(micros);
        if name.eq(&default)? {
            self.w.nil();
        } else {
            self.w
                .str(name.cast::<PyString>()?.to_str()?.as_bytes())
                .map_err(|_| pyo3::exceptions::PyOverflowError::new_err("tz name"))?;
        }
        Ok(())
    }

    fn zone_key(&mut self, tz: &Bound<'py, PyTzInfo>) -> PyResult<()> {
        let key = tz.getattr("key")?;
        let key = key.cast::<PyString>().map_err(|_| {
            pyo3::exceptions::PyValueError::new_err(
                "a ZoneInfo made from a file has no key; use ZoneInfo(key)",
            )
        })?;
        self.w
            .str(key.to_str()?.as_bytes())
            .map_err(|_| pyo3::exceptions::PyOverflowError::new_err("tz key"))
    }

    /// A registered type: `[name, version, state]` with `state = to_state(obj)`.
    fn registered(&mut self, o: &Bound<'py, PyAny>, entry: &Bound<'py, PyAny>) -> Result {
        let bad_entry = |e| fail_with("corrupt codec registry entry".into(), e);
        let (name, version, to_state, fields): (
            Bound<'py, PyString>,
            u32,
            Bound<'py, PyAny>,
            bool,
        ) = entry.extract().map_err(bad_entry)?;
        if to_state.is_none() {
            // rillet's own classes: written from their Rust fields.
            return self.native_object(o, &name, version);
        }
        self.enter(o)?;
        let state = to_state.call1((o,)).map_err(|e| {
            let ty = type_name(o);
            fail_with(
                format!("to_state of the registered type {ty} failed at {{path}}: {e}"),
                e,
            )
        })?;
        let mark = self.w.ext_begin();
        self.w.array(3)?;
        self.w.str(name.to_str().unwrap_or_default().as_bytes())?;
        self.w.uint(version as u64);
        self.frames.push(Frame::Object {
            _obj: o.clone(),
            state: Some(state),
            fields,
            mark,
        });
        Ok(())
    }
}

/// The UTF-8 of a str without copying (ASCII is its own UTF-8; otherwise CPython's cached
/// UTF-8 form), or None for a str with lone surrogates, which has none. Making the cached
/// form can also fail for want of memory: that is an error.
///
/// # Safety
/// `p` must be a live exact `str`; the slice lives as long as the str.
unsafe fn utf8_of<'a>(py: Python<'_>, p: *mut ffi::PyObject) -> PyResult<Option<&'a [u8]>> {
    if ffi::PyUnicode_IS_COMPACT_ASCII(p) != 0 {
        let len = ffi::PyUnicode_GET_LENGTH(p) as usize;
        return Ok(Some(std::slice::from_raw_parts(
            ffi::PyUnicode_DATA(p) as *const u8,
            len,
        )));
    }
    let mut len: ffi::Py_ssize_t = 0;
    let data = ffi::PyUnicode_AsUTF8AndSize(p, &mut len);
    if data.is_null() {
        let err = PyErr::fetch(py);
        // Lone surrogates: the caller writes them another way.
        if err.is_instance_of::<pyo3::exceptions::PyUnicodeEncodeError>(py) {
            return Ok(None);
        }
        return Err(err);
    }
    Ok(Some(std::slice::from_raw_parts(
        data as *const u8,
        len as usize,
    )))
}

/// `[hour, minute, second, microsecond, fold]` of a datetime or time.
fn clock(t: &impl PyTimeAccess) -> [i64; 5] {
    [
        t.get_hour() as i64,
        t.get_minute() as i64,
        t.get_second() as i64,
        t.get_microsecond() as i64,
        t.get_fold() as i64,
    ]
}

fn changed(what: &str) -> Box<Failure> {
    fail(format!(
        "the {what} at {{path}} changed size while it was being encoded"
    ))
}

fn type_name(o: &Bound<'_, PyAny>) -> String {
    let ty = o.get_type();
    let module = ty.module().map(|m| m.to_string()).unwrap_or_default();
    let name = ty
        .qualname()
        .map(|m| m.to_string())
        .unwrap_or_else(|_| "?".into());
    if module.is_empty() || module == "builtins" {
        name
    } else {
        format!("{module}.{name}")
    }
}

/// The builtin a subclass would pass for, named in the error so the fix is obvious.
fn builtin_base(o: &Bound<'_, PyAny>) -> Option<&'static str> {
    let py = o.py();
    let checks: [(&str, Bound<'_, pyo3::types::PyType>); 11] = [
        ("bool", py.get_type::<pyo3::types::PyBool>()),
        ("int", py.get_type::<pyo3::types::PyInt>()),
        ("float", py.get_type::<pyo3::types::PyFloat>()),
        ("str", py.get_type::<PyString>()),
        ("bytes", py.get_type::<pyo3::types::PyBytes>()),
        ("list", py.get_type::<pyo3::types::PyList>()),
        ("tuple", py.get_type::<PyTuple>()),
        ("dict", py.get_type::<PyDict>()),
        ("set", py.get_type::<pyo3::types::PySet>()),
        ("frozenset", py.get_type::<pyo3::types::PyFrozenSet>()),
        ("datetime.date", py.get_type::<PyDate>()),
    ];
    checks
        .into_iter()
        .find(|(_, t)| o.is_instance(t).unwrap_or(false))
        .map(|(name, _)| name)
}

fn unsupported(o: &Bound<'_, PyAny>) -> Box<Failure> {
    let ty = type_name(o);
    let short = o
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| ty.clone());
    if let Some(advice) = advice_for(o) {
        return fail(format!("cannot encode {ty} at {{path}}: {advice}"));
    }
    let fix = format!("rillet.codec.register_type({short}, name=\"<a stable name>\")");
    fail(match builtin_base(o) {
        Some(base) => format!(
            "cannot encode {ty} at {{path}}: it subclasses {base}, and only exact builtin types are \
             encoded implicitly (decoding could not give the subclass back). Fix: call {fix} once \
             at import time, or convert the value to a plain {base} first"
        ),
        None => format!(
            "cannot encode {ty} at {{path}}: it is not a registered type. Fix: call {fix} once at \
             import time"
        ),
    })
}

/// What to store instead of a value that is not data (a function, an exception, a path, an
/// open file...), from `rillet.codec._advice_for`; None when registering is the fix.
fn advice_for(o: &Bound<'_, PyAny>) -> Option<String> {
    let advice = o
        .py()
        .import("rillet.data.codec")
        .and_then(|m| m.getattr("_advice_for"))
        .and_then(|f| f.call1((o,)))
        .ok()?;
    advice.extract::<String>().ok()
}

/// Renders the path like Python source: `session_values['cart'].items[3]`.
fn render_path(py: Python<'_>, path: &[Seg]) -> String {
    let mut out = String::new();
    for seg in path.iter().rev() {
        match seg {
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
            Seg::SetItem => out.push_str("{<item>}"),
            Seg::MapKey => out.push_str("[<a key>]"),
            Seg::Field(k) | Seg::Key(k) => {
                let k = k.bind(py);
                let ident = k
                    .cast::<PyString>()
                    .ok()
                    .and_then(|s| s.to_str().ok().map(str::to_owned))
                    .filter(|s| {
                        s.chars().all(|c| c == '_' || c.is_alphanumeric()) && !s.is_empty()
                    });
                match (seg, ident) {
                    (Seg::Field(_), Some(name)) => out.push_str(&format!(".{name}")),
                    (Seg::Key(_), Some(name)) if out.is_empty() => out.push_str(&name),
                    _ => {
                        let repr = k
                            .repr()
                            .map(|r| r.to_string())
                            .unwrap_or_else(|_| "<key>".into());
                        out.push_str(&format!("[{repr}]"));
                    }
                }
            }
        }
    }
    let out = out.trim_start_matches('.').to_owned();
    if out.is_empty() {
        "the top level".into()
    } else {
        out
    }
}

fn into_pyerr(py: Python<'_>, f: Failure) -> PyErr {
    // Running out of memory says nothing about the value: it stays a MemoryError.
    if let Some(cause) = f.cause.as_ref() {
        if cause.is_instance_of::<pyo3::exceptions::PyMemoryError>(py) {
            return f.cause.unwrap();
        }
    }
    let path = render_path(py, &f.path);
    let err = errors::new_err(py, Class::EncodeError, f.message.replace("{path}", &path));
    err.set_cause(py, f.cause);
    err
}
