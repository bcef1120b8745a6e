//! `StreamReader`/`StreamWriter` and the stream combinators, over [`crate::stream`].
//!
//! A reader is a tree of [`Kind`]s (pipe, list, convert, merge, copy child) that all poll
//! without blocking and subscribe a one-shot waker. Blocking `recv` waits on a thread waker
//! with the interpreter released, in slices so Ctrl-C works; the asyncio path
//! (`rillet.schema`) parks a future through `_subscribe`. Wakers are fired only after every
//! lock is released, and Python (a convert function) is only called without locks held.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::{self, ThreadId};
use std::time::Instant;

use parking_lot::Mutex;
use pyo3::exceptions::{PyRuntimeError, PyTimeoutError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::PyDict;

use crate::concat::{Accumulator, UsagePolicy};
use crate::py::channel::{deadline_after, empty, resolve_future, resolver, wait_slice};
use crate::py::concat::{push_chunk, MessageAccumulator};
use crate::py::errors::{ChannelClosed, StreamEOF};
use crate::py::event_loop::refuse_inside_event_loop;
use crate::py::message::Message;
use crate::stream::{Chunk, Pipe, Poll, SendError, Tee, TeeWait, Waker};

/// A parked asyncio receiver or sender.
pub struct AsyncWake {
    fut: Py<PyAny>,
    event_loop: Py<PyAny>,
    thread: ThreadId,
}

type PyChunk = Chunk<Py<PyAny>, Py<PyAny>>;
type PyPoll = Poll<Py<PyAny>, Py<PyAny>>;
type PipeCore = Pipe<Py<PyAny>, Py<PyAny>, AsyncWake>;
type W = Arc<Waker<AsyncWake>>;

/// Fires wakers outside every lock: same-thread futures directly, others through their loop.
fn deliver(py: Python<'_>, wakeups: Vec<W>) {
    if wakeups.is_empty() {
        return;
    }
    let me = thread::current().id();
    for w in wakeups {
        let Some(a) = w.fire() else { continue };
        let fut = a.fut.bind(py);
        if a.thread == me {
            resolve_future(fut);
        } else {
            // A closed loop cannot take the wakeup; its receiver is gone anyway.
            let _ = a.event_loop.bind(py).call_method1(
                pyo3::intern!(py, "call_soon_threadsafe"),
                (resolver(py), fut),
            );
        }
    }
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

fn clone_chunk(py: Python<'_>, c: &PyChunk) -> PyChunk {
    match c {
        Chunk::Item(x) => Chunk::Item(x.clone_ref(py)),
        Chunk::Error(e) => Chunk::Error(e.clone_ref(py)),
    }
}

fn eof() -> PyErr {
    StreamEOF::new_err("end of stream")
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
    #[pyo3(get)]
    name: String,
}

#[pymethods]
impl SourceEOF {
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

struct TeeShared {
    tee: Tee<PyChunk, AsyncWake>,
    source: Arc<Kind>,
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
        shared: Arc<TeeShared>,
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
            Kind::Copy { shared, child } => poll_copy(py, shared, *child),
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
            Kind::Copy { shared, child } => match shared.tee.subscribe(*child, w) {
                TeeWait::Retry => false,
                TeeWait::PullInProgress => true,
                TeeWait::SourceIdle => shared.source.subscribe(w),
            },
        }
    }

    /// The reader's close: tells the writer to stop and drops what is buffered. Idempotent.
    fn close(&self, py: Python<'_>) {
        match self {
            Kind::Pipe(pipe) => {
                let (dropped, wakeups) = pipe.close_reader();
                drop(dropped);
                deliver(py, wakeups);
            }
            Kind::List { items, pos } => pos.store(items.len(), Ordering::Release),
            Kind::Convert { inner, .. } => inner.close(py),
            Kind::Merge { sources, .. } => sources.iter().for_each(|s| s.kind.close(py)),
            Kind::Copy { shared, child } => {
                if shared.tee.close_child(*child) {
                    shared.source.close(py);
                }
            }
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
                Some(f) => match f.call1(py, (e,)) {
                    Ok(r) if r.is_none(py) => continue, // the mapper dropped the error
                    Ok(r) => return Poll::Ready(Chunk::Error(r)),
                    Err(err) => return Poll::Ready(Chunk::Error(err.into_value(py).into_any())),
                },
            },
            other => return other,
        };
        match out {
            Ok(v) if v.is(no_value(py)) => continue,
            Ok(v) => return Poll::Ready(Chunk::Item(v)),
            Err(err) => return Poll::Ready(Chunk::Error(err.into_value(py).into_any())),
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
                    return Poll::Ready(
                        marker.map_or_else(
                            |e| Chunk::Error(e.into_value(py).into_any()),
                            Chunk::Item,
                        ),
                    );
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

fn poll_copy(py: Python<'_>, shared: &TeeShared, child: usize) -> PyPoll {
    let (poll, wakeups) =
        shared
            .tee
            .poll_child(child, |c| clone_chunk(py, c), || shared.source.poll(py));
    deliver(py, wakeups);
    poll
}

// ---------------------------------------------------------------------------------------
// StreamReader

/// The receiving end of a stream. Iterate it with `for` or `async for`; `recv()` and
/// `await arecv()` raise StreamEOF at the end (every time), and raise error items.
///
/// A reader has one consumer; use `copy(n)` to fan out. Dropping an unfinished reader
/// closes it, so its writer learns to stop.
#[pyclass(frozen, module = "rillet", name = "StreamReader")]
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

    /// Moves the stream out of this reader (into a copy, convert or merge).
    fn take(&self) -> PyResult<Arc<Kind>> {
        self.kind.lock().take().ok_or_else(moved_error)
    }

    fn recv_until(&self, py: Python<'_>, deadline: Option<Instant>) -> PyResult<Py<PyAny>> {
        let kind = self.kind()?;
        loop {
            match kind.poll(py) {
                Poll::Ready(Chunk::Item(x)) => return Ok(x),
                Poll::Ready(Chunk::Error(e)) => return Err(PyErr::from_value(e.into_bound(py))),
                Poll::Ended => return Err(eof()),
                Poll::Pending => {
                    refuse_inside_event_loop(
                        py,
                        "StreamReader.recv()",
                        "`await reader.arecv()` or `async for`",
                    )?;
                    if !block_on(py, |w| kind.subscribe(w), deadline)? {
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

/// The asyncio halves live in Python (`rillet.schema`): they await futures.
fn async_helper<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyAny>> {
    let module =
        ASYNC_HELPERS.get_or_try_init(py, || py.import("rillet.schema").map(Bound::unbind))?;
    module.bind(py).getattr(name)
}

#[pymethods]
impl StreamReader {
    /// The next item, waiting up to `timeout` seconds (forever if None). Raises StreamEOF at
    /// the end, an error item's exception for that item, TimeoutError when the time is up.
    #[pyo3(signature = (timeout=None))]
    fn recv(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Py<PyAny>> {
        self.recv_until(py, deadline_after(timeout)?)
    }

    /// `await reader.arecv()`: the next item, without blocking the event loop.
    fn arecv<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        async_helper(slf.py(), "_arecv")?.call1((slf,))
    }

    /// The next item if one is ready, else `rillet.EMPTY`. Raises like `recv`.
    fn _poll(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        match self.kind()?.poll(py) {
            Poll::Ready(Chunk::Item(x)) => Ok(x),
            Poll::Ready(Chunk::Error(e)) => Err(PyErr::from_value(e.into_bound(py))),
            Poll::Ended => Err(eof()),
            Poll::Pending => Ok(empty(py).clone_ref(py).into_any()),
        }
    }

    /// Resolves `fut` (of `event_loop`) when polling may progress. False: poll again now.
    fn _subscribe(&self, fut: Py<PyAny>, event_loop: Py<PyAny>) -> PyResult<bool> {
        Ok(self.kind()?.subscribe(&async_waker(fut, event_loop)))
    }

    /// Pushes every ready chunk into `acc`; True at the end of the stream, False when it
    /// has to wait. Raises error items.
    fn _drain_into(&self, py: Python<'_>, acc: &MessageAccumulator) -> PyResult<bool> {
        let kind = self.kind()?;
        loop {
            match kind.poll(py) {
                Poll::Ready(Chunk::Item(x)) => acc.push(x.bind(py))?,
                Poll::Ready(Chunk::Error(e)) => return Err(PyErr::from_value(e.into_bound(py))),
                Poll::Ended => return Ok(true),
                Poll::Pending => return Ok(false),
            }
        }
    }

    /// Stops reading: the writer's `send` returns True from now on, buffered items are
    /// dropped and later receives raise StreamEOF. Idempotent.
    fn close(&self, py: Python<'_>) {
        let kind = self.kind.lock().clone();
        if let Some(kind) = kind {
            kind.close(py);
        }
    }

    /// `n` independent readers that each see every item (errors too) of this stream.
    ///
    /// Buffering between them is unbounded; the source is closed once all of them are.
    /// This reader must not be used afterwards. `copy(1)` returns `[self]`.
    fn copy(slf: &Bound<'_, Self>, n: usize) -> PyResult<Vec<Py<StreamReader>>> {
        let py = slf.py();
        if n == 0 {
            return Err(PyValueError::new_err("copy(n) needs n >= 1"));
        }
        if n == 1 {
            return Ok(vec![slf.clone().unbind()]);
        }
        let shared = Arc::new(TeeShared {
            tee: Tee::new(n),
            source: slf.get().take()?,
        });
        (0..n)
            .map(|child| {
                Py::new(
                    py,
                    StreamReader::from_kind(Kind::Copy {
                        shared: shared.clone(),
                        child,
                    }),
                )
            })
            .collect()
    }

    fn __iter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        match self.recv_until(py, None) {
            Ok(x) => Ok(Some(x)),
            Err(e) if e.is_instance_of::<StreamEOF>(py) => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn __aiter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __anext__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        async_helper(slf.py(), "_anext")?.call1((slf,))
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

    fn __exit__(&self, py: Python<'_>, _t: Py<PyAny>, _v: Py<PyAny>, _tb: Py<PyAny>) {
        self.close(py);
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

/// The sending end of a stream made by `pipe()`.
///
/// `send` returns True once the reader has closed (stop producing). On an unbounded pipe it
/// never blocks; on a bounded one it waits for space (`asend` awaits it). Dropping the
/// writer closes the stream.
#[pyclass(frozen, module = "rillet", name = "StreamWriter")]
pub struct StreamWriter {
    pipe: Arc<PipeCore>,
}

impl StreamWriter {
    /// Enqueues, waiting for space on a full bounded pipe; true if the reader has closed.
    fn send_chunk(
        &self,
        py: Python<'_>,
        mut chunk: PyChunk,
        deadline: Option<Instant>,
    ) -> PyResult<bool> {
        loop {
            match self.try_send_chunk(py, chunk)? {
                Ok(closed) => return Ok(closed),
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

    /// Ok(Ok(reader_closed)) once handled, Ok(Err(chunk)) when the pipe is full.
    fn try_send_chunk(&self, py: Python<'_>, chunk: PyChunk) -> PyResult<Result<bool, PyChunk>> {
        match self.pipe.try_send(chunk) {
            Ok(wakeups) => {
                deliver(py, wakeups);
                Ok(Ok(false))
            }
            Err(SendError::ReaderClosed(_)) => Ok(Ok(true)),
            Err(SendError::Full(chunk)) => Ok(Err(chunk)),
            Err(SendError::WriterClosed(_)) => Err(ChannelClosed::new_err(
                "cannot send: this StreamWriter has been closed",
            )),
        }
    }
}

fn error_chunk(err: &Bound<'_, PyAny>) -> PyResult<PyChunk> {
    let py = err.py();
    if err.is_instance(&py.get_type::<pyo3::exceptions::PyBaseException>())? {
        return Ok(Chunk::Error(err.clone().unbind()));
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
    /// Sends `item`. Returns True if the reader has closed (the item is dropped: stop).
    #[pyo3(signature = (item, timeout=None))]
    fn send(&self, py: Python<'_>, item: Py<PyAny>, timeout: Option<f64>) -> PyResult<bool> {
        self.send_chunk(py, Chunk::Item(item), deadline_after(timeout)?)
    }

    /// `await writer.asend(item)`: like `send`, waiting for space without blocking the loop.
    fn asend<'py>(slf: &Bound<'py, Self>, item: Py<PyAny>) -> PyResult<Bound<'py, PyAny>> {
        async_helper(slf.py(), "_asend")?.call1((slf, item, false))
    }

    /// Sends an error item: the reader raises `error` from one receive, then goes on.
    #[pyo3(signature = (error, timeout=None))]
    fn send_error(
        &self,
        py: Python<'_>,
        error: &Bound<'_, PyAny>,
        timeout: Option<f64>,
    ) -> PyResult<bool> {
        self.send_chunk(py, error_chunk(error)?, deadline_after(timeout)?)
    }

    /// `await writer.asend_error(exc)`.
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
            Ok(closed) => pyo3::types::PyBool::new(py, closed)
                .to_owned()
                .into_any()
                .unbind(),
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

    /// True once the reader has closed (sends are dropped).
    #[getter]
    fn reader_closed(&self) -> bool {
        self.pipe.is_reader_closed()
    }

    #[getter]
    fn closed(&self) -> bool {
        self.pipe.is_writer_closed()
    }

    fn __enter__(slf: Bound<'_, Self>) -> Bound<'_, Self> {
        slf
    }

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

/// A connected (reader, writer). Unbounded by default: `send` never blocks, which is what a
/// producer on an event loop needs. With `capacity`, `send` waits while that many are queued.
#[pyfunction]
#[pyo3(signature = (capacity=None))]
pub fn pipe(
    py: Python<'_>,
    capacity: Option<usize>,
) -> PyResult<(Py<StreamReader>, Py<StreamWriter>)> {
    if capacity == Some(0) {
        return Err(PyValueError::new_err(
            "capacity must be None (unbounded) or at least 1",
        ));
    }
    let core = Arc::new(PipeCore::new(capacity));
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

/// A reader of `fn(item)` for each item of `reader`, applied lazily on receive.
///
/// `fn` returning `NO_VALUE` skips the item; an exception it raises is raised from that
/// receive (the stream goes on). Error items pass through `on_error(exc)` if given: it
/// returns None to drop the error, or the exception to raise instead.
#[pyfunction]
#[pyo3(signature = (reader, func, *, on_error=None))]
pub fn convert_stream(
    reader: &Bound<'_, StreamReader>,
    func: Py<PyAny>,
    on_error: Option<Py<PyAny>>,
) -> PyResult<StreamReader> {
    let inner = reader.get().take()?;
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
        match reader.get().take() {
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
#[pyfunction]
#[pyo3(signature = (reader, *, usage="max"))]
pub fn concat_message_stream(
    py: Python<'_>,
    reader: &Bound<'_, StreamReader>,
    usage: &str,
) -> PyResult<Message> {
    let policy = UsagePolicy::parse(usage).ok_or_else(|| {
        PyValueError::new_err(format!(
            "usage must be 'max', 'sum' or 'last', not {usage:?}"
        ))
    })?;
    let kind = reader.get().kind()?;
    let result = drain(py, &kind, Accumulator::new(policy));
    kind.close(py);
    result.map(Message::wrap)
}

fn drain(py: Python<'_>, kind: &Kind, mut acc: Accumulator) -> PyResult<crate::message::Message> {
    loop {
        match kind.poll(py) {
            Poll::Ready(Chunk::Item(x)) => push_chunk(&mut acc, x.bind(py))?,
            Poll::Ready(Chunk::Error(e)) => return Err(PyErr::from_value(e.into_bound(py))),
            Poll::Ended => return Ok(acc.finish()),
            Poll::Pending => {
                refuse_inside_event_loop(
                    py,
                    "concat_message_stream()",
                    "`await aconcat_message_stream(reader)`",
                )?;
                block_on(py, |w| kind.subscribe(w), None)?;
            }
        }
    }
}
