//! The pure-Rust core of rillet streams (Eino's `schema.StreamReader`/`StreamWriter`).
//!
//! A stream carries [`Chunk`]s: values, or error items that the reader raises from one
//! receive while the stream goes on. Every reader kind (pipe, list, convert, merge, copy)
//! offers the same two operations, which the binding composes:
//! * poll: take the next chunk if one is ready, without blocking;
//! * subscribe: register a one-shot [`Waker`] that fires when polling may make progress.
//!
//! Waking is "wake all, level-triggered": a stream has one consumer (or a few copy
//! children), so every registered waker fires and its owner simply polls again. A waker
//! that was abandoned (its receiver got an item another way, or was cancelled) firing
//! later is harmless. The consumer registers first and polls again afterwards, which closes
//! the lost-wakeup window without holding one lock across both.
//!
//! Thread wakers are completed here; async wakers carry a binding payload `A` (an asyncio
//! future and its loop) and are handed back to the binding to resolve outside every lock.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};

/// One stream element: a value or an error item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Chunk<T, E> {
    Item(T),
    Error(E),
}

/// The outcome of polling a reader.
#[derive(Debug, PartialEq, Eq)]
pub enum Poll<T, E> {
    Ready(Chunk<T, E>),
    Pending,
    Ended,
}

// ---------------------------------------------------------------------------------------
// Wakers

enum WakerKind<A> {
    Thread {
        woken: Mutex<bool>,
        cv: Condvar,
    },
    /// The payload is moved out when the waker fires, so a fired waker holds nothing of the
    /// binding's: dropping one (e.g. when a list prunes it under its lock) is always harmless.
    Async(Mutex<Option<A>>),
}

/// A one-shot wakeup for a blocked thread or a parked async receiver.
pub struct Waker<A> {
    fired: AtomicBool,
    kind: WakerKind<A>,
}

impl<A> Waker<A> {
    pub fn thread() -> Arc<Self> {
        Arc::new(Waker {
            fired: AtomicBool::new(false),
            kind: WakerKind::Thread {
                woken: Mutex::new(false),
                cv: Condvar::new(),
            },
        })
    }

    pub fn asynchronous(payload: A) -> Arc<Self> {
        Arc::new(Waker {
            fired: AtomicBool::new(false),
            kind: WakerKind::Async(Mutex::new(Some(payload))),
        })
    }

    pub fn has_fired(&self) -> bool {
        self.fired.load(Ordering::Acquire)
    }

    /// Fires once. A thread waker is woken here; an async one hands its payload over for the
    /// binding to resolve (`None` if it had already fired). Call it with no lock held: the
    /// payload is the caller's to drop.
    pub fn fire(&self) -> Option<A> {
        if self.fired.swap(true, Ordering::AcqRel) {
            return None;
        }
        match &self.kind {
            WakerKind::Thread { woken, cv } => {
                *woken.lock() = true;
                cv.notify_all();
                None
            }
            WakerKind::Async(payload) => payload.lock().take(),
        }
    }

    /// Waits up to `timeout` for a thread waker to fire; true if it has fired.
    /// Must be called without holding the Python interpreter.
    pub fn wait(&self, timeout: Duration) -> bool {
        let WakerKind::Thread { woken, cv } = &self.kind else {
            return self.has_fired();
        };
        let mut woken = woken.lock();
        if !*woken {
            cv.wait_for(&mut woken, timeout);
        }
        *woken
    }
}

/// Wakers registered on one stream; all of them fire on the next event.
pub struct WakerList<A> {
    wakers: Mutex<Vec<Arc<Waker<A>>>>,
}

impl<A> Default for WakerList<A> {
    fn default() -> Self {
        WakerList {
            wakers: Mutex::new(Vec::new()),
        }
    }
}

