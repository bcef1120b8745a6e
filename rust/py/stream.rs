//! `StreamReader`/`StreamWriter` and the stream combinators, over [`crate::stream`].
//!
//! A reader is a tree of [`Kind`]s (pipe, list, convert, merge, copy child) that all poll
//! without blocking and subscribe a one-shot waker. Blocking `recv` waits on a thread waker
//! with the interpreter released, in slices so Ctrl-C works; the asyncio path
//! (`rillet.data.schema`) parks a future through `_subscribe`.
//!
//! Locks: no Python code runs and no Python object is dropped while a lock is held. The
//! core hands back what leaves a stream (a [`Deferred`]), and [`finish`] fires the wakers
//! and drops the chunks here, after every lock is released. Convert functions are called
//! with no lock held.
//!
//! Garbage collection: a reader reports every Python object its tree holds (buffered
//! chunks, convert functions, list items), so a cycle through a buffered item or through
//! a function that references its own reader is collected. Shared state is reported once:
//! a pipe's buffer by its reader (never by the writer), a copy's buffer by the
//! `_CopySource` object that the children share.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, ThreadId};
use std::time::Instant;

use parking_lot::Mutex;
use pyo3::exceptions::{PyRuntimeError, PyTimeoutError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyBool, PyDict, PyFloat, PyInt, PyTraceback, PyType};
use pyo3::{PyTraverseError, PyVisit};

use crate::concat::UsagePolicy;
use crate::py::concat::{push_any, AnyAccumulator, MessageAccumulator};
use crate::py::errors::{self, Class};
use crate::py::util::{
    deadline_after, empty, generic_alias, refuse_inside_event_loop, resolve_future, resolver,
    wait_slice, wakes_directly,
};
use crate::stream::{Chunk, Deferred, Pipe, Poll, SendError, Tee, TeeWait, Waker};

/// A parked asyncio receiver or sender.
pub struct AsyncWake {
    fut: Py<PyAny>,
    event_loop: Py<PyAny>,
    thread: ThreadId,
}

/// An error item: the exception and the traceback it had when it entered the stream.
///
/// Every receive raises the exception with that original traceback restored, so a
/// receiver's frames are not appended to the ones before (an error shared by `copy()`
/// children would otherwise grow a traceback, and keep every receiver's frames alive).
pub struct ErrItem {
    exc: Py<PyAny>,
    tb: Option<Py<PyTraceback>>,
}

impl ErrItem {
    fn new(exc: Bound<'_, PyAny>) -> Self {
        let py = exc.py();
        let tb = if exc.is_instance_of::<pyo3::exceptions::PyBaseException>() {
            PyErr::from_value(exc.clone())
                .traceback(py)
                .map(Bound::unbind)
        } else {
            None
        };
        ErrItem {
            exc: exc.unbind(),
            tb,
        }
    }

    fn from_err(py: Python<'_>, err: PyErr) -> Self {
        ErrItem::new(err.into_value(py).into_bound(py).into_any())
    }

    fn clone_ref(&self, py: Python<'_>) -> Self {
        ErrItem {
            exc: self.exc.clone_ref(py),
            tb: self.tb.as_ref().map(|t| t.clone_ref(py)),
        }
    }

    /// The exception to raise from one receive, with a fresh copy of its original traceback.
    fn raise(self, py: Python<'_>) -> PyErr {
        let exc = self.exc.into_bound(py);
        let is_exception = exc.is_instance_of::<pyo3::exceptions::PyBaseException>();
        let err = PyErr::from_value(exc);
        if is_exception {
            err.set_traceback(py, self.tb.map(|t| t.into_bound(py)));
        }
        err
    }

    fn visit(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        visit.call(&self.exc)?;
        visit.call(self.tb.as_ref())
    }
}

type PyChunk = Chunk<Py<PyAny>, ErrItem>;
type PyPoll = Poll<Py<PyAny>, ErrItem>;
type PipeCore = Pipe<Py<PyAny>, ErrItem, AsyncWake>;
type W = Arc<Waker<AsyncWake>>;

/// Fires wakers outside every lock: futures of this thread or of the loop running here
/// directly (a loop can move between threads, see `channel::wake`), others through their loop.
/// Every waker is fired even if one fails: wakeups are level-triggered, and a receiver
/// whose loop is closed is gone anyway.
fn deliver(py: Python<'_>, wakeups: Vec<W>) {
    if wakeups.is_empty() {
        return;
    }
    let me = thread::current().id();
    for w in wakeups {
        let Some(a) = w.fire() else { continue };
        let fut = a.fut.bind(py);
        let event_loop = a.event_loop.bind(py);
        if wakes_directly(py, event_loop, a.thread == me).unwrap_or(false) {
            resolve_future(fut);
        } else {
            let _ = event_loop.call_method1(
                pyo3::intern!(py, "call_soon_threadsafe"),
                (resolver(py), fut),
            );
        }
    }
}

/// Does what a stream operation left for after its locks: wakes, then drops the chunks.
fn finish(py: Python<'_>, after: Deferred<PyChunk, AsyncWake>) {
    deliver(py, after.wakeups);
    drop(after.dropped);
}

