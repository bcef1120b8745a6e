//! The worker pool's job queue and the `def`-tool hand-off (`rillet._core.workers`), native.
//!
//! A [`WorkQueue`] holds the jobs of one `WorkerPool`: a worker parks on the queue's
//! condition variable with the GIL released until a job comes ([`WorkQueue::take`]). A
//! [`Handoff`] is one call whose caller (the event loop's thread) waits for the result itself:
//! the caller posts the job and waits, GIL released, in one native call ([`WorkQueue::call`]);
//! the worker stores the outcome, wakes the caller and parks for its next job in one native
//! call too ([`WorkQueue::hand`]), so that both wake-ups find the GIL free (each side releases
//! it before it wakes the other). A caller that stopped waiting (its wait ran out, a signal) is
//! told so under the hand-off's lock, and the worker's loop then delivers the outcome through
//! the caller's loop (`call_soon_threadsafe`), as every other job's result comes.
//!
//! No Python code is called from here but the future's `cancelled()`: the worker's loop, the
//! function it runs and the start of a worker thread are Python (`rillet._core.workers`),
//! because CPython ends a daemon thread that wants the GIL back while the interpreter exits by
//! unwinding its stack (pthread_exit), which aborts the process when native frames lie under.
//!
//! Locks: no Python code runs and no Python object is dropped while a lock is held. Python
//! objects are only moved in or out under a lock (a move touches no reference count), and
//! the values taken out are dropped after the guard, with the GIL held.

use std::collections::VecDeque;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use pyo3::exceptions::PyValueError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use pyo3::{PyTraverseError, PyVisit};

use crate::py::util::SIGNAL_CHECK_INTERVAL;

/// What a worker runs: a waited-for call, a call whose result goes to an asyncio future
/// through its loop, or a call nobody awaits.
enum Job {
    Call(Py<Handoff>),
    Future {
        event_loop: Py<PyAny>,
        fut: Py<PyAny>,
        ctx: Py<PyAny>,
        func: Py<PyAny>,
        args: Py<PyTuple>,
    },
    Detached {
        ctx: Py<PyAny>,
        func: Py<PyAny>,
        args: Py<PyTuple>,
    },
}

/// The queue's shared state: pending jobs and the worker accounting of `WorkerPool.submit`.
struct Pending<J> {
    jobs: VecDeque<J>,
    /// Workers that finished a job and will take the next one.
    idle: usize,
    /// Worker threads started.
    threads: usize,
}

/// The pure queue logic, generic over the job type so that `cargo test` can drive it without
/// an interpreter.
struct Queue<J> {
    state: Mutex<Pending<J>>,
    ready: Condvar,
    max_workers: usize,
}

impl<J> Queue<J> {
    fn new(max_workers: usize) -> Self {
        Queue {
            state: Mutex::new(Pending {
                jobs: VecDeque::new(),
                idle: 0,
                threads: 0,
            }),
            ready: Condvar::new(),
            max_workers,
        }
    }

    /// Queues `job` and wakes a parked worker; returns the number of the worker thread to
    /// start when no worker is idle and the bound allows one more.
    fn put(&self, job: J) -> Option<usize> {
        let mut st = self.state.lock();
        st.jobs.push_back(job);
        let start = if st.idle > 0 {
            st.idle -= 1;
            None
        } else if st.threads < self.max_workers {
            st.threads += 1;
            Some(st.threads)
        } else {
            None
        };
        drop(st);
        self.ready.notify_one();
        start
    }

    /// Parks until a job is queued and takes it.
    fn take(&self) -> J {
        let mut st = self.state.lock();
        loop {
            if let Some(job) = st.jobs.pop_front() {
                return job;
            }
            self.ready.wait(&mut st);
        }
    }

    /// The worker is done with its job and will take the next one.
    fn idle(&self) {
        self.state.lock().idle += 1;
    }