impl<A> WakerList<A> {
    /// Registers `waker`, dropping wakers that have already fired (they hold no payload).
    pub fn register(&self, waker: &Arc<Waker<A>>) {
        let mut wakers = self.wakers.lock();
        wakers.retain(|w| !w.has_fired());
        if !wakers.iter().any(|w| Arc::ptr_eq(w, waker)) {
            wakers.push(waker.clone());
        }
    }

    /// Takes every registered waker; the caller fires them after releasing its locks.
    pub fn take(&self) -> Vec<Arc<Waker<A>>> {
        std::mem::take(&mut *self.wakers.lock())
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.wakers.lock().len()
    }
}

/// Wakers to fire once the caller holds no lock.
pub type Wakeups<A> = Vec<Arc<Waker<A>>>;

/// What a stream operation leaves for its caller to do once it holds no lock: fire the
/// wakers, then drop the chunks that left the stream (dropping one may run arbitrary code,
/// e.g. a Python `__del__` that uses the same stream).
pub struct Deferred<C, A> {
    pub wakeups: Wakeups<A>,
    pub dropped: Vec<C>,
}

impl<C, A> Default for Deferred<C, A> {
    fn default() -> Self {
        Deferred {
            wakeups: Vec::new(),
            dropped: Vec::new(),
        }
    }
}

impl<C, A> Deferred<C, A> {
    pub fn extend(&mut self, other: Deferred<C, A>) {
        self.wakeups.extend(other.wakeups);
        self.dropped.extend(other.dropped);
    }
}

// ---------------------------------------------------------------------------------------
// Pipe

/// Why a send did not enqueue its chunk (the chunk is handed back).
#[derive(Debug, PartialEq, Eq)]
pub enum SendError<C> {
    /// The reader closed: the producer should stop (Eino's `closed == true`).
    ReaderClosed(C),
    /// The writer already closed the stream.
    WriterClosed(C),
    /// A bounded pipe is full: wait for space and try again.
    Full(C),
}

struct PipeState<C> {
    buf: VecDeque<C>,
    writer_closed: bool,
    reader_closed: bool,
}

/// A single-consumer FIFO of chunks, optionally bounded: senders wait while `capacity`
/// chunks are buffered. Every chunk that leaves it is handed to the caller, never dropped
/// under its lock.
pub struct Pipe<T, E, A> {
    state: Mutex<PipeState<Chunk<T, E>>>,
    capacity: Option<usize>,
    readers: WakerList<A>,
    senders: WakerList<A>,
}

impl<T, E, A> Pipe<T, E, A> {
    /// A pipe holding at most `capacity` chunks (unbounded if `None`). Capacity must be ≥ 1.
    pub fn new(capacity: Option<usize>) -> Self {
        Pipe {
            state: Mutex::new(PipeState {
                buf: VecDeque::new(),
                writer_closed: false,
                reader_closed: false,
            }),
            capacity: capacity.map(|n| n.max(1)),
            readers: WakerList::default(),
            senders: WakerList::default(),
        }
    }

    pub fn capacity(&self) -> Option<usize> {
        self.capacity
    }

    pub fn capacity_free(&self) -> Option<usize> {
        let len = self.state.lock().buf.len();
        self.capacity.map(|n| n.saturating_sub(len))
    }

    /// Enqueues `chunk` unless the pipe is full or closed; never blocks.
    pub fn try_send(&self, chunk: Chunk<T, E>) -> Result<Wakeups<A>, SendError<Chunk<T, E>>> {
        let mut st = self.state.lock();
        if st.reader_closed {
            return Err(SendError::ReaderClosed(chunk));
        }
        if st.writer_closed {
            return Err(SendError::WriterClosed(chunk));
        }
        if self.capacity.is_some_and(|n| st.buf.len() >= n) {
            return Err(SendError::Full(chunk));
        }
        st.buf.push_back(chunk);
        drop(st);
        Ok(self.readers.take())
    }

    /// Registers a sender waiting for space. Returns false (not registered) if it should
    /// retry now: there is space, or either side closed.
    pub fn subscribe_space(&self, waker: &Arc<Waker<A>>) -> bool {
        let Some(capacity) = self.capacity else {
            return false;
        };
        self.senders.register(waker);
        let st = self.state.lock();
        st.buf.len() >= capacity && !st.reader_closed && !st.writer_closed
    }