fn async_waker(fut: Py<PyAny>, event_loop: Py<PyAny>) -> W {
    Waker::asynchronous(AsyncWake {
        fut,
        event_loop,
        thread: thread::current().id(),
    })
}

/// Waits until `subscribe`d wakeup fires or `deadline` passes (false). `subscribe` returning
/// false means "ready now". The interpreter is released while waiting.
fn block_on(
    py: Python<'_>,
    subscribe: impl FnOnce(&W) -> bool,
    deadline: Option<Instant>,
) -> PyResult<bool> {
    let waker = Waker::thread();
    if !subscribe(&waker) {
        return Ok(true);
    }
    loop {
        let slice = wait_slice(deadline);
        if py.detach(|| waker.wait(slice)) {
            return Ok(true);
        }
        py.check_signals()?;
        if deadline.is_some_and(|d| Instant::now() >= d) {
            waker.fire(); // retire it, so lists prune it
            return Ok(false);
        }
    }
}

/// The `timeout` argument: None (wait forever) or a non-negative number of seconds.
fn timeout_deadline(timeout: Option<&Bound<'_, PyAny>>) -> PyResult<Option<Instant>> {
    let Some(t) = timeout.filter(|t| !t.is_none()) else {
        return Ok(None);
    };
    if !(t.is_instance_of::<PyFloat>() || t.is_instance_of::<PyInt>()) {
        return Err(PyTypeError::new_err(format!(
            "timeout must be a number of seconds or None, not {}",
            t.get_type().name()?
        )));
    }
    deadline_after(Some(t.extract::<f64>()?))
}

fn clone_chunk(py: Python<'_>, c: &PyChunk) -> PyChunk {
    match c {
        Chunk::Item(x) => Chunk::Item(x.clone_ref(py)),
        Chunk::Error(e) => Chunk::Error(e.clone_ref(py)),
    }
}

fn visit_chunk(visit: &PyVisit<'_>, c: &PyChunk) -> Result<(), PyTraverseError> {
    match c {
        Chunk::Item(x) => visit.call(x),
        Chunk::Error(e) => e.visit(visit),
    }
}

fn eof(py: Python<'_>) -> PyErr {
    errors::new_err(py, Class::StreamEOF, "end of stream")
}

// ---------------------------------------------------------------------------------------
// Sentinels

/// The type of `NO_VALUE`: a `convert_stream` function returns it to skip an item.
#[pyclass(frozen, module = "rillet")]
pub struct NoValue;

#[pymethods]
impl NoValue {
    fn __repr__(&self) -> &'static str {
        "rillet.NO_VALUE"
    }
}

static NO_VALUE: PyOnceLock<Py<NoValue>> = PyOnceLock::new();

pub fn no_value(py: Python<'_>) -> &Py<NoValue> {
    NO_VALUE.get_or_init(py, || {
        Py::new(py, NoValue).expect("allocating the NO_VALUE sentinel")
    })
}

/// The item `merge_named_streams` yields when the source called `name` has ended.
#[pyclass(frozen, eq, module = "rillet", name = "SourceEOF")]
#[derive(PartialEq)]
pub struct SourceEOF {
    name: String,
}

#[pymethods]
impl SourceEOF {
    /// The key of the source in the dict given to `merge_named_streams`.
    #[getter]
    fn name(&self) -> &str {
        &self.name
    }

    #[new]
    fn new(name: String) -> Self {
        SourceEOF { name }
    }

    fn __repr__(&self) -> String {
        format!("SourceEOF({:?})", self.name)
    }
}

// ---------------------------------------------------------------------------------------
// Reader kinds

struct Source {
    name: Option<String>,
    kind: Arc<Kind>,
    ended: AtomicBool,
}

/// The state `copy(n)` children share: the tee buffer and the source they read. A Python
/// object so that the garbage collector sees it once, however many children hold it.
#[pyclass(frozen, module = "rillet", name = "_CopySource")]
pub struct CopySource {
    tee: Tee<PyChunk, AsyncWake>,
    source: Arc<Kind>,
}

#[pymethods]
impl CopySource {
    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        self.tee.try_visit(|c| visit_chunk(&visit, c))?;
        self.source.traverse(&visit)
    }

    fn __clear__(&self) {
        let dropped = self.tee.clear();
        Python::attach(|py| self.source.close(py));
        drop(dropped); // after the tee's lock: finalizers may run
    }
}

enum Kind {
    Pipe(Arc<PipeCore>),
    List {
        items: Vec<Py<PyAny>>,
        pos: AtomicUsize,
    },
    Convert {
        inner: Arc<Kind>,
        func: Py<PyAny>,
        on_error: Option<Py<PyAny>>,
    },
    Merge {
        sources: Vec<Source>,
        next: AtomicUsize,
    },
    Copy {
        shared: Py<CopySource>,
        child: usize,
    },
}