    fn threads(&self) -> usize {
        self.state.lock().threads
    }
}

/// One waited-for call's meeting point (the caller's side of it).
struct Meeting<T> {
    /// The caller still waits for the outcome (cleared once, under the lock, when it stops).
    waiting: bool,
    /// The worker finished the call (the outcome is in `outcome` until taken).
    finished: bool,
    /// The worker finished while the caller still waited: the outcome is the caller's.
    met: bool,
    /// The caller gave up before the call started (a signal during its wait): not run.
    skip: bool,
    outcome: Option<T>,
    /// When the worker started the function.
    started: Option<Instant>,
    /// Seconds the function ran on its worker.
    took: f64,
}

/// How a worker's hand-back went.
enum Handed {
    /// The caller was waiting: it has the outcome and is woken.
    Waited,
    /// The caller stopped waiting: the outcome is stored, to be delivered through the loop.
    Late,
}

struct Slot<T> {
    meeting: Mutex<Meeting<T>>,
    done: Condvar,
}

impl<T> Slot<T> {
    fn new(waiting: bool) -> Self {
        Slot {
            meeting: Mutex::new(Meeting {
                waiting,
                finished: false,
                met: false,
                skip: false,
                outcome: None,
                started: None,
                took: 0.0,
            }),
            done: Condvar::new(),
        }
    }

    /// The worker's side: stores the outcome and wakes the caller if it still waits.
    #[cfg(test)]
    fn hand(&self, outcome: T, took: f64) -> Handed {
        {
            let mut m = self.meeting.lock();
            m.took = took;
            m.outcome = Some(outcome);
        }
        self.finish()
    }

    /// The worker's side, the function having returned: stores its outcome and how long it
    /// ran (the outcome the caller abandoned meanwhile is handed back, to be dropped).
    fn keep(&self, outcome: T) -> Option<T> {
        let mut m = self.meeting.lock();
        if let Some(started) = m.started {
            m.took = started.elapsed().as_secs_f64();
        }
        if m.skip {
            return Some(outcome);
        }
        m.outcome = Some(outcome);
        None
    }

    /// The worker's side, the outcome kept: wakes the caller if it still waits.
    fn finish(&self) -> Handed {
        let mut m = self.meeting.lock();
        m.finished = true;
        if m.waiting {
            m.met = true;
            drop(m);
            self.done.notify_one();
            Handed::Waited
        } else {
            Handed::Late
        }
    }

    /// The caller's side: waits until `until` for the outcome; true when it is in. When
    /// `give_up`, a wait that runs out stops waiting (under the lock: from then on the worker
    /// delivers late).
    fn wait(&self, until: Instant, give_up: bool) -> bool {
        let mut m = self.meeting.lock();
        while !m.finished {
            if self.done.wait_until(&mut m, until).timed_out() {
                if !m.finished && give_up {
                    m.waiting = false;
                }
                return m.finished;
            }
        }
        true
    }

    /// The caller stops waiting for good (a signal): a call not started is not run. Returns
    /// the outcome if it came in meanwhile (for the caller to drop, GIL held).
    fn abandon(&self) -> Option<T> {
        let mut m = self.meeting.lock();
        m.waiting = false;
        m.skip = true;
        m.outcome.take()
    }
}

type Outcome = (Py<PyAny>, bool);

/// A call's (ctx, func, args).
type CallJob = (Py<PyAny>, Py<PyAny>, Py<PyTuple>);

/// One `WorkerPool.run_waiting` call: the job, and where its outcome meets its caller.
#[pyclass(frozen, module = "rillet._native")]
pub struct Handoff {
    slot: Slot<Outcome>,
    event_loop: Py<PyAny>,
    /// (ctx, func, args), taken by the worker that runs the call.
    job: Mutex<Option<CallJob>>,
    /// The future the caller awaits once it stopped waiting (set by the caller, on its loop).
    fut: Mutex<Option<Py<PyAny>>>,
    /// The number of the worker thread the caller must start for it (0: none).
    spawn: std::sync::atomic::AtomicUsize,
}

