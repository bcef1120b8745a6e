//! The awaitable behind `await ch.arecv()`, `await ch.arecv_many(n)` and
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
use pyo3::exceptions::{
    PyBaseException, PyRuntimeError, PyStopAsyncIteration, PyStopIteration, PyTypeError,
};
use pyo3::prelude::*;
use pyo3::types::{PyTraceback, PyTuple, PyType};
use pyo3::{ffi, intern, PyTraverseError, PyTypeInfo, PyVisit};

use super::{ended_error, list_from, wake_all, AsyncWaiter, Channel, EndError};
use crate::channel::{Ended, Park, TryRecv, Unparked};
use crate::py::util::running_loop;

/// How many items one await takes.
pub enum Want {
    One,
    Many(usize),
}

/// What the end of the channel looks like to the awaiting code.
#[derive(Clone, Copy)]
pub enum EndAs {
    /// `await ch.arecv()`: ChannelClosed.
    ChannelClosed,
    /// `async for`: StopAsyncIteration.
    StopAsyncIteration,
}

enum Polled {
    Ready(Py<PyAny>),
    Pending(Py<PyAny>),
}

/// The awaitable of one receive from a Channel (`arecv`, `arecv_many`, `async for`).
///
/// Await it once: awaiting it again while the first await waits raises RuntimeError.
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
        self.end_wait(py)?;
        let chan = self.chan.get();
        loop {
            if let Some(ready) = self.take_ready(py, chan)? {
                return Ok(Polled::Ready(ready));
            }
            let event_loop = running_loop(py)?;
            let fut = event_loop.call_method0(intern!(py, "create_future"))?;
            // What `Future.__await__` sets before yielding: tells the Task to wait on it.
            fut.setattr(intern!(py, "_asyncio_future_blocking"), true)?;
            let waiter = AsyncWaiter {
                fut: fut.clone().unbind(),
                event_loop: event_loop.unbind(),
                thread: thread::current().id(),
            };
            if let Park::Parked = chan.park(waiter) {
                let previous = self.parked.lock().replace(fut.clone().unbind());
                drop(previous); // None (end_wait took it); dropped unlocked all the same
                return Ok(Polled::Pending(fut.unbind()));
            }
            // Refused: an item arrived or the channel ended meanwhile. Retry.
        }
    }

    /// Called as the task resumes this awaitable: the future it parked must be done (a
    /// sender resolved it). If it is not, a second await of this same awaitable is running
    /// while the first waits: refuse it, since the first wait would otherwise be forgotten
    /// and later swallow a wakeup.
    fn end_wait(&self, py: Python<'_>) -> PyResult<()> {
        let Some(fut) = self.parked.lock().as_ref().map(|f| f.clone_ref(py)) else {
            return Ok(());
        };
        if !fut
            .bind(py)
            .call_method0(intern!(py, "done"))?
            .is_truthy()?
        {
            return Err(PyRuntimeError::new_err(
                "this ChannelRecv is already being awaited: await each arecv() / \
                 arecv_many() / __anext__() result once, and call it again for another receive",
            ));
        }
        let taken = {
            let mut slot = self.parked.lock();
            match slot.as_ref() {
                Some(f) if f.is(&fut) => slot.take(),
                _ => None,
            }
        };
        // A sender takes the waiter out of the channel before resolving it; a future
        // cancelled by someone else may still be parked. Retrying takes its item, if any.
        let removed = self.chan.get().core().remove_waiter(|w| w.fut.is(&fut));
        drop((taken, removed, fut)); // no lock held
        Ok(())
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
            Unparked::Withdrawn(waiter) => {
                drop(waiter); // after the channel lock was released
                Ok(())
            }
            Unparked::PassOn(next) => wake_all(py, chan.core(), next.into_iter().collect()),
        }
    }
}

/// The exception `throw(typ, val, tb)` raises, built as CPython builds it for a generator:
/// `typ` is an exception instance (then `val` must be None) or an exception class,
/// instantiated from `val` (an instance of it is used as is, a tuple is the arguments, None
/// means none, anything else is the one argument); `tb`, if given, becomes its traceback.
fn thrown_exception<'py>(
    typ: &Bound<'py, PyAny>,
    val: Option<Bound<'py, PyAny>>,
    tb: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyBaseException>> {
    let py = typ.py();
    if tb
        .as_ref()
        .is_some_and(|tb| !tb.is_instance_of::<PyTraceback>())
    {
        return Err(PyTypeError::new_err(
            "throw() third argument must be a traceback object",
        ));
    }
    let exc = if let Ok(exc) = typ.cast::<PyBaseException>() {
        if val.is_some() {
            return Err(PyTypeError::new_err(
                "instance exception may not have a separate value",
            ));
        }
        exc.clone()
    } else if let Some(cls) = exception_class(typ)? {
        let made = match val {
            Some(val) if val.is_instance(&cls)? => val,
            None => cls.call0()?,
            Some(val) => match val.cast_into::<PyTuple>() {
                Ok(args) => cls.call1(args)?,
                Err(val) => cls.call1((val.into_inner(),))?,
            },
        };
        made.cast_into::<PyBaseException>().map_err(|made| {
            PyTypeError::new_err(format!(
                "calling {} should have returned an instance of BaseException, not {}",
                cls.name().map_or_else(|_| "it".into(), |n| n.to_string()),
                made.into_inner()
                    .get_type()
                    .name()
                    .map_or_else(|_| "?".into(), |n| n.to_string()),
            ))
        })?
    } else {
        return Err(PyTypeError::new_err(format!(
            "exceptions must be classes or instances deriving from BaseException, not {}",
            typ.get_type().name()?
        )));
    };
    if let Some(tb) = tb {
        exc.setattr(intern!(py, "__traceback__"), tb)?;
    }
    Ok(exc)
}

fn exception_class<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Option<Bound<'py, PyType>>> {
    match obj.cast::<PyType>() {
        Ok(cls) if cls.is_subclass_of::<PyBaseException>()? => Ok(Some(cls.clone())),
        _ => Ok(None),
    }
}

#[pymethods]
impl Recv {
    /// The awaitable is its own iterator, driven by the awaiting task.
    fn __await__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Itself, as `__await__`.
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// One step of the await: raises StopIteration(result) when ready, else returns the
    /// future to wait on.
    fn __next__(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.poll(py)? {
            Polled::Pending(fut) => Ok(fut),
            Polled::Ready(value) => Err(PyStopIteration::new_err((value,))),
        }
    }

    /// One step of the await, as `__next__` (the task always sends None).
    #[pyo3(signature = (value, /))]
    fn send(&self, py: Python<'_>, value: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        let _ = value; // the task only ever sends None
        self.__next__(py)
    }

    /// Raises an exception where the awaiting code waits: what a task does when it is
    /// cancelled (CancelledError). The wait is given up first, passing on a wakeup it may
    /// already have had. Accepts every form a generator's throw() does: an exception
    /// instance, a class, a class with a value, and a traceback as third argument.
    #[pyo3(signature = (typ, val=None, tb=None))]
    fn throw(
        &self,
        py: Python<'_>,
        typ: Bound<'_, PyAny>,
        val: Option<Bound<'_, PyAny>>,
        tb: Option<Bound<'_, PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        // Built first: malformed arguments leave the wait in place, as for a generator.
        // Building may run Python code (an exception's __init__), with no lock held.
        let exc = thrown_exception(&typ, val, tb)?;
        self.withdraw(py)?;
        Err(PyErr::from_value(exc.into_any()))
    }

    /// Gives up the wait (what closing the awaiting coroutine does).
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