impl Kind {
    /// The next chunk if one is ready. Never blocks; may call Python (convert functions).
    fn poll(&self, py: Python<'_>) -> PyPoll {
        match self {
            Kind::Pipe(pipe) => {
                let (poll, wakeups) = pipe.poll();
                deliver(py, wakeups);
                poll
            }
            Kind::List { items, pos } => match items.get(pos.fetch_add(1, Ordering::AcqRel)) {
                Some(x) => Poll::Ready(Chunk::Item(x.clone_ref(py))),
                None => {
                    pos.store(items.len(), Ordering::Release);
                    Poll::Ended
                }
            },
            Kind::Convert {
                inner,
                func,
                on_error,
            } => poll_convert(py, inner, func, on_error.as_ref()),
            Kind::Merge { sources, next } => poll_merge(py, sources, next),
            Kind::Copy { shared, child } => poll_copy(py, shared.get(), *child),
        }
    }

    /// Registers `w` to fire when polling may progress; false means "poll again now".
    fn subscribe(&self, w: &W) -> bool {
        match self {
            Kind::Pipe(pipe) => pipe.subscribe(w),
            Kind::List { .. } => false,
            Kind::Convert { inner, .. } => inner.subscribe(w),
            Kind::Merge { sources, .. } => {
                // Subscribe to every open source (no short-circuit): any of them may wake us.
                let mut wait = true;
                for source in sources.iter().filter(|s| !s.ended.load(Ordering::Acquire)) {
                    wait &= source.kind.subscribe(w);
                }
                wait
            }
            Kind::Copy { shared, child } => {
                let shared = shared.get();
                match shared.tee.subscribe(*child, w) {
                    TeeWait::Retry => false,
                    TeeWait::Registered => true,
                    TeeWait::SourceIdle => shared.source.subscribe(w),
                }
            }
        }
    }

    /// Takes every receiver waiting on this tree (to wake them when the tree changes hands:
    /// they poll again and find the reader moved). Waking a waiter that is not concerned is
    /// harmless: it polls, finds nothing and waits again.
    fn take_waiters(&self, out: &mut Vec<W>) {
        match self {
            Kind::Pipe(pipe) => out.extend(pipe.take_readers()),
            Kind::List { .. } => {}
            Kind::Convert { inner, .. } => inner.take_waiters(out),
            Kind::Merge { sources, .. } => sources.iter().for_each(|s| s.kind.take_waiters(out)),
            Kind::Copy { shared, .. } => {
                let shared = shared.get();
                out.extend(shared.tee.take_waiters());
                shared.source.take_waiters(out);
            }
        }
    }

    /// The reader's close: tells the writer to stop and drops what is buffered. Idempotent.
    fn close(&self, py: Python<'_>) {
        match self {
            Kind::Pipe(pipe) => finish(py, pipe.close_reader()),
            Kind::List { items, pos } => pos.store(items.len(), Ordering::Release),
            Kind::Convert { inner, .. } => inner.close(py),
            Kind::Merge { sources, .. } => sources.iter().for_each(|s| s.kind.close(py)),
            Kind::Copy { shared, child } => {
                let shared = shared.get();
                let (last, after) = shared.tee.close_child(*child);
                finish(py, after);
                if last {
                    shared.source.close(py);
                }
            }
        }
    }

    /// The buffer bound a copy of this stream keeps: a bounded pipe's capacity, through
    /// conversions and copies.
    fn capacity(&self) -> Option<usize> {
        match self {
            Kind::Pipe(pipe) => pipe.capacity(),
            Kind::Convert { inner, .. } => inner.capacity(),
            Kind::Copy { shared, .. } => shared.get().tee.limit(),
            Kind::List { .. } | Kind::Merge { .. } => None,
        }
    }

    /// Reports the Python objects this tree holds to the garbage collector.
    fn traverse(&self, visit: &PyVisit<'_>) -> Result<(), PyTraverseError> {
        match self {
            Kind::Pipe(pipe) => pipe.try_visit(|c| visit_chunk(visit, c)),
            Kind::List { items, .. } => items.iter().try_for_each(|x| visit.call(x)),
            Kind::Convert {
                inner,
                func,
                on_error,
            } => {
                visit.call(func)?;
                visit.call(on_error.as_ref())?;
                inner.traverse(visit)
            }
            Kind::Merge { sources, .. } => sources.iter().try_for_each(|s| s.kind.traverse(visit)),
            Kind::Copy { shared, .. } => visit.call(shared),
        }
    }
}

fn poll_convert(
    py: Python<'_>,
    inner: &Kind,
    func: &Py<PyAny>,
    on_error: Option<&Py<PyAny>>,
) -> PyPoll {
    loop {
        let out = match inner.poll(py) {
            Poll::Ready(Chunk::Item(x)) => func.call1(py, (x,)),
            Poll::Ready(Chunk::Error(e)) => match on_error {
                None => return Poll::Ready(Chunk::Error(e)),
                Some(f) => match f.call1(py, (e.exc,)) {
                    Ok(r) if r.is_none(py) => continue, // the mapper dropped the error
                    Ok(r) => return Poll::Ready(Chunk::Error(ErrItem::new(r.into_bound(py)))),
                    Err(err) => return Poll::Ready(Chunk::Error(ErrItem::from_err(py, err))),
                },
            },
            other => return other,
        };
        match out {
            Ok(v) if v.is(no_value(py)) => continue,
            Ok(v) => return Poll::Ready(Chunk::Item(v)),
            Err(err) => return Poll::Ready(Chunk::Error(ErrItem::from_err(py, err))),
        }
    }
}