#[pymethods]
impl Handoff {
    /// Whether the outcome came back to the caller while it waited.
    #[getter]
    fn arrived(&self) -> bool {
        self.slot.meeting.lock().met
    }

    /// The number of the worker thread the caller must start for this call (0: none).
    #[getter]
    fn spawn(&self) -> usize {
        self.spawn.load(Ordering::Relaxed)
    }

    /// The caller's event loop.
    #[getter]
    fn event_loop(&self, py: Python<'_>) -> Py<PyAny> {
        self.event_loop.clone_ref(py)
    }

    /// Whether the worker finished the call.
    #[getter]
    fn finished(&self) -> bool {
        self.slot.meeting.lock().finished
    }

    /// Seconds the function ran on its worker (0.0 until it finished).
    #[getter]
    fn took(&self) -> f64 {
        self.slot.meeting.lock().took
    }

    /// The future awaited for a late outcome, once the caller set one.
    #[getter]
    fn fut(&self, py: Python<'_>) -> Option<Py<PyAny>> {
        self.fut.lock().as_ref().map(|f| f.clone_ref(py))
    }

    #[setter]
    fn set_fut(&self, fut: Option<Py<PyAny>>) {
        let old = std::mem::replace(&mut *self.fut.lock(), fut);
        drop(old); // after the guard: the GIL is held here
    }

    fn __traverse__(&self, visit: PyVisit<'_>) -> Result<(), PyTraverseError> {
        // Blocking locks: the collector traverses twice and both passes must see the same
        // references (a try_lock that failed in one pass only would make an object reachable
        // through this hand-off look unreachable). No holder of these locks waits for the
        // GIL or runs Python code, so the wait is a moment.
        visit.call(&self.event_loop)?;
        visit.call(self.fut.lock().as_ref())?;
        if let Some((ctx, func, args)) = self.job.lock().as_ref() {
            visit.call(ctx)?;
            visit.call(func)?;
            visit.call(args)?;
        }
        if let Some((value, _)) = self.slot.meeting.lock().outcome.as_ref() {
            visit.call(value)?;
        }
        Ok(())
    }

    fn __clear__(&self) {
        // a cycle through a hand-off goes through its future, its job or its outcome
        let fut = self.fut.lock().take();
        let job = self.job.lock().take();
        let outcome = self.slot.meeting.lock().outcome.take();
        drop((fut, job, outcome)); // after the locks: finalizers may run
    }

    /// The worker's start: `(ctx, func, args)` to run, timed from now; None when the call is
    /// not to run (its caller gave up before it started, or the task awaiting it was
    /// cancelled).
    fn start(&self, py: Python<'_>) -> PyResult<Option<CallJob>> {
        let skip = self.slot.meeting.lock().skip;
        let fut = self.fut.lock().as_ref().map(|f| f.clone_ref(py));
        let cancelled = match fut {
            Some(fut) => fut
                .bind(py)
                .call_method0(intern!(py, "cancelled"))?
                .is_truthy()?,
            None => false,
        };
        let job = self.job.lock().take();
        if skip || cancelled {
            drop(job); // after the lock, GIL held
            return Ok(None);
        }
        self.slot.meeting.lock().started = Some(Instant::now());
        Ok(job)
    }

    /// The worker's outcome of the call: its result, or the exception it raised (`exc`).
    #[pyo3(signature = (result, exc))]
    fn keep(&self, result: Py<PyAny>, exc: Option<Py<PyAny>>) {
        let outcome = match exc {
            Some(exc) => (exc, true),
            None => (result, false),
        };
        let dropped = self.slot.keep(outcome);
        drop(dropped); // after the lock, GIL held
    }

