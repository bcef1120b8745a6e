//! The awaitable behind `await ch.recv_async()`, `await ch.recv_many_async(n)` and
//! `async for x in ch`.
//!
//! A Python coroutine per received item costs more than the whole channel operation, so the
//! awaitable is native. When an item is ready, the interpreter's `am_send` slot hands it back
//! directly (no StopIteration object is created). When the channel is empty it parks an
//! asyncio future in the channel and yields it to the task, exactly as `await future` does;
//! the task resumes it once a sender resolved the future, and it retries.
//!
//! `__next__`, `send`, `throw` and `close` implement the same protocol for callers that do
//! not use `am_send` (tracers, debuggers, older code paths).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;
use std::thread;

use parking_lot::Mutex;
use pyo3::exceptions::{PyRuntimeError, PyStopAsyncIteration, PyStopIteration};
use pyo3::prelude::*;
use pyo3::{ffi, intern, PyTraverseError, PyTypeInfo, PyVisit};

use crate::channel::{Ended, Park, TryRecv};
use crate::py::channel::{ended_error, list_from, wake_all, AsyncWaiter, Channel, EndError};
use crate::py::event_loop::running_loop;

/// How many items one await takes.
pub enum Want {
    One,
    Many(usize),
}

/// What the end of the channel looks like to the awaiting code.
#[derive(Clone, Copy)]
pub enum EndAs {
    /// `await ch.recv_async()`: ChannelClosed.
    ChannelClosed,
    /// `async for`: StopAsyncIteration.
    StopAsyncIteration,
}

enum Polled {
    Ready(Py<PyAny>),
    Pending(Py<PyAny>),
}

#[pyclass(frozen, module = "rillet", name = "ChannelRecv")]
pub struct Recv {
    chan: Py<Channel>,
    want: Want,
    end_as: EndAs,
    /// The future yielded to the task while parked in the channel.
    parked: Mutex<Option<Py<PyAny>>>,
}

impl Recv {
    pub fn new(chan: Py<Channel>, want: Want, end_as: EndAs) -> Self {
        Recv {
            chan,
            want,
            end_as,
            parked: Mutex::new(None),
        }
    }

    /// Takes what is ready, or parks a new future and returns it to be awaited.
    fn poll(&self, py: Python<'_>) -> PyResult<Polled> {
        // Resumed after a wakeup: the sender already took our future out of the channel.
        drop(self.parked.lock().take());
        let chan = self.chan.get();
        loop {
            if let Some(ready) = self.take_ready(py, chan)? {
                return Ok(Polled::Ready(ready));
            }
            let event_loop = running_loop(py)?;
            let fut = event_loop.call_method0(intern!(py, "create_future"))?;
            let waiter = AsyncWaiter {
                fut: fut.clone().unbind(),
                event_loop: event_loop.unbind(),
                thread: thread::current().id(),
            };
            if let Park::Parked = chan.park(waiter) {
                // What `Future.__await__` sets before yielding: tells the Task to wait on it.
                fut.setattr(intern!(py, "_asyncio_future_blocking"), true)?;
                *self.parked.lock() = Some(fut.clone().unbind());
                return Ok(Polled::Pending(fut.unbind()));
            }
            // Refused: an item arrived or the channel ended meanwhile. Retry.
        }
    }

    fn take_ready(&self, py: Python<'_>, chan: &Channel) -> PyResult<Option<Py<PyAny>>> {
        match self.want {
            Want::One => match chan.core().try_recv() {
                TryRecv::Item(item) => Ok(Some(item)),
                TryRecv::Empty => Ok(None),
                TryRecv::Ended(end) => Err(self.end_error(py, end)),
            },
            Want::Many(max) => match chan.core().try_recv_many(max) {
                Ok(batch) if batch.is_empty() => Ok(None),
                Ok(batch) => Ok(Some(list_from(py, batch)?.into_any().unbind())),
                Err(end) => Err(self.end_error(py, end)),
            },
        }
    }

    fn end_error(&self, py: Python<'_>, end: Ended<EndError>) -> PyErr {
        match (self.end_as, end) {
            (EndAs::StopAsyncIteration, Ended::Closed) => PyStopAsyncIteration::new_err(()),
            (_, end) => ended_error(py, end),
        }
    }

    /// The receiver gives up (cancelled, closed, dropped): withdraw its future, passing on a
    /// wakeup it may already have been given.
    fn withdraw(&self, py: Python<'_>) -> PyResult<()> {
        let Some(fut) = self.parked.lock().take() else {
            return Ok(());
        };
        let chan = self.chan.get();
        match chan.core().unpark(|w| w.fut.is(&fut)) {
            Some(next) => wake_all(py, chan.core(), vec![next]),
            None => Ok(()),
        }
    }
}