/// Round-robin over the sources, starting after the one that delivered last, so a busy
/// source cannot starve the others; each source's own order is kept.
fn poll_merge(py: Python<'_>, sources: &[Source], next: &AtomicUsize) -> PyPoll {
    let n = sources.len();
    let start = next.load(Ordering::Acquire);
    let mut open = false;
    for k in 0..n {
        let i = (start + k) % n;
        let source = &sources[i];
        if source.ended.load(Ordering::Acquire) {
            continue;
        }
        match source.kind.poll(py) {
            Poll::Ready(chunk) => {
                next.store((i + 1) % n, Ordering::Release);
                return Poll::Ready(chunk);
            }
            Poll::Ended => {
                source.ended.store(true, Ordering::Release);
                if let Some(name) = &source.name {
                    let marker = Py::new(py, SourceEOF { name: name.clone() }).map(Py::into_any);
                    return Poll::Ready(match marker {
                        Ok(m) => Chunk::Item(m),
                        Err(e) => Chunk::Error(ErrItem::from_err(py, e)),
                    });
                }
            }
            Poll::Pending => open = true,
        }
    }
    if open {
        Poll::Pending
    } else {
        Poll::Ended
    }
}

fn poll_copy(py: Python<'_>, shared: &CopySource, child: usize) -> PyPoll {
    let (poll, after) =
        shared
            .tee
            .poll_child(child, |c| clone_chunk(py, c), || shared.source.poll(py));
    finish(py, after);
    poll
}

// ---------------------------------------------------------------------------------------
// StreamReader

/// The receiving end of a stream, generic in its item type (`StreamReader[str]`).
///
/// Iterate it with `for` or `async for`; `recv()` and `await arecv()` raise StreamEOF at the
/// end (every time), and raise error items. A reader has one consumer; use `copy(n)` to fan
/// out. `copy()`, `convert_stream()` and the merges take the reader over: it must not be
/// used afterwards, and a receive blocked on it at that moment raises RuntimeError.
///
/// Closing: `close()`, leaving a `with` / `async with` block, or dropping the reader
/// closes it, and the writer's `send` then returns False so the producer stops. Leaving an
/// `async for` early (`break`) does not close the reader while a variable still refers to
/// it: wrap the loop in `async with reader:` (or `with`) to close it there.
#[pyclass(frozen, weakref, module = "rillet", name = "StreamReader")]
pub struct StreamReader {
    kind: Mutex<Option<Arc<Kind>>>,
}

impl StreamReader {
    fn from_kind(kind: Kind) -> Self {
        StreamReader {
            kind: Mutex::new(Some(Arc::new(kind))),
        }
    }

    fn kind(&self) -> PyResult<Arc<Kind>> {
        self.kind.lock().clone().ok_or_else(moved_error)
    }

    /// True while `kind` is still this reader's stream (not taken over).
    fn owns(&self, kind: &Arc<Kind>) -> bool {
        matches!(&*self.kind.lock(), Some(k) if Arc::ptr_eq(k, kind))
    }

    fn check_owns(&self, kind: &Arc<Kind>) -> PyResult<()> {
        if self.owns(kind) {
            Ok(())
        } else {
            Err(moved_error())
        }
    }

    /// Subscribes `w` to `kind` on behalf of this reader. Subscribing before checking
    /// ownership pairs with `take` (which moves the stream, then wakes its waiters): a
    /// receiver either sees the move here or is woken by it.
    fn subscribe(&self, kind: &Arc<Kind>, w: &W) -> bool {
        kind.subscribe(w) && self.owns(kind)
    }

    /// Moves the stream out of this reader (into a copy, convert or merge), and wakes any
    /// receiver blocked on it, which then raises the moved error instead of taking items.
    fn take(&self, py: Python<'_>) -> PyResult<Arc<Kind>> {
        let kind = self.kind.lock().take().ok_or_else(moved_error)?;
        let mut waiters = Vec::new();
        kind.take_waiters(&mut waiters);
        deliver(py, waiters);
        Ok(kind)
    }

    fn recv_until(&self, py: Python<'_>, deadline: Option<Instant>) -> PyResult<Py<PyAny>> {
        let kind = self.kind()?;
        loop {
            self.check_owns(&kind)?;
            match kind.poll(py) {
                Poll::Ready(Chunk::Item(x)) => return Ok(x),
                Poll::Ready(Chunk::Error(e)) => return Err(e.raise(py)),
                Poll::Ended => return Err(eof(py)),
                Poll::Pending => {
                    refuse_inside_event_loop(
                        py,
                        "StreamReader.recv()",
                        "`await reader.arecv()` or `async for`",
                    )?;
                    if !block_on(py, |w| self.subscribe(&kind, w), deadline)? {
                        return Err(PyTimeoutError::new_err("no stream item arrived in time"));
                    }
                }
            }
        }
    }
}

fn moved_error() -> PyErr {
    PyRuntimeError::new_err(
        "this StreamReader was handed to copy(), convert_stream() or a merge: read from the reader(s) those returned",
    )
}

impl Drop for StreamReader {
    fn drop(&mut self) {
        if let Some(kind) = self.kind.get_mut().take() {
            Python::attach(|py| kind.close(py));
        }
    }
}