    /// Takes the outcome: `(result, None)` or `(None, exception)`; `(None, None)` once taken.
    fn outcome(&self, py: Python<'_>) -> (Py<PyAny>, Option<Py<PyAny>>) {
        let taken = self.slot.meeting.lock().outcome.take();
        match taken {
            Some((value, false)) => (value, None),
            Some((exc, true)) => (py.None(), Some(exc)),
            None => (py.None(), None),
        }
    }
}

/// A pool's job queue and its workers' loop (see the module's documentation).
#[pyclass(frozen, module = "rillet._native")]
pub struct WorkQueue {
    queue: Queue<Job>,
}

impl WorkQueue {
    /// The caller's wait for a posted call: until `until` (None: for ever), GIL released, in
    /// slices that check for Ctrl-C. True when the outcome came in while it waited.
    fn wait_for(py: Python<'_>, call: &Handoff, until: Option<Instant>) -> PyResult<bool> {
        loop {
            let arrived = py.detach(|| {
                let (end, last) = slice_end(Instant::now(), until);
                call.slot.wait(end, last)
            });
            if arrived || !call.slot.meeting.lock().waiting {
                return Ok(arrived);
            }
            if let Err(err) = py.check_signals() {
                let dropped = call.slot.abandon();
                drop(dropped); // GIL held, no lock
                return Err(err);
            }
        }
    }
}

/// The end of the next slice of a wait until `until`, and whether it is the last.
fn slice_end(now: Instant, until: Option<Instant>) -> (Instant, bool) {
    let next = now + SIGNAL_CHECK_INTERVAL;
    match until {
        Some(u) if u <= next => (u, true),
        _ => (next, false),
    }
}

fn deadline(wait: f64) -> Option<Instant> {
    Duration::try_from_secs_f64(wait)
        .ok()
        .and_then(|d| Instant::now().checked_add(d))
}

/// A job as the worker's Python loop sees it: a [`Handoff`], or a tuple
/// `(loop, future, ctx, func, args)` (loop and future None for a detached job).
fn job_to_py(py: Python<'_>, job: Job) -> PyResult<Py<PyAny>> {
    Ok(match job {
        Job::Call(h) => h.into_any(),
        Job::Future {
            event_loop,
            fut,
            ctx,
            func,
            args,
        } => (event_loop, fut, ctx, func, args)
            .into_pyobject(py)?
            .into_any()
            .unbind(),
        Job::Detached { ctx, func, args } => (py.None(), py.None(), ctx, func, args)
            .into_pyobject(py)?
            .into_any()
            .unbind(),
    })
}

#[pymethods]
impl WorkQueue {
    #[new]
    fn new(max_workers: usize) -> PyResult<Self> {
        if max_workers < 1 {
            return Err(PyValueError::new_err(format!(
                "max_workers must be at least 1, got {max_workers}"
            )));
        }
        Ok(WorkQueue {
            queue: Queue::new(max_workers),
        })
    }

    /// How many worker threads this queue has started.
    #[getter]
    fn threads(&self) -> usize {
        self.queue.threads()
    }

    /// Queues `ctx.run(func, *args)`, its outcome to go to `fut` through `event_loop`.
    /// Returns the number of the worker thread the caller must start (none idle), or None.
    fn put_future(
        &self,
        event_loop: Py<PyAny>,
        fut: Py<PyAny>,
        ctx: Py<PyAny>,
        func: Py<PyAny>,
        args: Py<PyTuple>,
    ) -> Option<usize> {
        let job = Job::Future {
            event_loop,
            fut,
            ctx,
            func,
            args,
        };
        self.queue.put(job)
    }

    /// Queues `ctx.run(func, *args)`, awaited by nobody; returns what `put_future` does.
    fn put_detached(&self, ctx: Py<PyAny>, func: Py<PyAny>, args: Py<PyTuple>) -> Option<usize> {
        self.queue.put(Job::Detached { ctx, func, args })
    }

