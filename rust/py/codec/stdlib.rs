//! The stdlib classes the codec knows by exact type, imported once per interpreter.

use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyType;

pub struct Stdlib {
    pub uuid: Py<PyType>,
    pub decimal: Py<PyType>,
    pub zoneinfo: Py<PyType>,
    pub timezone: Py<PyType>,
    pub utc: Py<PyAny>,
}

static STDLIB: PyOnceLock<Stdlib> = PyOnceLock::new();

pub fn stdlib(py: Python<'_>) -> PyResult<&Stdlib> {
    STDLIB.get_or_try_init(py, || {
        let class = |module: &str, name: &str| -> PyResult<Py<PyType>> {
            Ok(py
                .import(module)?
                .getattr(name)?
                .cast_into::<PyType>()?
                .unbind())
        };
        let timezone = class("datetime", "timezone")?;
        Ok(Stdlib {
            uuid: class("uuid", "UUID")?,
            decimal: class("decimal", "Decimal")?,
            zoneinfo: class("zoneinfo", "ZoneInfo")?,
            utc: timezone.bind(py).getattr("utc")?.unbind(),
            timezone,
        })
    })
}