static ASYNC_HELPERS: PyOnceLock<Py<PyModule>> = PyOnceLock::new();

/// The asyncio halves live in Python (`rillet.data.schema`): they await futures.
fn async_helper<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    let module =
        ASYNC_HELPERS.get_or_try_init(py, || py.import("rillet.data.schema").map(Bound::unbind))?;
    module.bind(py).getattr(name)
}

#[pymethods]
impl StreamReader {
    /// `StreamReader[int]` in annotations.
    #[classmethod]
    #[pyo3(signature = (item, /))]
    fn __class_getitem__<'py>(
        cls: &Bound<'py, PyType>,
        item: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        generic_alias(cls, item)
    }

    /// The next item, waiting up to `timeout` seconds (forever if None). Raises StreamEOF at
    /// the end, an error item's exception for that item, TimeoutError when the time is up.
    #[pyo3(signature = (timeout=None))]
    fn recv(&self, py: Python<'_>, timeout: Option<&Bound<'_, PyAny>>) -> PyResult<Py<PyAny>> {
        self.recv_until(py, timeout_deadline(timeout)?)
    }

    /// `await reader.arecv()`: the next item, without blocking the event loop. Raises like
    /// `recv`; cancelling the await loses no item.
    fn arecv<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        async_helper(slf.py(), "_arecv")?.call1((slf,))
    }

    /// The next item if one is ready, else `rillet.EMPTY`. Raises like `recv`.
    fn _poll(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.kind()?.poll(py) {
            Poll::Ready(Chunk::Item(x)) => Ok(x),
            Poll::Ready(Chunk::Error(e)) => Err(e.raise(py)),
            Poll::Ended => Err(eof(py)),
            Poll::Pending => Ok(empty(py).clone_ref(py).into_any()),
        }
    }

    /// Resolves `fut` (of `event_loop`) when polling may progress. False: poll again now.
    fn _subscribe(&self, fut: Py<PyAny>, event_loop: Py<PyAny>) -> PyResult<bool> {
        let kind = self.kind()?;
        Ok(self.subscribe(&kind, &async_waker(fut, event_loop)))
    }

    /// Pushes every ready chunk into `acc`; True at the end of the stream, False when it
    /// has to wait. Raises error items.
    fn _drain_into(&self, py: Python<'_>, acc: &MessageAccumulator) -> PyResult<bool> {
        let kind = self.kind()?;
        loop {
            self.check_owns(&kind)?;
            match kind.poll(py) {
                Poll::Ready(Chunk::Item(x)) => acc.push(x.bind(py))?,
                Poll::Ready(Chunk::Error(e)) => return Err(e.raise(py)),
                Poll::Ended => return Ok(true),
                Poll::Pending => return Ok(false),
            }
        }
    }

    /// Stops reading: the writer's `send` returns False from now on, buffered items are
    /// dropped, later receives raise StreamEOF, and a receive blocked on this reader wakes
    /// up with StreamEOF. Idempotent.
    fn close(&self, py: Python<'_>) {
        let kind = self.kind.lock().clone();
        if let Some(kind) = kind {
            kind.close(py);
        }
    }

    /// `n` independent readers that each see every item (errors too) of this stream.
    ///
    /// The source is closed once all of them are. This reader must not be used afterwards.
    /// `copy(1)` returns `[self]`. A copy of a bounded pipe (`pipe(capacity=n)`, or a
    /// conversion of one) stays bounded: the children share a buffer of at most `n` items,
    /// so a child that is `n` items ahead of the slowest one waits for it, and the writer
    /// then waits too once the pipe is full. Copies of other streams buffer without bound
    /// between the fastest and the slowest child.
    fn copy(slf: &Bound<'_, Self>, n: usize) -> PyResult<Vec<Py<StreamReader>>> {
        let py = slf.py();
        if n == 0 {
            return Err(PyValueError::new_err("copy(n) needs n >= 1"));
        }
        if n == 1 {
            return Ok(vec![slf.clone().unbind()]);
        }
        let source = slf.get().take(py)?;
        let shared = Py::new(
            py,
            CopySource {
                tee: Tee::new(n, source.capacity()),
                source,
            },
        )?;
        (0..n)
            .map(|child| {
                Py::new(
                    py,
                    StreamReader::from_kind(Kind::Copy {
                        shared: shared.clone_ref(py),
                        child,
                    }),
                )
            })
            .collect()
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        // try_lock: a collection must never wait (the lock is only held for moments).
        match self.kind.try_lock() {
            Some(kind) => match kind.as_ref() {
                Some(kind) => kind.traverse(&visit),
                None => Ok(()),
            },
            None => Ok(()),
        }
    }

    fn __clear__(&self) {
        let kind = self.kind.lock().take();
        if let Some(kind) = kind {
            Python::attach(|py| kind.close(py));
        }
    }

    /// `for item in reader`: the items until the end; error items are raised.
    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// The next item (blocking), like `recv()`; StopIteration at the end.
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match self.recv_until(py, None) {
            Ok(x) => Ok(Some(x)),
            Err(e) if errors::is_instance(py, &e, Class::StreamEOF) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `async for item in reader`: the items until the end; error items are raised.
    fn __aiter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Awaits the next item, like `arecv()`; StopAsyncIteration at the end.
    fn __anext__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        async_helper(slf.py(), "_anext")?.call1((slf,))
    }

    /// `with reader:` closes the reader when the block ends.
    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Closes the reader.
    fn __exit__(&self, py: Python<'_>, _t: Py<PyAny>, _v: Py<PyAny>, _tb: Py<PyAny>) {
        self.close(py);
    }

    /// `async with reader:` closes the reader when the block ends (e.g. after a `break`
    /// out of `async for`), so the producer learns to stop.
    fn __aenter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        async_helper(slf.py(), "_aenter")?.call1((slf,))
    }

    /// Closes the reader.
    fn __aexit__<'py>(
        slf: &Bound<'py, Self>,
        _t: Py<PyAny>,
        _v: Py<PyAny>,
        _tb: Py<PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        async_helper(slf.py(), "_aexit")?.call1((slf,))
    }

    fn __repr__(&self) -> String {
        let kind = self.kind.lock().clone();
        let what = match kind.as_deref() {
            None => "moved",
            Some(Kind::Pipe(_)) => "pipe",
            Some(Kind::List { .. }) => "list",
            Some(Kind::Convert { .. }) => "convert",
            Some(Kind::Merge { .. }) => "merge",
            Some(Kind::Copy { .. }) => "copy",
        };
        format!("<rillet.StreamReader ({what})>")
    }
}