    /// Posts `ctx.run(func, *args)` and waits up to `wait` seconds for its outcome with the
    /// GIL released, in one call. Returns the call's [`Handoff`]: `arrived` says whether the
    /// outcome came in time; if not, the caller has stopped waiting and the worker's loop will
    /// deliver it through `event_loop` once it finishes. When a worker thread must be started
    /// first (`spawn`, its number), nothing was waited for: the caller starts it, then `wait`s.
    /// Ctrl-C during the wait raises KeyboardInterrupt (checked every 50 ms of a longer wait)
    /// and leaves the call unclaimed.
    fn call(
        &self,
        py: Python<'_>,
        event_loop: Py<PyAny>,
        ctx: Py<PyAny>,
        func: Py<PyAny>,
        args: Py<PyTuple>,
        wait: f64,
    ) -> PyResult<Py<Handoff>> {
        let waiting = wait > 0.0;
        let handoff = Handoff {
            slot: Slot::new(waiting),
            event_loop,
            job: Mutex::new(Some((ctx, func, args))),
            fut: Mutex::new(None),
            spawn: std::sync::atomic::AtomicUsize::new(0),
        };
        let h = Py::new(py, handoff)?;
        let job = Job::Call(h.clone_ref(py));
        let call = h.get();
        if !waiting {
            if let Some(n) = self.queue.put(job) {
                call.spawn.store(n, Ordering::Relaxed);
            }
            return Ok(h);
        }
        let until = deadline(wait);
        // The job is posted with the GIL released, so that the woken worker finds it free.
        let posted = py.detach(|| match self.queue.put(job) {
            None => {
                let (end, last) = slice_end(Instant::now(), until);
                Ok(call.slot.wait(end, last))
            }
            Some(n) => Err(n),
        });
        match posted {
            Ok(true) => {}
            Ok(false) => {
                if call.slot.meeting.lock().waiting {
                    Self::wait_for(py, call, until)?;
                }
            }
            Err(n) => call.spawn.store(n, Ordering::Relaxed),
        }
        Ok(h)
    }

    /// The caller's wait for a call posted by `call` whose worker thread it had to start:
    /// as `call`'s wait, `wait` seconds from now.
    fn wait(&self, py: Python<'_>, h: Py<Handoff>, wait: f64) -> PyResult<()> {
        let call = h.get();
        if wait > 0.0 {
            Self::wait_for(py, call, deadline(wait))?;
        } else {
            call.slot.wait(Instant::now(), true);
        }
        Ok(())
    }

    /// A worker's wait for its next job (GIL released): a [`Handoff`] or a job tuple.
    fn take(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let job = py.detach(|| self.queue.take());
        job_to_py(py, job)
    }

    /// The worker is done with its job (other than a hand-off) and will take the next one.
    fn idle(&self) {
        self.queue.idle();
    }

