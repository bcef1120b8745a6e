//! The unbounded multi-producer, multi-consumer FIFO behind every rillet event stream.
//!
//! Pure Rust, generic over the item `T`, the close error `E` and the parked async waiter `W`,
//! so `cargo test` exercises the whole state machine without Python. The binding layer
//! (`py/channel.rs`) supplies Python objects for all three and does the waking.
//!
//! One mutex guards the queue, the close state and the waiter lists. That is deliberate:
//! an asyncio receiver must "check empty, then register" atomically, which lock-free queues
//! cannot do, and every operation already pays tens of nanoseconds crossing from Python.
//!
//! Wakeups are coalesced: a send wakes at most as many parked waiters as items it adds, and
//! only waiters that are actually parked. A woken async waiter is removed from the list, so
//! it can never be woken twice for one park.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// Waiters taken out of the channel under its lock, to be woken after the lock is released.
/// Usually empty, which a Vec represents without allocating or costing anything to drop.
pub type Wakeups<W> = Vec<W>;

/// What a receiver finds when the queue is empty and will stay so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended<E> {
    /// Closed normally: the stream is over.
    Closed,
    /// Closed with an error that every receiver sees once the queue is drained.
    Failed(E),
}

/// The result of a non-blocking receive.
#[derive(Debug, PartialEq, Eq)]
pub enum TryRecv<T, E> {
    Item(T),
    Empty,
    Ended(Ended<E>),
}

/// The result of a bounded blocking wait.
#[derive(Debug, PartialEq, Eq)]
pub enum Waited<T, E> {
    Item(T),
    TimedOut,
    Ended(Ended<E>),
}

/// The result of trying to park an async receiver.
#[derive(Debug, PartialEq, Eq)]
pub enum Park<W> {
    /// Registered: the waiter will be handed back by a later send or close.
    Parked,
    /// Not registered because an item is ready or the channel ended: retry the receive.
    Ready(W),
}