#[pymethods]
impl Recv {
    fn __await__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.poll(py)? {
            Polled::Pending(fut) => Ok(fut),
            Polled::Ready(value) => Err(PyStopIteration::new_err((value,))),
        }
    }

    #[pyo3(signature = (value, /))]
    fn send(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let _ = value; // the task only ever sends None
        self.__next__(py)
    }

    /// Called by the task when the awaiting coroutine is cancelled (or another error is
    /// thrown in): give up the wait, then raise what was thrown.
    #[pyo3(signature = (typ, val=None, tb=None))]
    fn throw(
        &self,
        py: Python<'_>,
        typ: Bound<'_, PyAny>,
        val: Option<Bound<'_, PyAny>>,
        tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        self.withdraw(py)?;
        // SAFETY: PyErr_Restore steals the three references, any of which may be null; the
        // interpreter normalizes a (type, value) pair the same way `raise` does.
        unsafe {
            ffi::PyErr_Restore(
                typ.into_ptr(),
                val.map_or(ptr::null_mut(), Bound::into_ptr),
                tb.map_or(ptr::null_mut(), Bound::into_ptr),
            )
        };
        Err(PyErr::fetch(py))
    }

    fn close(&self, py: Python<'_>) -> PyResult<()> {
        self.withdraw(py)
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.chan)?;
        match self.parked.try_lock() {
            Some(parked) => visit.call(parked.as_ref()),
            None => Ok(()),
        }
    }

    fn __clear__(&self) {
        let parked = self.parked.lock().take();
        drop(parked);
    }
}

impl Drop for Recv {
    fn drop(&mut self) {
        if self.parked.get_mut().is_some() {
            // An abandoned wait (its task was destroyed): don't let it swallow a wakeup.
            Python::attach(|py| {
                let _ = self.withdraw(py);
            });
        }
    }
}

/// `am_send`: the interpreter's fast path for `await`. Returns the value directly instead of
/// raising StopIteration(value), which would allocate an exception per received item.
unsafe extern "C" fn recv_am_send(
    slf: *mut ffi::PyObject,
    _arg: *mut ffi::PyObject,
    result: *mut *mut ffi::PyObject,
) -> ffi::PySendResult {
    // SAFETY: the interpreter calls slots with the thread attached, `slf` a live Recv.
    let py = unsafe { Python::assume_attached() };
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let slf = unsafe { Bound::from_borrowed_ptr(py, slf).cast_into_unchecked::<Recv>() };
        slf.get().poll(py)
    }));
    let (status, value) = match outcome {
        Ok(Ok(Polled::Ready(v))) => (ffi::PySendResult::PYGEN_RETURN, v.into_ptr()),
        Ok(Ok(Polled::Pending(fut))) => (ffi::PySendResult::PYGEN_NEXT, fut.into_ptr()),
        Ok(Err(err)) => {
            err.restore(py);
            (ffi::PySendResult::PYGEN_ERROR, ptr::null_mut())
        }
        Err(_) => {
            PyRuntimeError::new_err(
                "rillet: internal error while receiving (a bug: please report it)",
            )
            .restore(py);
            (ffi::PySendResult::PYGEN_ERROR, ptr::null_mut())
        }
    };
    unsafe { *result = value };
    status
}

/// `am_await`: the awaitable is its own iterator.
unsafe extern "C" fn recv_am_await(slf: *mut ffi::PyObject) -> *mut ffi::PyObject {
    // SAFETY: a new reference to a live object, as the slot must return.
    unsafe { ffi::Py_IncRef(slf) };
    slf
}

/// Installs `am_send` (and a direct `am_await`) on the ChannelRecv type. PyO3 has no attribute for this slot, so it is
/// set once at module init, before any instance exists; the type is final (not subclassable).
pub fn install_slots(py: Python<'_>) {
    let tp = Recv::type_object_raw(py);
    // SAFETY: ChannelRecv defines __await__, so tp_as_async points at the heap type's own
    // PyAsyncMethods, which lives as long as the type. We hold the interpreter.
    unsafe {
        let as_async = (*tp).tp_as_async;
        assert!(!as_async.is_null(), "ChannelRecv must define __await__");
        (*as_async).am_send = Some(recv_am_send);
        (*as_async).am_await = Some(recv_am_await);
        ffi::PyType_Modified(tp);
    }
}