// ---------------------------------------------------------------------------------------
// StreamWriter

/// The sending end of a stream made by `pipe()`, generic in its item type.
///
/// `send` returns True when the item was queued and False when the reader has gone
/// (closed or dropped: the item is dropped, stop producing). On an unbounded pipe it never
/// blocks; on a bounded one it waits for space (`asend` awaits it). Closing the writer
/// (`close()`, `with`, or dropping it) ends the stream after the queued items.
#[pyclass(frozen, weakref, module = "rillet", name = "StreamWriter")]
pub struct StreamWriter {
    pipe: Arc<PipeCore>,
}

impl StreamWriter {
    /// Enqueues, waiting for space on a full bounded pipe; false if the reader has gone.
    fn send_chunk(
        &self,
        py: Python<'_>,
        mut chunk: PyChunk,
        deadline: Option<Instant>,
    ) -> PyResult<bool> {
        loop {
            match self.try_send_chunk(py, chunk)? {
                Ok(queued) => return Ok(queued),
                Err(back) => chunk = back,
            }
            refuse_inside_event_loop(
                py,
                "StreamWriter.send() on a full pipe",
                "`await writer.asend(item)`",
            )?;
            if !block_on(py, |w| self.pipe.subscribe_space(w), deadline)? {
                return Err(PyTimeoutError::new_err("no space in the stream in time"));
            }
        }
    }

    /// Ok(Ok(queued)) once handled, Ok(Err(chunk)) when the pipe is full.
    fn try_send_chunk(&self, py: Python<'_>, chunk: PyChunk) -> PyResult<Result<bool, PyChunk>> {
        match self.pipe.try_send(chunk) {
            Ok(wakeups) => {
                deliver(py, wakeups);
                Ok(Ok(true))
            }
            Err(SendError::ReaderClosed(_)) => Ok(Ok(false)),
            Err(SendError::Full(chunk)) => Ok(Err(chunk)),
            Err(SendError::WriterClosed(_)) => Err(errors::new_err(
                py,
                Class::ChannelClosed,
                "cannot send: this StreamWriter has been closed",
            )),
        }
    }
}

fn error_chunk(err: &Bound<'_, PyAny>) -> PyResult<PyChunk> {
    if err.is_instance_of::<pyo3::exceptions::PyBaseException>() {
        return Ok(Chunk::Error(ErrItem::new(err.clone())));
    }
    Err(PyTypeError::new_err(format!(
        "send_error() takes an exception instance, not {}",
        err.get_type().name()?
    )))
}

impl Drop for StreamWriter {
    fn drop(&mut self) {
        let wakeups = self.pipe.close_writer();
        if !wakeups.is_empty() {
            Python::attach(|py| deliver(py, wakeups));
        }
    }
}

