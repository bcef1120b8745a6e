//! Python bindings of the checkpoint codec: `codec_encode` and `codec_decode`, which
//! `rillet.codec` wraps with its type registry.
//!
//! Both work directly on Python objects (no intermediate tree, no serde): the encoder
//! dispatches on exact type pointers into a reused [`Writer`] buffer, and the decoder is the
//! pure-Rust [`crate::codec::decode`] driving a [`decode::PyBuilder`].

pub(crate) mod checked;
mod decode;
mod encode;
mod stdlib;
mod utf8;

use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::codec::compress::{compress_checkpoint, is_compressed};
use crate::codec::decode::Failure;
use crate::codec::wire::{At, TooLong};
use crate::codec::{Limits, COMPRESSED_FORMAT_VERSION, FORMAT_VERSION, OLDEST_FORMAT_VERSION};
use crate::py::errors::{self, Class};

thread_local! {
    /// The encode buffer, kept between calls so a checkpoint does not re-grow it each time.
    static BUFFER: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
}

/// Buffers above this size are released after use instead of kept.
const KEEP_BUFFER_BYTES: usize = 8 << 20;

// The default `version` below is spelled out so that the Python signature shows it.
const _: () = assert!(FORMAT_VERSION == 2);

/// Encodes `obj` as a checkpoint in format `version`; with `compress`, a format-2 body
/// compressed with LZ4 in a format-3 envelope. `types` maps a registered class to
/// `(name, version, to_state, state_is_fields)`.
#[pyfunction]
#[pyo3(signature = (obj, types, max_depth = 512, version = 2, compress = false))]
pub fn codec_encode<'py>(
    py: Python<'py>,
    obj: &Bound<'py, PyAny>,
    types: &Bound<'py, PyDict>,
    max_depth: usize,
    version: u8,
    compress: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    if !(OLDEST_FORMAT_VERSION..=FORMAT_VERSION).contains(&version) {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "format_version must be from {OLDEST_FORMAT_VERSION} to {FORMAT_VERSION}, got {version}"
        )));
    }
    if compress && version != FORMAT_VERSION {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "compress=True writes format {COMPRESSED_FORMAT_VERSION} (a compressed format-{FORMAT_VERSION} \
             body), which readers of format {version} cannot read: drop compress=True, or \
             format_version={version}"
        )));
    }
    check_max_depth(max_depth)?;
    // Taken out, not borrowed: a to_state hook may call encode again on this thread.
    let mut buf = BUFFER.with(|b| std::mem::take(&mut *b.borrow_mut()));
    buf.clear();
    let run = AssertUnwindSafe(|| encode::encode(py, obj, types, max_depth, version, buf));
    let (result, mut buf) = catch_unwind(run).unwrap_or_else(|payload| {
        if checked::is_null_panic(&*payload) {
            return (Err(out_of_memory("encoding")), Vec::new());
        }
        let err = errors::new_err(
            py,
            Class::EncodeError,
            "internal error in the rillet encoder (a bug: please report it)",
        );
        (Err(err), Vec::new())
    });
    let out = result.and_then(|()| {
        if !compress {
            return checked::new_bytes(py, &buf);
        }
        // Plain bytes in, plain bytes out: other Python threads may run meanwhile.
        match py.detach(|| compress_checkpoint(&buf)) {
            Ok(packed) => checked::new_bytes(py, &packed),
            Err(TooLong(n)) => Err(errors::new_err(
            py,
            Class::EncodeError,
                format!("cannot compress a body of {n} bytes (the most is 4 GiB - 1): encode it with compress=False"),
            )),
        }
    });
    if buf.capacity() <= KEEP_BUFFER_BYTES {
        buf.clear();
        BUFFER.with(|b| *b.borrow_mut() = buf);
    }
    out
}

/// What a caught [`checked::is_null_panic`] raises.
fn out_of_memory(doing: &str) -> PyErr {
    pyo3::exceptions::PyMemoryError::new_err(format!("out of memory while {doing} a checkpoint"))
}

fn check_max_depth(max_depth: usize) -> PyResult<()> {
    if max_depth > Limits::MAX_DEPTH_LIMIT {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "max_depth must be from 0 to {} (rillet.codec.MAX_DEPTH_LIMIT), got {max_depth}",
            Limits::MAX_DEPTH_LIMIT
        )));
    }
    Ok(())
}

/// Pauses the cyclic garbage collector while a decode runs. Decoding creates many
/// containers but no reference cycles, so collections triggered by those allocations would
/// only re-traverse the new objects; pausing does that work once, later.
struct GcPause(bool);

impl GcPause {
    fn new() -> Self {
        // SAFETY: called with the GIL held (the decoder holds a Python token).
        GcPause(unsafe { pyo3::ffi::PyGC_Disable() } != 0)
    }
}

impl Drop for GcPause {
    fn drop(&mut self) {
        if self.0 {
            // SAFETY: as above; only re-enables what this guard disabled.
            unsafe { pyo3::ffi::PyGC_Enable() };
        }
    }
}

/// Decodes a checkpoint. `names` maps a registered name to `(version, from_state, migrate)`;
/// `unknown(name, version, state)`, when given, builds a value for a name not in `names`.
#[pyfunction]
#[pyo3(signature = (data, names, max_depth, max_size, max_items, unknown = None))]
pub fn codec_decode<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyBytes>,
    names: &Bound<'py, PyDict>,
    max_depth: usize,
    max_size: usize,
    max_items: usize,
    unknown: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyAny>> {
    check_max_depth(max_depth)?;
    let limits = Limits {
        max_depth,
        max_size,
        max_items,
    };
    // `bytes` is immutable and `data` keeps it alive, so hooks run while decoding cannot
    // change or free what is being read.
    let input = data.as_bytes();
    let mut builder = decode::PyBuilder::new(py, names.clone(), unknown);
    let _gc = GcPause::new();
    let run = AssertUnwindSafe(|| crate::codec::decode::decode(input, &limits, &mut builder));
    match catch_unwind(run) {
        Ok(Ok(value)) => value.into_py(py),
        Ok(Err(Failure::Wire(e))) => Err(errors::new_err(py, Class::DecodeError, e.to_string())),
        // Build errors are always in the body: a format-3 body is the decompressed one.
        Ok(Err(Failure::Build { offset, error })) => Err(error.into_pyerr(
            py,
            At {
                offset,
                decompressed: is_compressed(input),
            },
        )),
        Err(payload) if checked::is_null_panic(&*payload) => Err(out_of_memory("decoding")),
        Err(_) => Err(errors::new_err(
            py,
            Class::DecodeError,
            "internal error in the rillet decoder (a bug: please report it)",
        )),
    }
}
