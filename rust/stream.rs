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

use crate::channel::{Channel, Ended, TryRecv};

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
    Thread { woken: Mutex<bool>, cv: Condvar },
    Async(A),
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
            kind: WakerKind::Async(payload),
        })
    }

    pub fn has_fired(&self) -> bool {
        self.fired.load(Ordering::Acquire)
    }

    /// Fires once. A thread waker is woken here; an async one returns its payload for the
    /// binding to resolve (`None` if it had already fired).
    pub fn fire(&self) -> Option<&A> {
        if self.fired.swap(true, Ordering::AcqRel) {
            return None;
        }
        match &self.kind {
            WakerKind::Thread { woken, cv } => {
                *woken.lock() = true;
                cv.notify_all();
                None
            }
            WakerKind::Async(payload) => Some(payload),
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
    /// Registers `waker`, dropping wakers that have already fired.
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

    pub fn len(&self) -> usize {
        self.wakers.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Wakers to fire once the caller holds no lock.
pub type Wakeups<A> = Vec<Arc<Waker<A>>>;

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

/// Free buffer slots of a bounded pipe, with the senders waiting for one.
struct Slots<A> {
    free: Mutex<usize>,
    waiting: WakerList<A>,
}

/// A single-consumer stream: the unbounded [`Channel`] holds the chunks; a bounded pipe adds
/// a slot count so that senders wait when `capacity` chunks are buffered.
pub struct Pipe<T, E, A> {
    chan: Channel<Chunk<T, E>, (), ()>,
    readers: WakerList<A>,
    slots: Option<Slots<A>>,
    reader_closed: AtomicBool,
}

impl<T, E, A> Pipe<T, E, A> {
    /// A pipe holding at most `capacity` chunks (unbounded if `None`). Capacity must be ≥ 1.
    pub fn new(capacity: Option<usize>) -> Self {
        Pipe {
            chan: Channel::new(),
            readers: WakerList::default(),
            slots: capacity.map(|n| Slots {
                free: Mutex::new(n.max(1)),
                waiting: WakerList::default(),
            }),
            reader_closed: AtomicBool::new(false),
        }
    }

    pub fn capacity_free(&self) -> Option<usize> {
        self.slots.as_ref().map(|s| *s.free.lock())
    }

    /// Enqueues `chunk` unless the pipe is full or closed; never blocks.
    pub fn try_send(&self, chunk: Chunk<T, E>) -> Result<Wakeups<A>, SendError<Chunk<T, E>>> {
        if self.reader_closed.load(Ordering::Acquire) {
            return Err(SendError::ReaderClosed(chunk));
        }
        if let Some(slots) = &self.slots {
            let mut free = slots.free.lock();
            if *free == 0 {
                return Err(SendError::Full(chunk));
            }
            *free -= 1;
        }
        if let Err(chunk) = self.chan.send(chunk) {
            self.release_slot();
            return Err(SendError::WriterClosed(chunk));
        }
        Ok(self.readers.take())
    }

    /// Registers a sender waiting for space. Returns false (not registered) if it should
    /// retry now: there is space, or the reader closed.
    pub fn subscribe_space(&self, waker: &Arc<Waker<A>>) -> bool {
        let Some(slots) = &self.slots else {
            return false;
        };
        slots.waiting.register(waker);
        *slots.free.lock() == 0 && !self.reader_closed.load(Ordering::Acquire)
    }

    fn release_slot(&self) -> Wakeups<A> {
        match &self.slots {
            Some(slots) => {
                *slots.free.lock() += 1;
                slots.waiting.take()
            }
            None => Vec::new(),
        }
    }

    /// Takes the next chunk; also returns the senders to wake for the freed slot.
    pub fn poll(&self) -> (Poll<T, E>, Wakeups<A>) {
        if self.reader_closed.load(Ordering::Acquire) {
            return (Poll::Ended, Vec::new());
        }
        match self.chan.try_recv() {
            TryRecv::Item(chunk) => (Poll::Ready(chunk), self.release_slot()),
            TryRecv::Empty => (Poll::Pending, Vec::new()),
            TryRecv::Ended(_) => (Poll::Ended, Vec::new()),
        }
    }

    /// Registers a reader waiting for a chunk. Returns false if it should poll again now.
    pub fn subscribe(&self, waker: &Arc<Waker<A>>) -> bool {
        self.readers.register(waker);
        self.chan.is_empty()
            && !self.chan.is_closed()
            && !self.reader_closed.load(Ordering::Acquire)
    }

    /// The writer's end of stream. Idempotent.
    pub fn close_writer(&self) -> Wakeups<A> {
        self.chan.close(Ended::Closed);
        self.readers.take()
    }

    /// The reader's close: later sends report `ReaderClosed`, blocked senders wake up, and
    /// the buffered chunks are handed back to be dropped by the caller. Idempotent.
    pub fn close_reader(&self) -> (Vec<Chunk<T, E>>, Wakeups<A>) {
        self.reader_closed.store(true, Ordering::Release);
        let mut wakeups = self.readers.take();
        if let Some(slots) = &self.slots {
            wakeups.extend(slots.waiting.take());
        }
        (self.chan.clear().items.into(), wakeups)
    }

    pub fn is_reader_closed(&self) -> bool {
        self.reader_closed.load(Ordering::Acquire)
    }

    pub fn is_writer_closed(&self) -> bool {
        self.chan.is_closed()
    }

    pub fn len(&self) -> usize {
        self.chan.len()
    }

    pub fn is_empty(&self) -> bool {
        self.chan.is_empty()
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
/// (errors too), buffering between children is unbounded, EOF is sticky, and whichever
/// child is furthest ahead pulls from the source. A chunk is dropped from the buffer once
/// every open child has passed it.
pub struct Tee<C, A> {
    state: Mutex<TeeState<C>>,
    /// Children waiting for a chunk: woken when a pull brings one (or the end).
    waiting_data: WakerList<A>,
    /// Children that found another child pulling: woken when that pull finishes, even
    /// empty-handed, so that one of them pulls next and subscribes to the source.
    waiting_pull: WakerList<A>,
}

/// How a copy child that got no chunk should wait.
#[derive(Debug, PartialEq, Eq)]
pub enum TeeWait {
    /// Poll again now: a chunk is buffered for it, or the source ended.
    Retry,
    /// Registered until the current pull finishes.
    PullInProgress,
    /// Registered for the next chunk; the caller must also subscribe to the source.
    SourceIdle,
}

impl<T, E, A> Tee<Chunk<T, E>, A> {
    /// One non-blocking receive for `child`: a buffered chunk, or a pull from the source
    /// through `pull` when this child is furthest ahead. `pull` runs with no lock held (it
    /// may call into Python). Returns the wakers to fire.
    pub fn poll_child(
        &self,
        child: usize,
        clone: impl Fn(&Chunk<T, E>) -> Chunk<T, E>,
        mut pull: impl FnMut() -> Poll<T, E>,
    ) -> (Poll<T, E>, Wakeups<A>) {
        let mut wakeups = Vec::new();
        loop {
            match self.next(child, &clone) {
                TeeNext::Ready(chunk) => return (Poll::Ready(chunk), wakeups),
                TeeNext::Ended | TeeNext::Closed => return (Poll::Ended, wakeups),
                TeeNext::Busy => return (Poll::Pending, wakeups),
                TeeNext::Pull => {
                    let (chunk, ended) = match pull() {
                        Poll::Ready(chunk) => (Some(chunk), false),
                        Poll::Ended => (None, true),
                        Poll::Pending => (None, false),
                    };
                    let pending = chunk.is_none() && !ended;
                    wakeups.extend(self.finish_pull(chunk, ended));
                    if pending {
                        return (Poll::Pending, wakeups);
                    }
                }
            }
        }
    }
}

impl<C, A> Tee<C, A> {
    pub fn new(children: usize) -> Self {
        Tee {
            state: Mutex::new(TeeState {
                buf: VecDeque::new(),
                base: 0,
                cursors: vec![Some(0); children],
                ended: false,
                pulling: false,
            }),
            waiting_data: WakerList::default(),
            waiting_pull: WakerList::default(),
        }
    }

    /// The next step for `child`. `clone` copies a buffered chunk (it runs under the lock,
    /// so it must not call back into the tee).
    pub fn next(&self, child: usize, clone: impl Fn(&C) -> C) -> TeeNext<C> {
        let mut st = self.state.lock();
        let Some(pos) = st.cursors[child] else {
            return TeeNext::Closed;
        };
        let offset = (pos - st.base) as usize;
        if let Some(chunk) = st.buf.get(offset) {
            let chunk = clone(chunk);
            st.cursors[child] = Some(pos + 1);
            Self::trim(&mut st);
            return TeeNext::Ready(chunk);
        }
        if st.ended {
            return TeeNext::Ended;
        }
        if st.pulling {
            return TeeNext::Busy;
        }
        st.pulling = true;
        TeeNext::Pull
    }

    /// Ends a pull: `Some(chunk)` appends it, `ended` records the source's end. Returns the
    /// children to wake: those waiting for the pull, and on progress those waiting for data.
    pub fn finish_pull(&self, chunk: Option<C>, ended: bool) -> Wakeups<A> {
        let mut st = self.state.lock();
        st.pulling = false;
        let progressed = chunk.is_some() || ended;
        if let Some(chunk) = chunk {
            st.buf.push_back(chunk);
        }
        st.ended |= ended;
        Self::trim(&mut st);
        drop(st);
        let mut wakeups = self.waiting_pull.take();
        if progressed {
            wakeups.extend(self.waiting_data.take());
        }
        wakeups
    }

    /// Registers a child that got no chunk; see [`TeeWait`]. A pull never waits (polling
    /// the source does not block), so a child waiting on a pull is woken promptly.
    pub fn subscribe(&self, child: usize, waker: &Arc<Waker<A>>) -> TeeWait {
        // Registering under the state lock: a pull cannot finish between the check and it.
        let st = self.state.lock();
        let behind = st.cursors[child].is_some_and(|pos| pos < st.base + st.buf.len() as u64);
        if behind || st.ended {
            return TeeWait::Retry;
        }
        if st.pulling {
            self.waiting_pull.register(waker);
            return TeeWait::PullInProgress;
        }
        self.waiting_data.register(waker);
        TeeWait::SourceIdle
    }

    /// Closes `child` (idempotent). Returns true when that closed the last open child: the
    /// caller then closes the source.
    pub fn close_child(&self, child: usize) -> bool {
        let mut st = self.state.lock();
        if st.cursors[child].take().is_none() {
            return false;
        }
        Self::trim(&mut st);
        st.cursors.iter().all(Option::is_none)
    }

    /// Chunks still buffered (for tests and repr).
    pub fn buffered(&self) -> usize {
        self.state.lock().buf.len()
    }

    fn trim(st: &mut TeeState<C>) {
        let min = st.cursors.iter().flatten().min().copied();
        let keep_from = min.unwrap_or(st.base + st.buf.len() as u64);
        while st.base < keep_from && st.buf.pop_front().is_some() {
            st.base += 1;
        }
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
        assert_eq!(wake[0].fire(), Some(&7));
        p.try_send(Chunk::Item(3)).unwrap();
        assert_eq!(p.capacity_free(), Some(0));
    }

    #[test]
    fn reader_close_stops_the_writer_and_drops_buffered_chunks() {
        let p = P::new(Some(1));
        p.try_send(Chunk::Item(1)).unwrap();
        let sender = Waker::asynchronous(1);
        assert!(p.subscribe_space(&sender));
        let (dropped, wake) = p.close_reader();
        assert_eq!(dropped, vec![Chunk::Item(1)]);
        assert_eq!(wake.len(), 1, "a blocked sender is woken to see the close");
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
        assert_eq!(a.fire(), Some(&1));
        assert_eq!(a.fire(), None);
        list.register(&Waker::asynchronous(2));
        assert_eq!(list.len(), 1, "the fired waker was pruned");
        assert!(!Waker::<u8>::thread().wait(Duration::from_millis(1)));
    }

    #[test]
    fn tee_delivers_every_chunk_to_every_child_and_trims() {
        let tee: Tee<u32, u8> = Tee::new(3);
        let c = |x: &u32| *x;
        assert_eq!(tee.next(0, c), TeeNext::Pull);
        assert_eq!(tee.next(1, c), TeeNext::Busy);
        let w = Waker::asynchronous(1);
        assert_eq!(tee.subscribe(1, &w), TeeWait::PullInProgress);
        assert_eq!(tee.finish_pull(Some(10), false).len(), 1);
        assert_eq!(
            tee.subscribe(1, &w),
            TeeWait::Retry,
            "a chunk is buffered for it"
        );
        assert_eq!(tee.next(0, c), TeeNext::Ready(10));
        assert_eq!(tee.next(1, c), TeeNext::Ready(10));
        assert_eq!(tee.buffered(), 1, "child 2 has not read it yet");
        assert_eq!(tee.next(2, c), TeeNext::Ready(10));
        assert_eq!(tee.buffered(), 0);
        // A pull that finds nothing wakes only the children waiting for that pull.
        assert_eq!(tee.next(2, c), TeeNext::Pull);
        let (busy, idle) = (Waker::asynchronous(2), Waker::asynchronous(3));
        assert_eq!(tee.subscribe(0, &busy), TeeWait::PullInProgress);
        let woken = tee.finish_pull(None, false);
        assert_eq!(tee.subscribe(1, &idle), TeeWait::SourceIdle);
        assert_eq!(woken.len(), 1);
        assert_eq!(woken[0].fire(), Some(&2));
        assert!(
            tee.finish_pull(None, false).is_empty(),
            "nobody waits for a pull"
        );
        assert_eq!(tee.next(0, c), TeeNext::Pull);
        tee.finish_pull(None, true);
        for child in 0..3 {
            assert_eq!(tee.next(child, c), TeeNext::Ended);
            assert_eq!(tee.next(child, c), TeeNext::Ended);
        }
    }

    #[test]
    fn tee_closes_the_source_when_the_last_child_closes() {
        let tee: Tee<u32, u8> = Tee::new(2);
        assert_eq!(tee.next(0, |x| *x), TeeNext::Pull);
        tee.finish_pull(Some(1), false);
        assert!(!tee.close_child(1));
        assert!(!tee.close_child(1), "idempotent");
        assert_eq!(tee.next(1, |x| *x), TeeNext::Closed);
        assert_eq!(tee.buffered(), 1);
        assert!(tee.close_child(0));
        assert_eq!(tee.buffered(), 0);
    }

    #[test]
    fn copy_children_on_threads_each_see_every_item_of_a_piped_source() {
        const N: u32 = 20_000;
        let source: Arc<P> = Arc::new(P::new(None));
        let tee: Arc<Tee<Chunk<u32, String>, u8>> = Arc::new(Tee::new(3));
        let fire = |wakeups: Wakeups<u8>| wakeups.iter().for_each(|w| assert!(w.fire().is_none()));
        let children: Vec<_> = (0..3)
            .map(|child| {
                let (source, tee) = (source.clone(), tee.clone());
                thread::spawn(move || {
                    let mut got = Vec::new();
                    loop {
                        let (poll, wakeups) = tee.poll_child(child, Clone::clone, || {
                            let (poll, wakeups) = source.poll();
                            fire(wakeups);
                            poll
                        });
                        fire(wakeups);
                        match poll {
                            Poll::Ready(Chunk::Item(x)) => got.push(x),
                            Poll::Ready(Chunk::Error(e)) => panic!("{e}"),
                            Poll::Ended => return got,
                            Poll::Pending => {
                                let w = Waker::thread();
                                let wait = match tee.subscribe(child, &w) {
                                    TeeWait::Retry => false,
                                    TeeWait::PullInProgress => true,
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
}