#[pymethods]
impl StreamWriter {
    /// `StreamWriter[int]` in annotations.
    #[classmethod]
    #[pyo3(signature = (item, /))]
    fn __class_getitem__<'py>(
        cls: &Bound<'py, PyType>,
        item: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        generic_alias(cls, item)
    }

    /// Sends `item`: True when it was queued, False when the reader has gone (the item is
    /// dropped: stop producing). On a full bounded pipe it waits up to `timeout` seconds
    /// (forever if None), then raises TimeoutError. Raises ChannelClosed after `close()`.
    #[pyo3(signature = (item, timeout=None))]
    fn send(
        &self,
        py: Python<'_>,
        item: Py<PyAny>,
        timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.send_chunk(py, Chunk::Item(item), timeout_deadline(timeout)?)
    }

    /// `await writer.asend(item)`: like `send`, waiting for space without blocking the loop.
    fn asend<'py>(slf: &Bound<'py, Self>, item: Py<PyAny>) -> PyResult<Bound<'py, PyAny>> {
        async_helper(slf.py(), "_asend")?.call1((slf, item, false))
    }

    /// Sends an error item: the reader raises `error` from one receive, then goes on.
    /// Returns like `send`.
    #[pyo3(signature = (error, timeout=None))]
    fn send_error(
        &self,
        py: Python<'_>,
        error: &Bound<'_, PyAny>,
        timeout: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        self.send_chunk(py, error_chunk(error)?, timeout_deadline(timeout)?)
    }

    /// `await writer.asend_error(exc)`: like `send_error`, without blocking the loop.
    fn asend_error<'py>(
        slf: &Bound<'py, Self>,
        error: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, PyAny>> {
        error_chunk(error)?;
        async_helper(slf.py(), "_asend")?.call1((slf, error, true))
    }

    /// Non-blocking send for the asyncio path: True/False as `send`, or `EMPTY` when full.
    fn _try_send(
        &self,
        py: Python<'_>,
        item: &Bound<'_, PyAny>,
        is_error: bool,
    ) -> PyResult<Py<PyAny>> {
        let chunk = if is_error {
            error_chunk(item)?
        } else {
            Chunk::Item(item.clone().unbind())
        };
        Ok(match self.try_send_chunk(py, chunk)? {
            Ok(queued) => PyBool::new(py, queued).to_owned().into_any().unbind(),
            Err(_) => empty(py).clone_ref(py).into_any(),
        })
    }

    /// Resolves `fut` when the pipe may have space. False: try again now.
    fn _subscribe_space(&self, fut: Py<PyAny>, event_loop: Py<PyAny>) -> bool {
        self.pipe.subscribe_space(&async_waker(fut, event_loop))
    }

    /// Ends the stream: the reader gets the buffered items, then StreamEOF. Idempotent.
    fn close(&self, py: Python<'_>) {
        deliver(py, self.pipe.close_writer());
    }

    /// True once the reader has closed or was dropped (sends return False).
    #[getter]
    fn reader_closed(&self) -> bool {
        self.pipe.is_reader_closed()
    }

    /// True once this writer has been closed (not when only the reader closed).
    #[getter]
    fn closed(&self) -> bool {
        self.pipe.is_writer_closed()
    }

    /// `with writer:` closes the writer when the block ends.
    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    /// Closes the writer.
    fn __exit__(&self, py: Python<'_>, _t: Py<PyAny>, _v: Py<PyAny>, _tb: Py<PyAny>) {
        self.close(py);
    }

    fn __repr__(&self) -> String {
        let state = if self.pipe.is_writer_closed() {
            "closed"
        } else {
            "open"
        };
        format!(
            "<rillet.StreamWriter {state}, {} buffered>",
            self.pipe.len()
        )
    }
}

// ---------------------------------------------------------------------------------------
// Constructors and combinators

/// The `capacity` argument of `pipe()`: None (unbounded) or an int of at least 1.
fn capacity_arg(capacity: Option<&Bound<'_, PyAny>>) -> PyResult<Option<usize>> {
    let Some(c) = capacity.filter(|c| !c.is_none()) else {
        return Ok(None);
    };
    if !c.is_instance_of::<PyInt>() || c.is_instance_of::<PyBool>() {
        return Err(PyTypeError::new_err(format!(
            "capacity must be an int of at least 1, or None for an unbounded pipe, not {}",
            c.get_type().name()?
        )));
    }
    match c.extract::<i64>() {
        Ok(n) if n >= 1 => Ok(Some(usize::try_from(n).unwrap_or(usize::MAX))),
        Ok(n) => Err(PyValueError::new_err(format!(
            "capacity must be at least 1, or None for an unbounded pipe, got {n}"
        ))),
        Err(_) => Err(PyValueError::new_err(format!(
            "capacity {} is out of range: use at most {}, or None for an unbounded pipe",
            c.repr()?,
            i64::MAX
        ))),
    }
}

/// A connected `(reader, writer)`. Unbounded by default: `send` never blocks, which is what
/// a producer on an event loop needs. With `capacity`, `send` waits while that many items
/// are queued (and so does a producer feeding `copy()` children, for the slowest child).
#[pyfunction]
#[pyo3(signature = (capacity=None))]
pub fn pipe(
    py: Python<'_>,
    capacity: Option<&Bound<'_, PyAny>>,
) -> PyResult<(Py<StreamReader>, Py<StreamWriter>)> {
    let core = Arc::new(PipeCore::new(capacity_arg(capacity)?));
    let reader = Py::new(py, StreamReader::from_kind(Kind::Pipe(core.clone())))?;
    Ok((reader, Py::new(py, StreamWriter { pipe: core })?))
}

/// A reader over the items of `items`, in order, then StreamEOF.
#[pyfunction]
pub fn stream_from_list(items: &Bound<'_, PyAny>) -> PyResult<StreamReader> {
    let items: Vec<Py<PyAny>> = items
        .try_iter()?
        .map(|x| x.map(Bound::unbind))
        .collect::<PyResult<_>>()?;
    Ok(StreamReader::from_kind(Kind::List {
        items,
        pos: AtomicUsize::new(0),
    }))
}

