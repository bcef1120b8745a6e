//! `rillet.Channel`: Python bindings over [`crate::channel::Channel`].
//!
//! Items, the close error and asyncio waiters are Python objects. Three rules keep this
//! correct on GIL and free-threaded builds alike:
//! 1. Python is never called while the channel lock is held: waiters are taken out of the
//!    channel, the lock is released, then they are woken.
//! 2. The interpreter is released only on the blocking path (an empty queue), never on send.
//! 3. Queued items are only dropped while attached (in `Drop` of the pyclass).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::{self, ThreadId};
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use pyo3::exceptions::{PyTimeoutError, PyTypeError, PyValueError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyList, PyTuple, PyType};
use pyo3::{PyTraverseError, PyVisit};

use crate::channel::{self as core, Ended, Held, Park, TryRecv, Waited, Wakeups};
use crate::py::errors::ChannelClosed;
use crate::py::event_loop::refuse_inside_event_loop;
use crate::py::recv_awaitable::{EndAs, Recv, Want};

/// How long a blocked `recv` sleeps before re-checking for Ctrl-C.
/// How long one blocking wait may sleep before the caller re-checks Ctrl-C and the deadline.
pub(crate) fn wait_slice(deadline: Option<Instant>) -> Duration {
    match deadline {
        None => SIGNAL_CHECK_INTERVAL,
        Some(d) => d
            .saturating_duration_since(Instant::now())
            .min(SIGNAL_CHECK_INTERVAL),
    }
}

pub(crate) const SIGNAL_CHECK_INTERVAL: Duration = Duration::from_millis(50);

/// A parked asyncio receiver: the future to resolve and the loop it belongs to.
pub struct AsyncWaiter {
    pub fut: Py<PyAny>,
    pub event_loop: Py<PyAny>,
    pub thread: ThreadId,
}

/// The error a channel was closed with, shared by every receiver that reports it.
pub type EndError = Arc<Py<PyAny>>;

pub type Core = core::Channel<Py<PyAny>, EndError, AsyncWaiter>;

/// The type of the `EMPTY` sentinel that `try_recv` returns when nothing is queued.
#[pyclass(frozen, module = "rillet")]
pub struct Empty;

#[pymethods]
impl Empty {
    fn __repr__(&self) -> &'static str {
        "rillet.EMPTY"
    }

    fn __bool__(&self) -> bool {
        false
    }
}

static EMPTY: PyOnceLock<Py<Empty>> = PyOnceLock::new();

pub fn empty(py: Python<'_>) -> &Py<Empty> {
    EMPTY.get_or_init(py, || {
        Py::new(py, Empty).expect("allocating the EMPTY sentinel")
    })
}

/// An unbounded multi-producer, multi-consumer FIFO of Python objects.
#[pyclass(frozen, subclass, module = "rillet", name = "Channel")]
pub struct Channel {
    core: Core,
    /// How often an async receiver had to park (tests use it to check wakeup coalescing).
    parks: AtomicU64,
    /// The awaitables `async for` and `recv_async` hand out, reused once their await is over.
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

    #[inline]
    pub fn send_item(&self, py: Python<'_>, item: Py<PyAny>) -> PyResult<()> {
        match self.core().send(item) {
            Ok(wakeups) => wake_all(py, self.core(), wakeups),
            Err(_) => Err(closed_for_send()),
        }
    }

    pub fn try_send_item(&self, py: Python<'_>, item: Py<PyAny>) -> PyResult<bool> {
        match self.core().send(item) {
            Ok(wakeups) => wake_all(py, self.core(), wakeups).map(|()| true),
            Err(_) => Ok(false),
        }
    }

