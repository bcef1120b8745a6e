//! The Python exception hierarchy of rillet, rooted at `RilletError`.
//!
//! Every error raised from Rust is one of these (or a builtin such as ValueError where the
//! stdlib convention is clearer), so `except rillet.RilletError` catches what rillet raises.

use pyo3::create_exception;
use pyo3::exceptions::PyException;

create_exception!(
    rillet,
    RilletError,
    PyException,
    "Base class of every error rillet raises."
);
create_exception!(
    rillet,
    ChannelClosed,
    RilletError,
    "The channel was closed: nothing more can be sent, and every item has been received."
);
