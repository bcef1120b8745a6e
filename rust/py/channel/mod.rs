//! `rillet.Channel`: Python bindings over [`crate::channel::Channel`].
//!
//! Items, the close error and asyncio waiters are Python objects. Three rules keep this
//! correct on GIL and free-threaded builds alike:
//! 1. Python is never called while the channel lock is held: waiters are taken out of the
//!    channel, the lock is released, then they are woken.
//! 2. The interpreter is released only on the blocking path (an empty queue), never on send.
//! 3. Queued items are only dropped while attached (in `Drop` of the pyclass).

mod fast_paths;
mod recv;
mod wake;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use pyo3::exceptions::{PyTimeoutError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyInt, PyList, PyTuple, PyType};
use pyo3::{PyTraverseError, PyVisit};

use crate::channel::{self as core, Ended, Held, Park, TryRecv, Waited};
use crate::py::errors::{self, Class};
use crate::py::util::{
    deadline_after, empty, generic_alias, refuse_inside_event_loop, timeout_arg, type_name,
    wait_slice,
};
use recv::{EndAs, Want};

pub use fast_paths::install as install_fast_paths;
pub use recv::{install_slots, Recv};
pub use wake::{wake_all, AsyncWaiter};

/// The error a channel was closed with, shared by every receiver that reports it, with the
/// traceback and context it had at close. Each receiver raises it from those again (as
/// `asyncio.Future.result()` does): raising one instance over and over would otherwise chain
/// every receiver's frames onto one ever-growing traceback and keep them all alive.
pub struct CloseError {
    exc: Py<PyAny>,
    traceback: Py<PyAny>,
    context: Py<PyAny>,
}

impl CloseError {
    fn new(exc: Bound<'_, PyAny>) -> PyResult<Self> {
        let py = exc.py();
        Ok(CloseError {
            traceback: exc.getattr(intern!(py, "__traceback__"))?.unbind(),
            context: exc.getattr(intern!(py, "__context__"))?.unbind(),
            exc: exc.unbind(),
        })
    }

    /// The error, ready to raise: its traceback and context reset to those it was closed with.
    pub fn to_err(&self, py: Python<'_>) -> PyErr {
        let exc = self.exc.bind(py);
        // Replacing the attributes drops what the previous receiver left there, which may
        // run finalizers: no lock is held here.
        let reset = exc
            .setattr(intern!(py, "__traceback__"), self.traceback.bind(py))
            .and_then(|()| exc.setattr(intern!(py, "__context__"), self.context.bind(py)));
        match reset {
            Ok(()) => PyErr::from_value(exc.clone()),
            Err(err) => err,
        }
    }

    fn visit(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.exc)?;
        visit.call(&self.traceback)?;
        visit.call(&self.context)
    }
}

pub type EndError = Arc<CloseError>;

pub type Core = core::Channel<Py<PyAny>, EndError, AsyncWaiter>;

/// An unbounded multi-producer, multi-consumer FIFO for threads and asyncio tasks.
///
/// `send` never blocks. Each item reaches exactly one receiver, and each producer's items
/// arrive in the order it sent them. `close(error=None)` ends the channel: receivers drain
/// what is queued, then get `ChannelClosed` (or `error`); `for` and `async for` just stop.
#[pyclass(frozen, subclass, module = "rillet", name = "Channel")]
pub struct Channel {
    core: Core,
    /// How often an async receiver had to park (tests use it to check wakeup coalescing).
    parks: AtomicU64,
    /// The awaitables `async for` and `arecv` hand out, reused once their await is over.
    next_awaitable: Mutex<Option<Py<Recv>>>,
    recv_awaitable: Mutex<Option<Py<Recv>>>,
}

impl Channel {
    pub fn core(&self) -> &Core {
        &self.core
    }

    pub fn park(&self, waiter: AsyncWaiter) -> Park<AsyncWaiter> {
        let parked = self.core.park(waiter);
        if let Park::Parked = parked {
            self.parks.fetch_add(1, Ordering::Relaxed);
        }
        parked
    }

    /// The awaitable of one step of `async for`.
    #[inline]
    pub fn next_awaitable(slf: &Bound<'_, Self>) -> PyResult<Py<Recv>> {
        Self::awaitable(slf, |ch| &ch.next_awaitable, EndAs::StopAsyncIteration)
    }