    /// The next item for `for x in ch`: `None` ends the iteration at a normal close.
    #[inline]
    pub fn next_item(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match self.recv_until(py, None) {
            Ok(item) => Ok(item),
            Err(err) if err.is_instance_of::<ChannelClosed>(py) => Ok(None),
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
            Held::Error(err) => visit.call(&**err),
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

    /// `Channel[int]` in annotations.
    #[classmethod]
    #[pyo3(signature = (item, /))]
    fn __class_getitem__<'py>(
        cls: &Bound<'py, PyType>,
        item: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let py = cls.py();
        py.import("types")?
            .getattr("GenericAlias")?
            .call1((cls, item))
    }

    /// Appends `item`; never blocks. Raises ChannelClosed once the channel is closed.
    fn send(&self, py: Python<'_>, item: Py<PyAny>) -> PyResult<()> {
        self.send_item(py, item)
    }

    /// Appends `item` and returns True, or returns False if the channel is closed.
    fn try_send(&self, py: Python<'_>, item: Py<PyAny>) -> PyResult<bool> {
        self.try_send_item(py, item)
    }

    /// Appends every item of `items` in order, atomically with respect to receivers.
    fn send_many(&self, py: Python<'_>, items: &Bound<'_, PyAny>) -> PyResult<()> {
        match self.core().send_many(collect_items(items)?) {
            Ok(wakeups) => wake_all(py, self.core(), wakeups),
            Err(_) => Err(closed_for_send()),
        }
    }

    /// Takes the next item, waiting up to `timeout` seconds (forever if None).
    ///
    /// Raises TimeoutError when the time is up, ChannelClosed (or the close error) at the end.
    #[pyo3(signature = (timeout=None))]
    fn recv(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Py<PyAny>> {
        let deadline = deadline_after(timeout)?;
        match self.recv_until(py, deadline)? {
            Some(item) => Ok(item),
            None => Err(PyTimeoutError::new_err(format!(
                "no item arrived within {} s",
                timeout.unwrap_or_default()
            ))),
        }
    }

    /// Takes the next item if one is queued, else returns `rillet.EMPTY`.
    fn try_recv(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.core().try_recv() {
            TryRecv::Item(item) => Ok(item),
            TryRecv::Empty => Ok(empty(py).clone_ref(py).into_any()),
            TryRecv::Ended(end) => Err(ended_error(py, end)),
        }
    }

    /// Waits for at least one item, then returns up to `max_items` in a list.
    #[pyo3(signature = (max_items, timeout=None))]
    fn recv_many<'py>(
        &self,
        py: Python<'py>,
        max_items: i64,
        timeout: Option<f64>,
    ) -> PyResult<Bound<'py, PyList>> {
        let max_items = check_max_items(max_items)?;
        let deadline = deadline_after(timeout)?;
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
    fn try_recv_many<'py>(&self, py: Python<'py>, max_items: i64) -> PyResult<Bound<'py, PyList>> {
        let max_items = check_max_items(max_items)?;
        let batch = self
            .core()
            .try_recv_many(max_items)
            .map_err(|e| ended_error(py, e))?;
        list_from(py, batch)
    }

    /// Ends the channel. Receivers drain what is queued, then get ChannelClosed, or `error`
    /// raised if one is given. Idempotent: only the first close counts.
    #[pyo3(signature = (error=None))]
    fn close(&self, py: Python<'_>, error: Option<Bound<'_, PyAny>>) -> PyResult<()> {
        let end = match error {
            None => Ended::Closed,
            Some(err) => Ended::Failed(Arc::new(exception_instance(&err)?)),
        };
        match self.core().close(end) {
            Some(waiters) => wake_all(py, self.core(), waiters),
            None => Ok(()),
        }
    }

    /// True once `close` has been called (items may still be queued).
    #[getter]
    fn closed(&self) -> bool {
        self.core().is_closed()
    }

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

    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        self.next_item(py)
    }

    /// Awaitable: the next item, waiting for one if the channel is empty.
    fn recv_async(slf: &Bound<'_, Self>) -> PyResult<Py<Recv>> {
        Self::awaitable(slf, |ch| &ch.recv_awaitable, EndAs::ChannelClosed)
    }

    /// Awaitable: waits for at least one item, then returns up to `max_items` in a list.
    fn recv_many_async(slf: &Bound<'_, Self>, max_items: i64) -> PyResult<Recv> {
        let want = Want::Many(check_max_items(max_items)?);
        Ok(Recv::new(slf.clone().unbind(), want, EndAs::ChannelClosed))
    }

    fn __aiter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

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
                "`await ch.recv_async()`, `await ch.recv_many_async(n)` or `async for`",
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