/// One reference held by a channel, as shown to a garbage collector.
pub enum Held<'a, T, E, W> {
    Item(&'a T),
    Error(&'a E),
    Waiter(&'a W),
}

/// What `unpark` did with a receiver that gave up.
#[derive(Debug, PartialEq, Eq)]
pub enum Unparked<W> {
    /// It was still parked: here it is, to be dropped outside the lock.
    Withdrawn(Option<W>),
    /// It had been woken already: the wakeup goes to this waiter instead (if any).
    PassOn(Option<W>),
}

/// What `clear` took out of a channel.
pub struct Cleared<T, E, W> {
    pub items: VecDeque<T>,
    pub error: Option<E>,
    pub waiters: VecDeque<W>,
}

struct State<T, E, W> {
    queue: VecDeque<T>,
    ended: Option<Ended<E>>,
    sync_waiters: usize,
    async_waiters: VecDeque<W>,
}

pub struct Channel<T, E, W> {
    state: Mutex<State<T, E, W>>,
    not_empty: Condvar,
}

impl<T, E: Clone, W> Default for Channel<T, E, W> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, E: Clone, W> Channel<T, E, W> {
    pub fn new() -> Self {
        Channel {
            state: Mutex::new(State {
                queue: VecDeque::new(),
                ended: None,
                sync_waiters: 0,
                async_waiters: VecDeque::new(),
            }),
            not_empty: Condvar::new(),
        }
    }

    /// Appends one item. Gives the item back if the channel is closed.
    #[inline]
    pub fn send(&self, item: T) -> Result<Wakeups<W>, T> {
        let mut st = self.state.lock();
        if st.ended.is_some() {
            return Err(item);
        }
        st.queue.push_back(item);
        Ok(self.wake_for(&mut st, 1))
    }

    /// Appends every item in order under one lock. Gives them all back if closed.
    pub fn send_many(&self, items: Vec<T>) -> Result<Wakeups<W>, Vec<T>> {
        let mut st = self.state.lock();
        if st.ended.is_some() {
            return Err(items);
        }
        let n = items.len();
        st.queue.extend(items);
        Ok(self.wake_for(&mut st, n))
    }

    /// Takes the waiters that `added` new items should wake; notifies blocked threads.
    #[inline]
    fn wake_for(&self, st: &mut State<T, E, W>, added: usize) -> Wakeups<W> {
        if st.sync_waiters > 0 {
            if added >= st.sync_waiters {
                self.not_empty.notify_all();
            } else {
                for _ in 0..added {
                    self.not_empty.notify_one();
                }
            }
        }
        match added.min(st.async_waiters.len()) {
            0 => Wakeups::new(),
            1 => st.async_waiters.pop_front().into_iter().collect(),
            n => st.async_waiters.drain(..n).collect(),
        }
    }

    #[inline]
    pub fn try_recv(&self) -> TryRecv<T, E> {
        let mut st = self.state.lock();
        match st.queue.pop_front() {
            Some(item) => TryRecv::Item(item),
            None => match &st.ended {
                Some(end) => TryRecv::Ended(end.clone()),
                None => TryRecv::Empty,
            },
        }
    }

    /// Moves up to `max` items out under one lock. An empty vector means the queue was empty;
    /// `Err` means it was empty and ended.
    pub fn try_recv_many(&self, max: usize) -> Result<Vec<T>, Ended<E>> {
        let mut st = self.state.lock();
        if st.queue.is_empty() {
            return match &st.ended {
                Some(end) => Err(end.clone()),
                None => Ok(Vec::new()),
            };
        }
        if max >= st.queue.len() {
            // Taking everything: hand over the buffer instead of moving item by item.
            return Ok(std::mem::take(&mut st.queue).into());
        }
        Ok(st.queue.drain(..max).collect())
    }

    /// Blocks the calling thread for at most `timeout` waiting for an item.
    ///
    /// The caller must not hold the Python interpreter while calling this. Items that
    /// arrive during the wait are taken even when the deadline has just passed, so a
    /// notified thread never strands the item it was woken for.
    pub fn wait_recv(&self, timeout: Duration) -> Waited<T, E> {
        let deadline = Instant::now().checked_add(timeout);
        let mut st = self.state.lock();
        loop {
            if let Some(item) = st.queue.pop_front() {
                return Waited::Item(item);
            }
            if let Some(end) = &st.ended {
                return Waited::Ended(end.clone());
            }
            let Some(deadline) = deadline else {
                st.sync_waiters += 1;
                self.not_empty.wait(&mut st);
                st.sync_waiters -= 1;
                continue;
            };
            if Instant::now() >= deadline {
                return Waited::TimedOut;
            }
            st.sync_waiters += 1;
            self.not_empty.wait_until(&mut st, deadline);
            st.sync_waiters -= 1;
        }
    }

    /// Registers an async waiter unless an item is ready or the channel ended.
    pub fn park(&self, waiter: W) -> Park<W> {
        let mut st = self.state.lock();
        if !st.queue.is_empty() || st.ended.is_some() {
            return Park::Ready(waiter);
        }
        st.async_waiters.push_back(waiter);
        Park::Parked
    }

    /// Withdraws a waiter whose receiver gave up (cancelled, loop closed).
    ///
    /// A waiter still parked is taken out and handed back, to be dropped after the lock is
    /// released. If it was no longer parked it had already been woken, possibly for an item
    /// it will now never take: the wakeup is passed to the next parked waiter, if items are
    /// left, and that waiter is returned to be woken.
    pub fn unpark(&self, is_this: impl Fn(&W) -> bool) -> Unparked<W> {
        let mut st = self.state.lock();
        if let Some(pos) = st.async_waiters.iter().position(is_this) {
            return Unparked::Withdrawn(st.async_waiters.remove(pos));
        }
        Unparked::PassOn(self.pass_wakeup_on(&mut st))
    }

    /// Takes a waiter out if it is still parked, without passing any wakeup on: its receiver
    /// is about to retry the receive itself. What it took is dropped by the caller.
    pub fn remove_waiter(&self, is_this: impl Fn(&W) -> bool) -> Option<W> {
        let mut st = self.state.lock();
        let pos = st.async_waiters.iter().position(is_this)?;
        st.async_waiters.remove(pos)
    }

    /// Hands a lost wakeup (a woken waiter that cannot take its item) to another waiter.
    pub fn pass_on(&self) -> Option<W> {
        let mut st = self.state.lock();
        self.pass_wakeup_on(&mut st)
    }

    fn pass_wakeup_on(&self, st: &mut State<T, E, W>) -> Option<W> {
        if st.queue.is_empty() {
            return None;
        }
        if st.sync_waiters > 0 {
            self.not_empty.notify_one();
        }
        st.async_waiters.pop_front()
    }

    /// Ends the channel. Returns the parked waiters to wake, or `None` if it was already
    /// ended (close is idempotent: the first end wins).
    pub fn close(&self, end: Ended<E>) -> Option<Wakeups<W>> {
        let mut st = self.state.lock();
        if st.ended.is_some() {
            return None;
        }
        st.ended = Some(end);
        self.not_empty.notify_all();
        Some(st.async_waiters.drain(..).collect())
    }

    pub fn len(&self) -> usize {
        self.state.lock().queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn is_closed(&self) -> bool {
        self.state.lock().ended.is_some()
    }

    pub fn parked_async_waiters(&self) -> usize {
        self.state.lock().async_waiters.len()
    }

    /// Shows everything the channel holds to `visit`, for a garbage collector. Visits
    /// nothing if another thread holds the lock right now: a collector must never block, and
    /// under-reporting references only keeps objects alive.
    pub fn try_visit<X>(
        &self,
        mut visit: impl FnMut(Held<'_, T, E, W>) -> Result<(), X>,
    ) -> Result<(), X> {
        let Some(st) = self.state.try_lock() else {
            return Ok(());
        };
        st.queue
            .iter()
            .try_for_each(|item| visit(Held::Item(item)))?;
        if let Some(Ended::Failed(err)) = &st.ended {
            visit(Held::Error(err))?;
        }
        st.async_waiters
            .iter()
            .try_for_each(|w| visit(Held::Waiter(w)))
    }

    /// Empties the channel for a garbage collector breaking a reference cycle. What it held
    /// is returned, to be dropped after the lock is released.
    pub fn clear(&self) -> Cleared<T, E, W> {
        let mut st = self.state.lock();
        let error = match st.ended.take() {
            Some(Ended::Failed(err)) => Some(err),
            _ => None,
        };
        st.ended = Some(Ended::Closed);
        Cleared {
            items: std::mem::take(&mut st.queue),
            error,
            waiters: std::mem::take(&mut st.async_waiters),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::sync::Arc;
    use std::thread;

    type Ch = Channel<u64, String, u32>;

    #[test]
    fn fifo_order_and_try_recv() {
        let ch = Ch::new();
        for i in 0..5 {
            ch.send(i).unwrap();
        }
        assert_eq!(ch.len(), 5);
        for i in 0..5 {
            assert_eq!(ch.try_recv(), TryRecv::Item(i));
        }
        assert_eq!(ch.try_recv(), TryRecv::Empty);
    }

    #[test]
    fn close_drains_then_reports_end() {
        let ch = Ch::new();
        ch.send_many(vec![1, 2]).unwrap();
        assert!(ch.close(Ended::Failed("boom".into())).is_some());
        assert!(
            ch.close(Ended::Closed).is_none(),
            "close is idempotent, first wins"
        );
        assert_eq!(ch.send(3), Err(3));
        assert_eq!(ch.send_many(vec![4]), Err(vec![4]));
        assert_eq!(ch.try_recv_many(10), Ok(vec![1, 2]));
        assert_eq!(ch.try_recv(), TryRecv::Ended(Ended::Failed("boom".into())));
        assert_eq!(
            ch.wait_recv(Duration::from_secs(5)),
            Waited::Ended(Ended::Failed("boom".into()))
        );
    }

    #[test]
    fn clear_empties_and_ends_the_channel() {
        let ch = Ch::new();
        ch.send_many(vec![1, 2]).unwrap();
        ch.park(7);
        ch.close(Ended::Failed("boom".into()));
        let mut seen = Vec::new();
        ch.try_visit(|held| {
            seen.push(match held {
                Held::Item(i) => format!("item {i}"),
                Held::Error(e) => format!("error {e}"),
                Held::Waiter(w) => format!("waiter {w}"),
            });
            Ok::<(), ()>(())
        })
        .unwrap();
        assert_eq!(
            seen,
            ["item 1", "item 2", "error boom"],
            "close woke and removed the waiter"
        );
        let cleared = ch.clear();
        assert_eq!(
            (cleared.items.len(), cleared.error.as_deref()),
            (2, Some("boom"))
        );
        assert_eq!(ch.try_recv(), TryRecv::Ended(Ended::Closed));
    }

    #[test]
    fn try_recv_many_bounds() {
        let ch = Ch::new();
        assert_eq!(ch.try_recv_many(3), Ok(vec![]));
        ch.send_many((0..10).collect()).unwrap();
        assert_eq!(ch.try_recv_many(3), Ok(vec![0, 1, 2]));
        assert_eq!(ch.try_recv_many(100).unwrap().len(), 7);
    }

    #[test]
    fn wait_times_out() {
        let ch = Ch::new();
        let t0 = Instant::now();
        assert_eq!(ch.wait_recv(Duration::from_millis(30)), Waited::TimedOut);
        assert!(t0.elapsed() >= Duration::from_millis(30));
        assert_eq!(ch.wait_recv(Duration::ZERO), Waited::TimedOut);
    }

    #[test]
    fn park_is_refused_when_ready_and_woken_once_per_item() {
        let ch = Ch::new();
        assert_eq!(ch.park(1), Park::Parked);
        assert_eq!(ch.park(2), Park::Parked);
        assert_eq!(ch.park(3), Park::Parked);
        // One item wakes exactly one waiter, the oldest.
        assert_eq!(ch.send(10).unwrap(), vec![1]);
        // With an item queued a new waiter is refused: it should just take the item.
        assert_eq!(ch.park(4), Park::Ready(4));
        // Two more items wake the two remaining waiters, no more.
        assert_eq!(ch.send_many(vec![11, 12]).unwrap(), vec![2, 3]);
        assert!(ch.send(13).unwrap().is_empty());
        assert_eq!(ch.parked_async_waiters(), 0);
    }

    #[test]
    fn unpark_passes_a_consumed_wakeup_on() {
        let ch = Ch::new();
        ch.park(1);
        ch.park(2);
        assert_eq!(ch.send(10).unwrap(), vec![1]);
        // Waiter 1 was woken but its receiver was cancelled: waiter 2 must get the wakeup.
        assert_eq!(ch.unpark(|w| *w == 1), Unparked::PassOn(Some(2)));
        // A waiter still parked is withdrawn and handed back (to be dropped unlocked).
        ch.try_recv();
        ch.park(3);
        assert_eq!(ch.unpark(|w| *w == 3), Unparked::Withdrawn(Some(3)));
        assert_eq!(ch.parked_async_waiters(), 0);
        // With nothing queued there is no wakeup to pass on.
        assert_eq!(ch.unpark(|w| *w == 9), Unparked::PassOn(None));
    }

    #[test]
    fn remove_waiter_takes_only_a_parked_waiter_and_passes_nothing_on() {
        let ch = Ch::new();
        ch.park(1);
        ch.park(2);
        assert_eq!(ch.send(10).unwrap(), vec![1]);
        assert_eq!(ch.remove_waiter(|w| *w == 1), None, "1 was woken already");
        assert_eq!(ch.remove_waiter(|w| *w == 2), Some(2));
        assert_eq!(ch.parked_async_waiters(), 0);
    }

    #[test]
    fn close_wakes_every_waiter() {
        let ch = Ch::new();
        ch.park(1);
        ch.park(2);
        assert_eq!(ch.close(Ended::Closed), Some(vec![1, 2]));
        assert_eq!(ch.park(3), Park::Ready(3));
    }

    #[test]
    fn threads_deliver_each_item_exactly_once_in_producer_order() {
        const PRODUCERS: u64 = 4;
        const CONSUMERS: usize = 3;
        const PER: u64 = 20_000;
        let ch: Arc<Ch> = Arc::new(Ch::new());
        let consumers: Vec<_> = (0..CONSUMERS)
            .map(|_| {
                let ch = ch.clone();
                thread::spawn(move || {
                    let mut got = Vec::new();
                    loop {
                        match ch.wait_recv(Duration::from_millis(50)) {
                            Waited::Item(x) => got.push(x),
                            Waited::TimedOut => continue,
                            Waited::Ended(_) => return got,
                        }
                    }
                })
            })
            .collect();
        let producers: Vec<_> = (0..PRODUCERS)
            .map(|p| {
                let ch = ch.clone();
                thread::spawn(move || {
                    for i in 0..PER {
                        let item = p * 1_000_000 + i;
                        if i % 7 == 0 {
                            ch.send_many(vec![item]).unwrap();
                        } else {
                            ch.send(item).unwrap();
                        }
                    }
                })
            })
            .collect();
        producers.into_iter().for_each(|t| t.join().unwrap());
        ch.close(Ended::Closed);
        let mut seen = HashSet::new();
        for got in consumers.into_iter().map(|t| t.join().unwrap()) {
            // Each consumer sees each producer's items in increasing order.
            let mut last = [None::<u64>; PRODUCERS as usize];
            for x in got {
                let p = (x / 1_000_000) as usize;
                assert!(last[p].is_none_or(|prev| prev < x), "producer order broken");
                last[p] = Some(x);
                assert!(seen.insert(x), "item {x} delivered twice");
            }
        }
        assert_eq!(seen.len() as u64, PRODUCERS * PER);
    }
}