    /// The cached awaitable if its previous await is over (nothing else refers to it), or a
    /// new one. Allocating an awaitable per item would cost more than the receive itself.
    fn awaitable(
        slf: &Bound<'_, Self>,
        cache: fn(&Channel) -> &Mutex<Option<Py<Recv>>>,
        end_as: EndAs,
    ) -> PyResult<Py<Recv>> {
        let py = slf.py();
        let slot = cache(slf.get());
        if let Some(cached) = slot.lock().as_ref() {
            // Only the cache holds it. Refcounts are exact only with the GIL; free-threaded
            // builds always allocate.
            // SAFETY: reading the reference count of a live object we hold.
            if !cfg!(Py_GIL_DISABLED) && unsafe { ffi::Py_REFCNT(cached.as_ptr()) } == 1 {
                return Ok(cached.clone_ref(py));
            }
        }
        // Allocate outside the lock: allocation may run the garbage collector.
        let fresh = Py::new(py, Recv::new(slf.clone().unbind(), Want::One, end_as))?;
        let previous = slot.lock().replace(fresh.clone_ref(py));
        drop(previous); // outside the lock too: dropping may run a finalizer
        Ok(fresh)
    }

    /// `send` and `try_send`: true when queued, false (the item dropped) once closed.
    #[inline]
    pub fn send_item(&self, py: Python<'_>, item: Py<PyAny>) -> PyResult<bool> {
        match self.core().send(item) {
            Ok(wakeups) => wake_all(py, self.core(), wakeups).map(|()| true),
            Err(item) => {
                drop(item); // refused: dropped here, with no lock held
                Ok(false)
            }
        }
    }

    /// The next item for `for x in ch`: `None` ends the iteration at a normal close.
    #[inline]
    pub fn next_item(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match self.recv_until(py, None) {
            Ok(item) => Ok(item),
            Err(err) if errors::is_instance(py, &err, Class::ChannelClosed) => Ok(None),
            Err(err) => Err(err),
        }
    }
}

#[pymethods]
impl Channel {
    #[new]
    fn new() -> Self {
        Channel {
            core: Core::new(),
            parks: AtomicU64::new(0),
            next_awaitable: Mutex::new(None),
            recv_awaitable: Mutex::new(None),
        }
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        for cache in [&self.next_awaitable, &self.recv_awaitable] {
            if let Some(cached) = cache.try_lock() {
                visit.call(cached.as_ref())?;
            }
        }
        self.core.try_visit(|held| match held {
            Held::Item(item) => visit.call(item),
            Held::Error(err) => err.visit(&visit),
            Held::Waiter(w) => {
                visit.call(&w.fut)?;
                visit.call(&w.event_loop)
            }
        })
    }

    fn __clear__(&self) {
        let caches = [
            self.next_awaitable.lock().take(),
            self.recv_awaitable.lock().take(),
        ];
        let cleared = self.core.clear();
        drop((caches, cleared)); // after the locks are released: finalizers may run
    }