    /// Takes the next chunk; also returns the senders to wake for the freed slot.
    pub fn poll(&self) -> (Poll<T, E>, Wakeups<A>) {
        let mut st = self.state.lock();
        if st.reader_closed {
            return (Poll::Ended, Vec::new());
        }
        match st.buf.pop_front() {
            Some(chunk) => {
                drop(st);
                let wakeups = if self.capacity.is_some() {
                    self.senders.take()
                } else {
                    Vec::new()
                };
                (Poll::Ready(chunk), wakeups)
            }
            None if st.writer_closed => (Poll::Ended, Vec::new()),
            None => (Poll::Pending, Vec::new()),
        }
    }

    /// Registers a reader waiting for a chunk. Returns false if it should poll again now.
    pub fn subscribe(&self, waker: &Arc<Waker<A>>) -> bool {
        self.readers.register(waker);
        let st = self.state.lock();
        st.buf.is_empty() && !st.writer_closed && !st.reader_closed
    }

    /// The writer's end of stream. Idempotent.
    pub fn close_writer(&self) -> Wakeups<A> {
        self.state.lock().writer_closed = true;
        let mut wakeups = self.readers.take();
        wakeups.extend(self.senders.take());
        wakeups
    }

    /// The reader's close: later sends report `ReaderClosed`, blocked senders wake up, and
    /// the buffered chunks are handed back to be dropped by the caller. Idempotent.
    pub fn close_reader(&self) -> Deferred<Chunk<T, E>, A> {
        let dropped = {
            let mut st = self.state.lock();
            st.reader_closed = true;
            std::mem::take(&mut st.buf)
        };
        let mut wakeups = self.readers.take();
        wakeups.extend(self.senders.take());
        Deferred {
            wakeups,
            dropped: dropped.into(),
        }
    }

    /// Takes the receivers waiting for a chunk (to wake them).
    pub fn take_readers(&self) -> Wakeups<A> {
        self.readers.take()
    }

    /// Calls `f` on every buffered chunk, unless the pipe is busy (then nothing): for a
    /// garbage collector's traversal, which must not wait.
    pub fn try_visit<R>(&self, f: impl FnMut(&Chunk<T, E>) -> Result<(), R>) -> Result<(), R> {
        match self.state.try_lock() {
            Some(st) => st.buf.iter().try_for_each(f),
            None => Ok(()),
        }
    }

    pub fn is_reader_closed(&self) -> bool {
        self.state.lock().reader_closed
    }

    pub fn is_writer_closed(&self) -> bool {
        self.state.lock().writer_closed
    }