/// Resolves the futures of woken async receivers, outside the channel lock.
///
/// On the waiter's own thread the future is resolved directly (no syscall); elsewhere the
/// wakeup goes through `loop.call_soon_threadsafe`. A waiter whose loop has closed cannot
/// take its item, so its wakeup is passed to the next parked receiver.
#[inline]
pub fn wake_all(py: Python<'_>, core: &Core, wakeups: Wakeups<AsyncWaiter>) -> PyResult<()> {
    if wakeups.is_empty() {
        return Ok(()); // the common case: nobody was parked
    }
    wake_parked(py, core, wakeups)
}

#[inline(never)]
fn wake_parked(py: Python<'_>, core: &Core, wakeups: Wakeups<AsyncWaiter>) -> PyResult<()> {
    let me = thread::current().id();
    let mut pending = wakeups;
    while let Some(w) = pending.pop() {
        let fut = w.fut.bind(py);
        let delivered = if w.thread == me {
            resolve_future(fut);
            true
        } else {
            w.event_loop
                .bind(py)
                .call_method1(
                    pyo3::intern!(py, "call_soon_threadsafe"),
                    (resolver(py), fut),
                )
                .is_ok()
        };
        if !delivered {
            pending.extend(core.pass_on());
        }
    }
    Ok(())
}

/// Resolves a parked receiver's future. A future that is already done was cancelled: its
/// receiver passes the wakeup on itself (see `_unpark`), so that still counts as delivered.
pub(crate) fn resolve_future(fut: &Bound<'_, PyAny>) {
    let py = fut.py();
    // Calling set_result and ignoring InvalidStateError is one call instead of done() first.
    let _ = fut.call_method1(pyo3::intern!(py, "set_result"), (py.None(),));
}

#[pyfunction]
fn _resolve_future(fut: &Bound<'_, PyAny>) {
    resolve_future(fut);
}

static RESOLVER: PyOnceLock<Py<PyAny>> = PyOnceLock::new();

pub(crate) fn resolver(py: Python<'_>) -> &Bound<'_, PyAny> {
    RESOLVER
        .get_or_init(py, || {
            wrap_pyfunction!(_resolve_future, py)
                .expect("creating the wakeup callback")
                .into_any()
                .unbind()
        })
        .bind(py)
}

pub fn ended_error(py: Python<'_>, end: Ended<EndError>) -> PyErr {
    match end {
        Ended::Closed => ChannelClosed::new_err("the channel is closed and has no items left"),
        Ended::Failed(err) => PyErr::from_value(err.bind(py).clone()),
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

fn closed_for_send() -> PyErr {
    ChannelClosed::new_err(
        "cannot send: the channel is closed (use try_send to drop items silently)",
    )
}

/// Accepts an exception instance, or an exception class (instantiated with no arguments).
fn exception_instance(err: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let py = err.py();
    let base = py.get_type::<pyo3::exceptions::PyBaseException>();
    if err.is_instance(&base)? {
        return Ok(err.clone().unbind());
    }
    if let Ok(cls) = err.cast::<PyType>() {
        if cls.is_subclass(&base)? {
            return Ok(cls.call0()?.unbind());
        }
    }
    Err(PyTypeError::new_err(format!(
        "close(error=...) takes an exception instance or class, not {}",
        err.get_type().name()?
    )))
}

pub(crate) fn deadline_after(timeout: Option<f64>) -> PyResult<Option<Instant>> {
    let Some(secs) = timeout else { return Ok(None) };
    // NaN fails every comparison, so it is rejected here too.
    if secs.is_nan() || secs < 0.0 {
        return Err(PyValueError::new_err(format!(
            "timeout must be None or a non-negative number of seconds, got {secs}"
        )));
    }
    // A timeout too large to represent means "wait forever".
    Ok(Duration::try_from_secs_f64(secs)
        .ok()
        .and_then(|d| Instant::now().checked_add(d)))
}

fn check_max_items(max_items: i64) -> PyResult<usize> {
    if max_items < 1 {
        return Err(PyValueError::new_err(format!(
            "max_items must be at least 1, got {max_items}"
        )));
    }
    Ok(usize::try_from(max_items).unwrap_or(usize::MAX))
}
