//! The channel's event-loop glue: asyncio receivers parked in the channel, and the wakeups
//! that resolve their futures once an item (or the end) arrives.

use std::thread::{self, ThreadId};

use pyo3::exceptions::PyException;
use pyo3::intern;
use pyo3::prelude::*;

use super::Core;
use crate::channel::Wakeups;
use crate::py::util::{invalid_state_error, resolver, wakes_directly};

/// A parked asyncio receiver: the future to resolve and the loop it belongs to.
pub struct AsyncWaiter {
    pub fut: Py<PyAny>,
    pub event_loop: Py<PyAny>,
    pub thread: ThreadId,
}

/// Resolves the futures of woken async receivers, outside the channel lock.
///
/// On the waiter's own thread, or wherever its loop is the running one, the future is resolved
/// directly (no syscall); elsewhere the wakeup goes through `loop.call_soon_threadsafe`. (A
/// loop can move between threads: Temporal runs each turn of a workflow's loop on a thread of
/// a pool, and that loop has no `call_soon_threadsafe`.) A wakeup that cannot be delivered (the
/// waiter's loop is closed, or anything at all is raised on the way) is passed to the next
/// parked receiver, so no item is stranded. Errors of a waiter's loop are not the sender's
/// and are not reported; an exception that is not an `Exception` (KeyboardInterrupt,
/// SystemExit) is raised once every wakeup has been passed on.
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
    let mut interrupt: Option<PyErr> = None;
    while let Some(w) = pending.pop() {
        if let Err(err) = wake(py, &w, me) {
            pending.extend(core.pass_on());
            if interrupt.is_none() && !err.is_instance_of::<PyException>(py) {
                interrupt = Some(err);
            }
        }
    }
    interrupt.map_or(Ok(()), Err)
}

/// Delivers one wakeup. Ok also when the future was already done: it was cancelled, and its
/// receiver passes the wakeup on itself when the cancellation reaches it (`Recv::withdraw`).
fn wake(py: Python<'_>, w: &AsyncWaiter, me: ThreadId) -> PyResult<()> {
    let fut = w.fut.bind(py);
    if !wakes_directly(py, w.event_loop.bind(py), w.thread == me)? {
        return w
            .event_loop
            .bind(py)
            .call_method1(intern!(py, "call_soon_threadsafe"), (resolver(py), fut))
            .map(drop);
    }
    // One call instead of done() first. With its loop closed, set_result marks the future
    // done and then fails to schedule the task: that is a failed delivery, not a done future.
    match fut.call_method1(intern!(py, "set_result"), (py.None(),)) {
        Err(err) if err.is_instance(py, invalid_state_error(py)?) => Ok(()),
        done => done.map(drop),
    }
}