    pub fn len(&self) -> usize {
        self.state.lock().buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

// ---------------------------------------------------------------------------------------
// Tee: the shared buffer behind `copy(n)`

/// What a copy child should do next.
#[derive(Debug, PartialEq, Eq)]
pub enum TeeNext<C> {
    /// The next chunk for this child.
    Ready(C),
    /// The source has ended: EOF, for good.
    Ended,
    /// This child is closed.
    Closed,
    /// Nothing buffered: this child now holds the pull token and must poll the source,
    /// then call [`Tee::finish_pull`].
    Pull,
    /// Another child is pulling from the source: subscribe and wait.
    Busy,
    /// The shared buffer is at its limit: wait until the slowest child reads on.
    Full,
}

struct TeeState<C> {
    buf: VecDeque<C>,
    /// Stream position of `buf[0]`.
    base: u64,
    /// Next position of each child; `None` once the child is closed.
    cursors: Vec<Option<u64>>,
    ended: bool,
    pulling: bool,
}

/// `n` independent cursors over one source, Eino's `Copy`: every child sees every chunk
/// (errors too), EOF is sticky, and whichever child is furthest ahead pulls from the source.
/// A chunk leaves the buffer once every open child has passed it. With a `limit`, the
/// buffer holds at most that many chunks: the fastest child waits for the slowest one, and
/// the source (a bounded pipe) fills up and holds its writer back.
pub struct Tee<C, A> {
    state: Mutex<TeeState<C>>,
    limit: Option<usize>,
    /// Children waiting for a chunk: woken when a pull brings one (or the end).
    waiting_data: WakerList<A>,
    /// Children that found another child pulling: woken when that pull finishes, even
    /// empty-handed, so that one of them pulls next and subscribes to the source.
    waiting_pull: WakerList<A>,
    /// Children that found the buffer full: woken when the slowest child moves on.
    waiting_space: WakerList<A>,
}

/// How a copy child that got no chunk should wait.
#[derive(Debug, PartialEq, Eq)]
pub enum TeeWait {
    /// Poll again now: a chunk is buffered for it, the source ended or the child closed.
    Retry,
    /// Registered until the current pull finishes, or until the buffer has room.
    Registered,
    /// Registered for the next chunk; the caller must also subscribe to the source.
    SourceIdle,
}

impl<T, E, A> Tee<Chunk<T, E>, A> {
    /// One non-blocking receive for `child`: a buffered chunk, or a pull from the source
    /// through `pull` when this child is furthest ahead. `pull` runs with no lock held (it
    /// may call into Python). Returns what the caller does once it holds no lock.
    pub fn poll_child(
        &self,
        child: usize,
        clone: impl Fn(&Chunk<T, E>) -> Chunk<T, E>,
        mut pull: impl FnMut() -> Poll<T, E>,
    ) -> (Poll<T, E>, Deferred<Chunk<T, E>, A>) {
        let mut after = Deferred::default();
        loop {
            let (next, released) = self.next(child, &clone);
            after.extend(released);
            match next {
                TeeNext::Ready(chunk) => return (Poll::Ready(chunk), after),
                TeeNext::Ended | TeeNext::Closed => return (Poll::Ended, after),
                TeeNext::Busy | TeeNext::Full => return (Poll::Pending, after),
                TeeNext::Pull => {
                    let (chunk, ended) = match pull() {
                        Poll::Ready(chunk) => (Some(chunk), false),
                        Poll::Ended => (None, true),
                        Poll::Pending => (None, false),
                    };
                    let pending = chunk.is_none() && !ended;
                    after.extend(self.finish_pull(chunk, ended));
                    if pending {
                        return (Poll::Pending, after);
                    }
                }
            }
        }
    }
}

impl<C, A> Tee<C, A> {
    /// A tee for `children` cursors; `limit` bounds the shared buffer (`None`: unbounded).
    pub fn new(children: usize, limit: Option<usize>) -> Self {
        Tee {
            state: Mutex::new(TeeState {
                buf: VecDeque::new(),
                base: 0,
                cursors: vec![Some(0); children],
                ended: false,
                pulling: false,
            }),
            limit: limit.map(|n| n.max(1)),
            waiting_data: WakerList::default(),
            waiting_pull: WakerList::default(),
            waiting_space: WakerList::default(),
        }
    }

    pub fn limit(&self) -> Option<usize> {
        self.limit
    }

    /// The next step for `child`, with the chunks it released from the buffer (to drop once
    /// no lock is held) and the children to wake for the room that made. `clone` copies a
    /// buffered chunk (it runs under the lock, so it must not call back into the tee).
    pub fn next(&self, child: usize, clone: impl Fn(&C) -> C) -> (TeeNext<C>, Deferred<C, A>) {
        let mut st = self.state.lock();
        let Some(pos) = st.cursors[child] else {
            return (TeeNext::Closed, Deferred::default());
        };
        let offset = (pos - st.base) as usize;
        if let Some(chunk) = st.buf.get(offset) {
            let chunk = clone(chunk);
            st.cursors[child] = Some(pos + 1);
            let dropped = Self::trim(&mut st);
            drop(st);
            return (TeeNext::Ready(chunk), self.released(dropped));
        }
        let next = if st.ended {
            TeeNext::Ended
        } else if st.pulling {
            TeeNext::Busy
        } else if self.limit.is_some_and(|n| st.buf.len() >= n) {
            TeeNext::Full
        } else {
            st.pulling = true;
            TeeNext::Pull
        };
        (next, Deferred::default())
    }

    /// Ends a pull: `Some(chunk)` appends it, `ended` records the source's end. Returns the
    /// children to wake: those waiting for the pull, and on progress those waiting for data.
    pub fn finish_pull(&self, chunk: Option<C>, ended: bool) -> Deferred<C, A> {
        let mut st = self.state.lock();
        st.pulling = false;
        let progressed = chunk.is_some() || ended;
        if let Some(chunk) = chunk {
            st.buf.push_back(chunk);
        }
        st.ended |= ended;
        let dropped = Self::trim(&mut st);
        drop(st);
        let mut after = self.released(dropped);
        after.wakeups.extend(self.waiting_pull.take());
        if progressed {
            after.wakeups.extend(self.waiting_data.take());
        }
        after
    }

    /// Registers a child that got no chunk; see [`TeeWait`]. A pull never waits (polling
    /// the source does not block), so a child waiting on a pull is woken promptly.
    pub fn subscribe(&self, child: usize, waker: &Arc<Waker<A>>) -> TeeWait {
        // Registering under the state lock: a pull cannot finish between the check and it.
        // (Registering drops only fired wakers, which hold nothing.)
        let st = self.state.lock();
        let Some(pos) = st.cursors[child] else {
            return TeeWait::Retry; // closed: the next poll reports the end
        };
        if pos < st.base + st.buf.len() as u64 || st.ended {
            return TeeWait::Retry;
        }
        if st.pulling {
            self.waiting_pull.register(waker);
            return TeeWait::Registered;
        }
        if self.limit.is_some_and(|n| st.buf.len() >= n) {
            self.waiting_space.register(waker);
            return TeeWait::Registered;
        }
        self.waiting_data.register(waker);
        TeeWait::SourceIdle
    }

    /// Closes `child` (idempotent). Returns true when that closed the last open child (the
    /// caller then closes the source), and what to do once no lock is held: the chunks only
    /// this child still needed, and every waiting child to wake, among them any receiver
    /// blocked on this child, which then sees the end.
    pub fn close_child(&self, child: usize) -> (bool, Deferred<C, A>) {
        let mut st = self.state.lock();
        if st.cursors[child].take().is_none() {
            return (false, Deferred::default());
        }
        let dropped = Self::trim(&mut st);
        let last = st.cursors.iter().all(Option::is_none);
        drop(st);
        let mut after = self.released(dropped);
        after.wakeups.extend(self.take_waiters());
        (last, after)
    }

    /// Takes every waiting child (to wake them).
    pub fn take_waiters(&self) -> Wakeups<A> {
        let mut wakeups = self.waiting_data.take();
        wakeups.extend(self.waiting_pull.take());
        wakeups.extend(self.waiting_space.take());
        wakeups
    }

    /// Empties the buffer (a garbage collector breaking a cycle); the chunks are returned.
    pub fn clear(&self) -> Vec<C> {
        let mut st = self.state.lock();
        let n = st.buf.len() as u64;
        st.base += n;
        std::mem::take(&mut st.buf).into()
    }

    /// Calls `f` on every buffered chunk, unless the tee is busy (then nothing): for a
    /// garbage collector's traversal, which must not wait.
    pub fn try_visit<R>(&self, f: impl FnMut(&C) -> Result<(), R>) -> Result<(), R> {
        match self.state.try_lock() {
            Some(st) => st.buf.iter().try_for_each(f),
            None => Ok(()),
        }
    }

    /// Chunks still buffered (for tests and repr).
    pub fn buffered(&self) -> usize {
        self.state.lock().buf.len()
    }

    /// The children to wake when trimming made room in a bounded buffer.
    fn released(&self, dropped: Vec<C>) -> Deferred<C, A> {
        let wakeups = if !dropped.is_empty() && self.limit.is_some() {
            self.waiting_space.take()
        } else {
            Vec::new()
        };
        Deferred { wakeups, dropped }
    }

    /// Removes the chunks every open child has passed; they are returned, to be dropped by
    /// the caller once it holds no lock.
    fn trim(st: &mut TeeState<C>) -> Vec<C> {
        let min = st.cursors.iter().flatten().min().copied();
        let keep_from = min.unwrap_or(st.base + st.buf.len() as u64);
        let n = (keep_from.saturating_sub(st.base) as usize).min(st.buf.len());
        st.base += n as u64;
        st.buf.drain(..n).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::thread;

    type P = Pipe<u32, String, u8>;

    fn item(p: Poll<u32, String>) -> Option<u32> {
        match p {
            Poll::Ready(Chunk::Item(x)) => Some(x),
            _ => None,
        }
    }

    #[test]
    fn unbounded_pipe_delivers_items_and_errors_then_sticky_end() {
        let p = P::new(None);
        p.try_send(Chunk::Item(1)).unwrap();
        p.try_send(Chunk::Error("bad".into())).unwrap();
        p.try_send(Chunk::Item(2)).unwrap();
        p.close_writer();
        assert!(matches!(
            p.try_send(Chunk::Item(3)),
            Err(SendError::WriterClosed(_))
        ));
        assert_eq!(item(p.poll().0), Some(1));
        assert_eq!(p.poll().0, Poll::Ready(Chunk::Error("bad".into())));
        assert_eq!(item(p.poll().0), Some(2));
        assert_eq!(p.poll().0, Poll::Ended);
        assert_eq!(p.poll().0, Poll::Ended);
    }

    #[test]
    fn bounded_pipe_is_full_at_capacity_and_frees_slots_on_receive() {
        let p = P::new(Some(2));
        p.try_send(Chunk::Item(1)).unwrap();
        p.try_send(Chunk::Item(2)).unwrap();
        assert_eq!(
            p.try_send(Chunk::Item(3)).err(),
            Some(SendError::Full(Chunk::Item(3)))
        );
        let sender = Waker::asynchronous(7);
        assert!(p.subscribe_space(&sender), "registered while full");
        let (got, wake) = p.poll();
        assert_eq!(item(got), Some(1));
        assert_eq!(wake.len(), 1);
        assert_eq!(wake[0].fire(), Some(7));
        p.try_send(Chunk::Item(3)).unwrap();
        assert_eq!(p.capacity_free(), Some(0));
    }

    #[test]
    fn reader_close_stops_the_writer_and_drops_buffered_chunks() {
        let p = P::new(Some(1));
        p.try_send(Chunk::Item(1)).unwrap();
        let sender = Waker::asynchronous(1);
        assert!(p.subscribe_space(&sender));
        let after = p.close_reader();
        assert_eq!(after.dropped, vec![Chunk::Item(1)]);
        assert_eq!(
            after.wakeups.len(),
            1,
            "a blocked sender is woken to see the close"
        );
        assert_eq!(
            p.try_send(Chunk::Item(2)).err(),
            Some(SendError::ReaderClosed(Chunk::Item(2)))
        );
        assert_eq!(p.poll().0, Poll::Ended);
        assert!(!p.subscribe_space(&sender));
    }

    #[test]
    fn subscribe_then_send_wakes_a_blocked_thread() {
        let p: Arc<P> = Arc::new(P::new(None));
        let w = Waker::thread();
        assert!(p.subscribe(&w));
        let sender = {
            let p = p.clone();
            thread::spawn(move || {
                for waker in p.try_send(Chunk::Item(5)).unwrap() {
                    waker.fire();
                }
            })
        };
        assert!(w.wait(Duration::from_secs(5)));
        sender.join().unwrap();
        assert_eq!(item(p.poll().0), Some(5));
        // A pipe with a chunk ready refuses to register (poll again instead).
        p.try_send(Chunk::Item(6)).unwrap();
        assert!(!p.subscribe(&Waker::thread()));
    }

    #[test]
    fn wakers_fire_once_and_fired_ones_are_pruned() {
        let list: WakerList<u8> = WakerList::default();
        let a = Waker::asynchronous(1);
        list.register(&a);
        list.register(&a);
        assert_eq!(list.len(), 1);
        assert_eq!(a.fire(), Some(1));
        assert_eq!(a.fire(), None);
        list.register(&Waker::asynchronous(2));
        assert_eq!(list.len(), 1, "the fired waker was pruned");
        assert!(!Waker::<u8>::thread().wait(Duration::from_millis(1)));
    }

    #[test]
    fn tee_delivers_every_chunk_to_every_child_and_trims() {
        let tee: Tee<u32, u8> = Tee::new(3, None);
        let c = |x: &u32| *x;
        assert_eq!(tee.next(0, c).0, TeeNext::Pull);
        assert_eq!(tee.next(1, c).0, TeeNext::Busy);
        let w = Waker::asynchronous(1);
        assert_eq!(tee.subscribe(1, &w), TeeWait::Registered);
        assert_eq!(tee.finish_pull(Some(10), false).wakeups.len(), 1);
        assert_eq!(
            tee.subscribe(1, &w),
            TeeWait::Retry,
            "a chunk is buffered for it"
        );
        assert_eq!(tee.next(0, c).0, TeeNext::Ready(10));
        assert_eq!(tee.next(1, c).0, TeeNext::Ready(10));
        assert_eq!(tee.buffered(), 1, "child 2 has not read it yet");
        assert_eq!(tee.next(2, c).0, TeeNext::Ready(10));
        assert_eq!(tee.buffered(), 0);
        // A pull that finds nothing wakes only the children waiting for that pull.
        assert_eq!(tee.next(2, c).0, TeeNext::Pull);
        let (busy, idle) = (Waker::asynchronous(2), Waker::asynchronous(3));
        assert_eq!(tee.subscribe(0, &busy), TeeWait::Registered);
        let woken = tee.finish_pull(None, false).wakeups;
        assert_eq!(tee.subscribe(1, &idle), TeeWait::SourceIdle);
        assert_eq!(woken.len(), 1);
        assert_eq!(woken[0].fire(), Some(2));
        assert!(
            tee.finish_pull(None, false).wakeups.is_empty(),
            "nobody waits for a pull"
        );
        assert_eq!(tee.next(0, c).0, TeeNext::Pull);
        tee.finish_pull(None, true);
        for child in 0..3 {
            assert_eq!(tee.next(child, c).0, TeeNext::Ended);
            assert_eq!(tee.next(child, c).0, TeeNext::Ended);
        }
    }

    #[test]
    fn tee_closes_the_source_when_the_last_child_closes() {
        let tee: Tee<u32, u8> = Tee::new(2, None);
        assert_eq!(tee.next(0, |x| *x).0, TeeNext::Pull);
        tee.finish_pull(Some(1), false);
        assert!(!tee.close_child(1).0);
        assert!(!tee.close_child(1).0, "idempotent");
        assert_eq!(tee.next(1, |x| *x).0, TeeNext::Closed);
        assert_eq!(tee.buffered(), 1);
        assert!(tee.close_child(0).0);
        assert_eq!(tee.buffered(), 0);
    }

    #[test]
    fn copy_children_on_threads_each_see_every_item_of_a_piped_source() {
        const N: u32 = 20_000;
        let source: Arc<P> = Arc::new(P::new(None));
        let tee: Arc<Tee<Chunk<u32, String>, u8>> = Arc::new(Tee::new(3, None));
        let fire = |wakeups: Wakeups<u8>| wakeups.iter().for_each(|w| assert!(w.fire().is_none()));
        let children: Vec<_> = (0..3)
            .map(|child| {
                let (source, tee) = (source.clone(), tee.clone());
                thread::spawn(move || {
                    let mut got = Vec::new();
                    loop {
                        let (poll, after) = tee.poll_child(child, Clone::clone, || {
                            let (poll, wakeups) = source.poll();
                            fire(wakeups);
                            poll
                        });
                        fire(after.wakeups);
                        match poll {
                            Poll::Ready(Chunk::Item(x)) => got.push(x),
                            Poll::Ready(Chunk::Error(e)) => panic!("{e}"),
                            Poll::Ended => return got,
                            Poll::Pending => {
                                let w = Waker::thread();
                                let wait = match tee.subscribe(child, &w) {
                                    TeeWait::Retry => false,
                                    TeeWait::Registered => true,
                                    TeeWait::SourceIdle => source.subscribe(&w),
                                };
                                if wait {
                                    assert!(
                                        w.wait(Duration::from_secs(10)),
                                        "child {child} was never woken"
                                    );
                                }
                            }
                        }
                    }
                })
            })
            .collect();
        for i in 0..N {
            fire(source.try_send(Chunk::Item(i)).unwrap());
            if i % 1000 == 0 {
                thread::yield_now();
            }
        }
        fire(source.close_writer());
        for child in children {
            assert_eq!(child.join().unwrap(), (0..N).collect::<Vec<_>>());
        }
        assert_eq!(tee.buffered(), 0);
    }

    #[test]
    fn tee_hands_released_chunks_to_the_caller_and_wakes_a_closed_childs_waiter() {
        let tee: Tee<u32, u8> = Tee::new(2, None);
        assert_eq!(tee.next(0, |x| *x).0, TeeNext::Pull);
        tee.finish_pull(Some(1), false);
        let (got, after) = tee.next(0, |x| *x);
        assert_eq!(got, TeeNext::Ready(1));
        assert!(after.dropped.is_empty(), "child 1 still needs it");
        let w = Waker::asynchronous(9);
        assert_eq!(tee.subscribe(0, &w), TeeWait::SourceIdle);
        let (last, after) = tee.close_child(1);
        assert!(!last);
        assert_eq!(
            after.dropped,
            vec![1],
            "dropped by the caller, not under the lock"
        );
        assert_eq!(after.wakeups.len(), 1);
        let (_, after) = tee.close_child(0);
        assert_eq!(
            after.wakeups.len(),
            0,
            "fired wakers are not handed out twice"
        );
        assert_eq!(w.fire(), Some(9));
        assert_eq!(
            tee.subscribe(0, &w),
            TeeWait::Retry,
            "a closed child retries"
        );
    }

    #[test]
    fn a_bounded_tee_holds_the_fast_child_until_the_slow_one_reads() {
        let tee: Tee<u32, u8> = Tee::new(2, Some(2));
        for x in 0..2 {
            assert_eq!(tee.next(0, |x| *x).0, TeeNext::Pull);
            tee.finish_pull(Some(x), false);
            assert_eq!(tee.next(0, |x| *x).0, TeeNext::Ready(x));
        }
        assert_eq!(tee.next(0, |x| *x).0, TeeNext::Full);
        let w = Waker::asynchronous(5);
        assert_eq!(tee.subscribe(0, &w), TeeWait::Registered);
        let (got, after) = tee.next(1, |x| *x);
        assert_eq!(got, TeeNext::Ready(0));
        assert_eq!(after.dropped, vec![0]);
        assert_eq!(after.wakeups.len(), 1, "room made: the fast child wakes");
        assert_eq!(tee.next(0, |x| *x).0, TeeNext::Pull);
    }

    #[test]
    fn writer_close_is_separate_from_reader_close() {
        let p = P::new(None);
        p.close_reader();
        assert!(p.is_reader_closed() && !p.is_writer_closed());
        p.close_writer();
        assert!(p.is_writer_closed());
    }
}