/// A reader of `func(item)` for each item of `reader`, applied lazily on receive.
///
/// `func` returning `NO_VALUE` skips the item; an exception it raises is raised from that
/// receive (the stream goes on). Error items pass through `on_error(exc)` if given: it
/// returns None to drop the error, or the exception to raise instead. `reader` is taken
/// over: read from the returned reader only.
#[pyfunction]
#[pyo3(signature = (reader, func, *, on_error=None))]
pub fn convert_stream(
    reader: &Bound<'_, StreamReader>,
    func: Py<PyAny>,
    on_error: Option<Py<PyAny>>,
) -> PyResult<StreamReader> {
    let inner = reader.get().take(reader.py())?;
    Ok(StreamReader::from_kind(Kind::Convert {
        inner,
        func,
        on_error,
    }))
}

/// Moves the streams out of `readers`, all or none: if one cannot be taken (already
/// moved, or listed twice), those taken so far are put back and the error is raised.
fn take_all(readers: &[Bound<'_, StreamReader>]) -> PyResult<Vec<Arc<Kind>>> {
    let mut taken = Vec::with_capacity(readers.len());
    for reader in readers {
        match reader.get().take(reader.py()) {
            Ok(kind) => taken.push(kind),
            Err(err) => {
                for (reader, kind) in readers.iter().zip(taken) {
                    *reader.get().kind.lock() = Some(kind);
                }
                return Err(err);
            }
        }
    }
    Ok(taken)
}

fn merge(names: Vec<Option<String>>, kinds: Vec<Arc<Kind>>) -> StreamReader {
    let sources = names
        .into_iter()
        .zip(kinds)
        .map(|(name, kind)| Source {
            name,
            kind,
            ended: AtomicBool::new(false),
        })
        .collect();
    StreamReader::from_kind(Kind::Merge {
        sources,
        next: AtomicUsize::new(0),
    })
}

/// One reader of the items of all `readers` as they arrive, each source's order kept,
/// ending after the last source ends. No readers give an empty stream; one gives itself.
/// The readers are taken over: read from the returned reader only.
#[pyfunction]
pub fn merge_streams(py: Python<'_>, readers: &Bound<'_, PyAny>) -> PyResult<Py<StreamReader>> {
    let readers: Vec<Bound<'_, StreamReader>> = readers
        .try_iter()?
        .map(|r| Ok(r?.cast_into::<StreamReader>()?))
        .collect::<PyResult<_>>()?;
    if readers.len() == 1 {
        return Ok(readers[0].clone().unbind());
    }
    let kinds = take_all(&readers)?;
    Py::new(py, merge(vec![None; kinds.len()], kinds))
}

/// Like `merge_streams` over a `{name: reader}` dict, yielding `SourceEOF(name)` as an item
/// when each source ends, then StreamEOF after the last.
#[pyfunction]
pub fn merge_named_streams(readers: &Bound<'_, PyDict>) -> PyResult<StreamReader> {
    let mut names = Vec::with_capacity(readers.len());
    let mut streams = Vec::with_capacity(readers.len());
    for (name, reader) in readers.iter() {
        names.push(Some(name.extract::<String>()?));
        streams.push(reader.cast_into::<StreamReader>()?);
    }
    Ok(merge(names, take_all(&streams)?))
}

/// Reads `reader` to the end and concatenates its Message chunks (`concat_messages` rules).
///
/// Runs in Rust without a Python call per chunk; waits with the interpreter released. The
/// first error item is raised (the partial chunks are discarded). The reader is closed.
/// `usage` combines usage counters as in `concat_messages`. Inside a running event loop
/// use `await aconcat_message_stream(reader)`.
#[pyfunction]
#[pyo3(signature = (reader, *, usage="max"))]
pub fn concat_message_stream(
    py: Python<'_>,
    reader: &Bound<'_, StreamReader>,
    usage: &str,
) -> PyResult<Py<PyAny>> {
    let policy = UsagePolicy::parse(usage).ok_or_else(|| {
        PyValueError::new_err(format!(
            "usage must be 'max', 'sum' or 'last', not {usage:?}"
        ))
    })?;
    let reader = reader.get();
    let kind = reader.kind()?;
    let result = drain(py, reader, &kind, AnyAccumulator::new(policy), policy);
    if reader.owns(&kind) {
        kind.close(py);
    }
    result
}

fn drain(
    py: Python<'_>,
    reader: &StreamReader,
    kind: &Arc<Kind>,
    mut acc: AnyAccumulator,
    policy: UsagePolicy,
) -> PyResult<Py<PyAny>> {
    loop {
        reader.check_owns(kind)?;
        match kind.poll(py) {
            Poll::Ready(Chunk::Item(x)) => push_any(&mut acc, x.bind(py), policy)?,
            Poll::Ready(Chunk::Error(e)) => return Err(e.raise(py)),
            Poll::Ended => return acc.finish(py),
            Poll::Pending => {
                refuse_inside_event_loop(
                    py,
                    "concat_message_stream()",
                    "`await aconcat_message_stream(reader)`",
                )?;
                block_on(py, |w| reader.subscribe(kind, w), None)?;
            }
        }
    }
}