    /// The worker's side of a hand-off whose outcome `h.keep` stored: counts the worker
    /// idle, wakes the caller if it still waits (GIL released first, so that it finds it
    /// free) and parks for the next job in the same release, returning it as `take` does.
    /// None: the caller stopped waiting, the worker delivers the outcome through its loop.
    fn hand(&self, py: Python<'_>, h: Py<Handoff>) -> PyResult<Option<Py<PyAny>>> {
        // idle first: the caller may submit its next call as soon as it has this outcome
        self.queue.idle();
        let call = h.get();
        let next = py.detach(|| match call.slot.finish() {
            Handed::Waited => Some(self.queue.take()),
            Handed::Late => None,
        });
        next.map(|job| job_to_py(py, job)).transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::thread;

    #[test]
    fn put_starts_a_worker_only_when_none_is_idle_and_the_bound_allows() {
        let q: Queue<u32> = Queue::new(2);
        assert_eq!(q.put(1), Some(1));
        assert_eq!(q.put(2), Some(2));
        assert_eq!(q.put(3), None); // at the bound: waits in the queue
        q.idle();
        assert_eq!(q.put(4), None); // the idle worker takes it
        assert_eq!(q.threads(), 2);
        assert_eq!((q.take(), q.take(), q.take(), q.take()), (1, 2, 3, 4));
    }

    #[test]
    fn a_waiting_caller_gets_the_outcome_and_a_late_one_leaves_it_stored() {
        let slot: Arc<Slot<u32>> = Arc::new(Slot::new(true));
        let worker = {
            let slot = slot.clone();
            thread::spawn(move || slot.hand(7, 0.5))
        };
        assert!(slot.wait(Instant::now() + Duration::from_secs(10), true));
        assert!(matches!(worker.join().unwrap(), Handed::Waited));
        assert_eq!(slot.meeting.lock().outcome, Some(7));

        let slot: Slot<u32> = Slot::new(true);
        assert!(!slot.wait(Instant::now() + Duration::from_millis(1), true));
        assert!(!slot.meeting.lock().waiting); // gave up: the worker delivers late
        assert!(matches!(slot.hand(8, 0.0), Handed::Late));
        assert_eq!(slot.meeting.lock().outcome, Some(8));
    }

    #[test]
    fn a_slice_that_is_not_the_last_keeps_the_caller_waiting() {
        let slot: Slot<u32> = Slot::new(true);
        assert!(!slot.wait(Instant::now() + Duration::from_millis(1), false));
        assert!(slot.meeting.lock().waiting);
        assert!(matches!(slot.hand(1, 0.0), Handed::Waited));
        assert!(slot.wait(Instant::now(), true)); // finished: no wait at all
    }

    #[test]
    fn an_abandoned_call_is_skipped_and_returns_an_outcome_already_in() {
        let slot: Slot<u32> = Slot::new(true);
        assert_eq!(slot.abandon(), None);
        let m = slot.meeting.lock();
        assert!(m.skip && !m.waiting);
        drop(m);
        let slot: Slot<u32> = Slot::new(true);
        assert!(matches!(slot.hand(3, 0.0), Handed::Waited));
        assert_eq!(slot.abandon(), Some(3));
    }

    #[test]
    fn many_callers_and_workers_lose_and_duplicate_nothing() {
        // callers post (id, slot) pairs and wait briefly; workers hand each back once
        type Job = (u32, Arc<Slot<u32>>);
        let q: Arc<Queue<Option<Job>>> = Arc::new(Queue::new(4));
        let workers: Vec<_> = (0..4)
            .map(|_| {
                let q = q.clone();
                thread::spawn(move || {
                    let mut late = Vec::new();
                    while let Some((id, slot)) = q.take() {
                        if let Handed::Late = slot.hand(id, 0.0) {
                            late.push(id);
                        }
                        q.idle();
                    }
                    late
                })
            })
            .collect();
        let callers: Vec<_> = (0..8u32)
            .map(|c| {
                let q = q.clone();
                thread::spawn(move || {
                    let mut seen = Vec::new();
                    for i in 0..500 {
                        let id = c * 1000 + i;
                        let slot = Arc::new(Slot::new(true));
                        q.put(Some((id, slot.clone())));
                        let wait = Duration::from_micros(u64::from(i % 3) * 50);
                        if slot.wait(Instant::now() + wait, true) {
                            seen.push(slot.meeting.lock().outcome.take().unwrap());
                        }
                    }
                    seen
                })
            })
            .collect();
        let mut all: Vec<u32> = callers
            .into_iter()
            .flat_map(|c| c.join().unwrap())
            .collect();
        for _ in 0..4 {
            q.put(None);
        }
        for w in workers {
            all.extend(w.join().unwrap());
        }
        all.sort_unstable();
        let want: Vec<u32> = (0..8u32)
            .flat_map(|c| (0..500).map(move |i| c * 1000 + i))
            .collect();
        assert_eq!(all, want);
    }
}