    /// `Channel[int]` in annotations: a generic alias, as for builtin containers.
    #[classmethod]
    #[pyo3(signature = (item, /))]
    fn __class_getitem__<'py>(
        cls: &Bound<'py, PyType>,
        item: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        generic_alias(cls, item)
    }

    /// Replaced at module init by the direct entry point in `fast_paths` (same behaviour,
    /// and the docstring users see).
    fn send(&self, py: Python<'_>, item: Py<PyAny>) -> PyResult<bool> {
        self.send_item(py, item)
    }

    /// Replaced at module init by the direct entry point in `fast_paths`.
    fn try_send(&self, py: Python<'_>, item: Py<PyAny>) -> PyResult<bool> {
        self.send_item(py, item)
    }

    /// Appends every item of `items` in order, atomically with respect to receivers.
    ///
    /// Returns True when they were queued, or False (and drops them all) if the channel is
    /// closed. `items` is read completely before anything is queued: if iterating it raises,
    /// nothing is sent.
    fn send_many(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<bool> {
        match self.core().send_many(collect_items(items)?) {
            Ok(wakeups) => wake_all(py, self.core(), wakeups).map(|()| true),
            Err(items) => {
                drop(items); // refused: dropped here, with no lock held
                Ok(false)
            }
        }
    }

    /// Takes the next item, waiting up to `timeout` seconds (forever if None).
    ///
    /// Raises TimeoutError when the time is up, and once the channel is closed and drained
    /// ChannelClosed, or the error it was closed with. Refuses to block inside a running
    /// event loop: use `await ch.arecv()` there.
    #[pyo3(signature = (timeout=None))]
    fn recv(&self, py: Python<'_>, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        let timeout = timeout_arg(timeout)?;
        let deadline = deadline_after(timeout)?;
        match self.recv_until(py, deadline)? {
            Some(item) => Ok(item),
            None => Err(PyTimeoutError::new_err(format!(
                "no item arrived within {} s",
                timeout.unwrap_or_default()
            ))),
        }
    }

    /// Takes the next item if one is queued, else returns `rillet.EMPTY` (which is falsy).
    ///
    /// Never blocks. Once the channel is closed and drained it raises like `recv`.
    fn try_recv(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.core().try_recv() {
            TryRecv::Item(item) => Ok(item),
            TryRecv::Empty => Ok(empty(py).clone_ref(py).into_any()),
            TryRecv::Ended(end) => Err(ended_error(py, end)),
        }
    }

    /// Waits up to `timeout` seconds (forever if None) for at least one item, then returns
    /// up to `max_items` (at least 1) queued items in a list, oldest first.
    ///
    /// Raises like `recv` on timeout and at the end.
    #[pyo3(signature = (max_items, timeout=None))]
    fn recv_many<'py>(
        &self,
        py: Python<'py>,
        max_items: &Bound<'py, PyAny>,
        timeout: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyList>> {
        let max_items = check_max_items(max_items)?;
        let deadline = deadline_after(timeout_arg(timeout)?)?;
        let batch = self
            .core()
            .try_recv_many(max_items)
            .map_err(|e| ended_error(py, e))?;
        if !batch.is_empty() {
            return list_from(py, batch);
        }
        let Some(first) = self.recv_until(py, deadline)? else {
            return Err(PyTimeoutError::new_err("no item arrived in time"));
        };
        let rest = self.core().try_recv_many(max_items - 1).unwrap_or_default();
        let mut batch = Vec::with_capacity(1 + rest.len());
        batch.push(first);
        batch.extend(rest);
        list_from(py, batch)
    }

    /// Returns up to `max_items` queued items without waiting (possibly an empty list).
    ///
    /// Once the channel is closed and drained it raises like `recv`.
    fn try_recv_many<'py>(
        &self,
        py: Python<'py>,
        max_items: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyList>> {
        let max_items = check_max_items(max_items)?;
        let batch = self
            .core()
            .try_recv_many(max_items)
            .map_err(|e| ended_error(py, e))?;
        list_from(py, batch)
    }

    /// Ends the channel. Receivers drain what is queued, then get ChannelClosed, or `error`
    /// raised if one is given (an exception instance, or a class to instantiate). Later
    /// sends return False. Idempotent: only the first close counts.
    ///
    /// Every receiver raises the same `error` instance, with the traceback it had here.
    #[pyo3(signature = (error=None))]
    fn close(&self, py: Python<'_>, error: Option<Bound<'_, PyAny>>) -> PyResult<()> {
        let end = match error {
            None => Ended::Closed,
            Some(err) => Ended::Failed(Arc::new(CloseError::new(exception_instance(&err)?)?)),
        };
        match self.core().close(end) {
            Some(waiters) => wake_all(py, self.core(), waiters),
            None => Ok(()), // the refused `end` was dropped by `close` after its lock
        }
    }

    /// True once `close` has been called (items may still be queued).
    #[getter]
    fn closed(&self) -> bool {
        self.core().is_closed()
    }

    /// The number of queued items.
    fn __len__(&self) -> usize {
        self.core().len()
    }

    fn __repr__(&self) -> String {
        let state = if self.core().is_closed() {
            "closed"
        } else {
            "open"
        };
        format!("<rillet.Channel {state}, {} queued>", self.core().len())
    }

    /// `for item in ch`: receives until the channel is closed and drained (then stops, or
    /// raises the close error). Blocks like `recv()`.
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// The next item of `for item in ch`.
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.next_item(py)
    }

    /// `await ch.arecv()`: the next item, waiting without blocking the event loop.
    ///
    /// Raises ChannelClosed (or the close error) once the channel is closed and drained.
    /// Cancelling the awaiting task loses no item. Each returned awaitable is awaited once.
    fn arecv(slf: &Bound<'_, Self>) -> PyResult<Py<Recv>> {
        Self::awaitable(slf, |ch| &ch.recv_awaitable, EndAs::ChannelClosed)
    }

    /// `await ch.arecv_many(n)`: waits for at least one item, then returns up to `max_items`
    /// (at least 1) in a list. Raises like `arecv` at the end.
    fn arecv_many(slf: &Bound<'_, Self>, max_items: &Bound<'_, PyAny>) -> PyResult<Recv> {
        let want = Want::Many(check_max_items(max_items)?);
        Ok(Recv::new(slf.clone().unbind(), want, EndAs::ChannelClosed))
    }

    /// `async for item in ch`: receives until the channel is closed and drained (then stops,
    /// or raises the close error).
    fn __aiter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// The awaitable of the next step of `async for item in ch`.
    fn __anext__(slf: &Bound<'_, Self>) -> PyResult<Py<Recv>> {
        Self::next_awaitable(slf)
    }

    /// How many times an async receiver parked (waited for an empty channel).
    #[getter]
    fn _parks(&self) -> u64 {
        self.parks.load(Ordering::Relaxed)
    }
}

