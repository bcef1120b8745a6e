//! rillet's native core: data movement for the Python agent framework.
//!
//! Pure-Rust modules (`channel`, ...) hold the logic and are tested by `cargo test`;
//! `py` holds the thin PyO3 bindings, exposed to Python as `rillet._native`.

pub mod channel;
pub mod codec;
pub mod py;

use pyo3::prelude::*;

#[pymodule]
mod _native {
    use super::*;

    #[pymodule_export]
    use crate::py::channel::{Channel, Empty};
    #[pymodule_export]
    use crate::py::codec::{codec_decode, codec_encode};
    #[pymodule_export]
    use crate::py::errors::{ChannelClosed, RilletError};

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add("EMPTY", crate::py::channel::empty(m.py()))?;
        m.add("__version__", env!("CARGO_PKG_VERSION"))?;
        m.add("DecodeError", crate::py::errors::decode_error(m.py()))?;
        m.add("EncodeError", crate::py::errors::encode_error(m.py()))?;
        Ok(())
    }
}