impl Channel {
    /// Blocks until an item arrives (`Some`), the deadline passes (`None`) or the channel
    /// ends (Err). Releases the interpreter only while actually waiting, and wakes regularly
    /// so that Ctrl-C on the main thread raises KeyboardInterrupt promptly.
    fn recv_until(&self, py: Python<'_>, deadline: Option<Instant>) -> PyResult<Option<Py<PyAny>>> {
        match self.core().try_recv() {
            TryRecv::Item(item) => return Ok(Some(item)),
            TryRecv::Ended(end) => return Err(ended_error(py, end)),
            TryRecv::Empty => {}
        }
        if deadline.is_none_or(|d| d > Instant::now()) {
            refuse_inside_event_loop(
                py,
                "a blocking receive on an empty Channel (recv, recv_many or `for`)",
                "`await ch.arecv()`, `await ch.arecv_many(n)` or `async for`",
            )?;
        }
        loop {
            let slice = wait_slice(deadline);
            match py.detach(|| self.core().wait_recv(slice)) {
                Waited::Item(item) => return Ok(Some(item)),
                Waited::Ended(end) => return Err(ended_error(py, end)),
                Waited::TimedOut => {
                    py.check_signals()?;
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Ok(None);
                    }
                }
            }
        }
    }
}

pub fn ended_error(py: Python<'_>, end: Ended<EndError>) -> PyErr {
    match end {
        Ended::Closed => errors::new_err(
            py,
            Class::ChannelClosed,
            "the channel is closed and has no items left",
        ),
        Ended::Failed(err) => err.to_err(py),
    }
}

/// A list that takes over the references in `items`, moved in without per-item calls.
pub fn list_from(py: Python<'_>, items: Vec<Py<PyAny>>) -> PyResult<Bound<'_, PyList>> {
    let len = ffi::Py_ssize_t::try_from(items.len()).expect("a Vec never exceeds isize::MAX items");
    // SAFETY: PyList_New(len) returns a new list with `len` empty slots (or null with an
    // exception set); each slot is filled exactly once with a reference we own.
    unsafe {
        let list = Bound::from_owned_ptr_or_err(py, ffi::PyList_New(len))?;
        for (i, item) in items.into_iter().enumerate() {
            ffi::PyList_SET_ITEM(list.as_ptr(), i as ffi::Py_ssize_t, item.into_ptr());
        }
        Ok(list.cast_into_unchecked())
    }
}

/// The items of an iterable, in order. Lists and tuples (what batching producers pass) are
/// read directly, without the iterator protocol.
fn collect_items(items: &Bound<'_, PyAny>) -> PyResult<Vec<Py<PyAny>>> {
    if let Ok(list) = items.cast::<PyList>() {
        // A snapshot under the list's lock, so a concurrent mutation cannot tear it.
        return Ok(pyo3::sync::critical_section::with_critical_section(
            list,
            || {
                let py = list.py();
                (0..list.len())
                    .map(|i| {
                        // SAFETY: i < len, and the list cannot change while we hold its lock (the
                        // GIL, or the critical section on free-threaded builds).
                        unsafe {
                            Bound::from_borrowed_ptr(
                                py,
                                ffi::PyList_GET_ITEM(list.as_ptr(), i as ffi::Py_ssize_t),
                            )
                        }
                        .unbind()
                    })
                    .collect()
            },
        ));
    }
    if let Ok(tuple) = items.cast::<PyTuple>() {
        return Ok(tuple.iter().map(Bound::unbind).collect());
    }
    items
        .try_iter()?
        .map(|item| item.map(Bound::unbind))
        .collect()
}

/// Accepts an exception instance, or an exception class (instantiated with no arguments).
fn exception_instance<'py>(err: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    let py = err.py();
    let base = py.get_type::<pyo3::exceptions::PyBaseException>();
    if err.is_instance(&base)? {
        return Ok(err.clone());
    }
    if let Ok(cls) = err.cast::<PyType>() {
        if cls.is_subclass(&base)? {
            return cls.call0();
        }
    }
    Err(PyTypeError::new_err(format!(
        "close(error=...) takes an exception instance or class, not {}",
        err.get_type().name()?
    )))
}

/// `max_items=`: an int of at least 1. Huge values mean "everything queued".
fn check_max_items(max_items: &Bound<'_, PyAny>) -> PyResult<usize> {
    let Ok(n) = max_items.cast::<PyInt>() else {
        return Err(PyTypeError::new_err(format!(
            "max_items must be an int of at least 1, got {}",
            type_name(max_items)
        )));
    };
    match n.extract::<i64>() {
        Ok(n) if n < 1 => Err(PyValueError::new_err(format!(
            "max_items must be at least 1, got {n}"
        ))),
        Ok(n) => Ok(usize::try_from(n).unwrap_or(usize::MAX)),
        Err(_) if n.lt(0)? => Err(PyValueError::new_err(format!(
            "max_items must be at least 1, got {n}"
        ))),
        Err(_) => Ok(usize::MAX),
    }
}
