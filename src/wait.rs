//! Waiting rooms: the requests of this process that wait on one thing in the store (claims on
//! a queue, acquisitions of a lock) and what they share, so that an event costs the store one
//! look, not one per waiter (docs/api.md "Clients and abuse": a write that wakes waiters wakes
//! only as many as it can serve):
//! - a turn ([`Room::give_turn`]) sends one waiter to look: one per event that can serve one
//!   (a job became due, a lock was released). A turn given while nobody listens is kept (one at
//!   most) for the next waiter;
//! - the alarm is when the next look is needed without a turn (the earliest due time, the end
//!   of the lease the last look saw, a re-check). The first waiter whose timer passes it takes
//!   it and looks for the room, the others keep sleeping; when it moves earlier, every waiter
//!   re-aims its timer (no store call);
//! - a waiter sent to look that goes away before its look reports hands the look on (the alarm
//!   is set to now).
//!
//! The domains decide what a look is and when it is enough ([`wait_in_room`]); a room's places
//! are capped by the domain ([`Room::seat`]).
//!
//! A room's times are on its store's clock (µs since the epoch) and its waiters sleep on it
//! (`Clock::sleep_until`): what they wait for (a lease's end, a job's due time) is the store's
//! time, so on a clock a test moves they wake when it is moved, not after real time.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::Duration;

use futures::FutureExt;
use tokio::sync::futures::Notified;
use tokio::sync::Notify;

use crate::clock::Clock;

/// The waiters of this process on one thing in the store.
#[derive(Debug, Default)]
pub struct Room {
    turn: Notify,
    retimed: Notify,
    state: Mutex<RoomState>,
    /// The store's clock, which the room's times are on and its waiters sleep on.
    clock: Clock,
}

#[derive(Debug, Default)]
struct RoomState {
    /// Waiters seated.
    waiting: usize,
    /// µs since the epoch on the room's clock.
    alarm: Option<i64>,
}

impl Room {
    /// An empty room whose times are on `clock`.
    pub fn new(clock: Clock) -> Self {
        Self {
            clock,
            ..Self::default()
        }
    }

    /// The clock this room's times are on.
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    fn state(&self) -> MutexGuard<'_, RoomState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waiters seated now.
    pub fn waiting(&self) -> usize {
        self.state().waiting
    }

    /// A place for one more waiter, unless `cap` hold one.
    pub fn seat(self: &Arc<Self>, cap: usize) -> Option<Seat> {
        let mut state = self.state();
        if state.waiting >= cap {
            return None;
        }
        state.waiting += 1;
        Some(Seat(self.clone()))
    }

    /// One waiter looks now (or the next to listen, if none does).
    pub fn give_turn(&self) {
        self.turn.notify_one();
    }

    /// A look may find something at `at` (µs on the room's clock): the alarm rings no later.
    pub fn expect(&self, at: i64) {
        let earlier = {
            let mut state = self.state();
            let earlier = state.alarm.is_none_or(|alarm| at < alarm);
            if earlier {
                state.alarm = Some(at);
            }
            earlier
        };
        if earlier {
            self.retimed.notify_waiters();
        }
    }

    /// A look that started at `started` saw the next thing due at `next`. It covers every
    /// alarm due by its start, so its own replaces those; a later one (set while it ran)
    /// still stands, the earlier of the two ringing.
    fn looked(&self, started: i64, next: Option<i64>) {
        let earlier = {
            let mut state = self.state();
            // Set at its very start (a clock that stands still between readings) is not
            // covered: one look too many rather than an event missed.
            let kept = state.alarm.filter(|alarm| *alarm >= started);
            let alarm = match (kept, next) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            let earlier = alarm.is_some_and(|new| state.alarm.is_none_or(|old| new < old));
            state.alarm = alarm;
            earlier
        };
        if earlier {
            self.retimed.notify_waiters();
        }
    }

    /// Takes the alarm set for `at` unless another waiter has (or it moved): `true` means the
    /// caller looks for the room.
    fn take(&self, at: i64) -> bool {
        let mut state = self.state();
        let mine = state.alarm == Some(at);
        if mine {
            state.alarm = None;
        }
        mine
    }

    /// Sleeps until this waiter should look: its turn, the room's alarm (taken), or
    /// `deadline`. `true` when it looks on the room's behalf.
    async fn wait_turn(&self, mut turn: Pin<&mut Notified<'_>>, deadline: i64) -> bool {
        loop {
            let retimed = self.retimed.notified();
            tokio::pin!(retimed);
            let alarm = self.state().alarm;
            let wake = alarm.map_or(deadline, |alarm| alarm.min(deadline));
            tokio::select! {
                () = turn.as_mut() => return true,
                () = retimed.as_mut() => {}
                () = self.clock.sleep_until(wake) => {
                    let now = self.clock.now_us();
                    let took_alarm = alarm.is_some_and(|alarm| alarm <= now && self.take(alarm));
                    // A turn given meanwhile is taken too: this waiter is about to look anyway.
                    let took_turn = turn.as_mut().now_or_never().is_some();
                    if took_alarm || took_turn || now >= deadline {
                        return took_alarm || took_turn;
                    }
                }
            }
        }
    }
}

/// A waiter's place in its room, given back when it answers or goes away.
#[derive(Debug)]
pub struct Seat(Arc<Room>);

impl Seat {
    pub fn room(&self) -> &Arc<Room> {
        &self.0
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        self.0.state().waiting -= 1;
    }
}

/// Held while a waiter looks on its room's behalf (on a turn or the alarm): if that look never
/// reports (the client went away, the store failed), the alarm is set to now, so another
/// waiter looks in its place.
struct Standing<'a>(Option<&'a Room>);

impl Drop for Standing<'_> {
    fn drop(&mut self) {
        if let Some(room) = self.0 {
            room.expect(room.clock.now_us());
        }
    }
}

/// What one look found.
#[derive(Debug)]
pub struct Look<T> {
    /// The answer if the waiter stops here.
    pub answer: T,
    /// Whether it stops here (it got what it waited for).
    pub done: bool,
    /// When the room should look next without a turn, as far as this look saw (µs on the
    /// room's clock).
    pub next: Option<i64>,
    /// A look that got what it waited for also used up a turn given while it ran (the event
    /// came before it): true where one event serves one waiter only (a lock).
    pub spends_turn: bool,
}

/// Looks (`look`), and until a look is done waits in `room` for `wait` of its clock's time,
/// looking again on a turn, on the room's alarm and once more at the deadline; answers the
/// last look.
pub async fn wait_in_room<T, E, F, Fut>(room: &Room, wait: Duration, mut look: F) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<Look<T>, E>>,
{
    let wait = i64::try_from(wait.as_micros()).unwrap_or(i64::MAX);
    let deadline = room.clock.now_us().saturating_add(wait);
    let mut for_room = false;
    loop {
        // Listening before the look, so a turn given while it runs (an event it may have come
        // too early for) brings another look rather than going to a sleeping waiter or being
        // lost.
        let turn = room.turn.notified();
        tokio::pin!(turn);
        turn.as_mut().enable();
        let mut standing = Standing(for_room.then_some(room));
        let started = room.clock.now_us();
        let found = look().await?;
        room.looked(started, found.next);
        standing.0 = None;
        if found.done {
            if found.spends_turn {
                let _ = turn.as_mut().now_or_never();
            }
            return Ok(found.answer);
        }
        if room.clock.now_us() >= deadline {
            return Ok(found.answer);
        }
        for_room = room.wait_turn(turn.as_mut(), deadline).await;
    }
}

/// The rooms of one store, by name, held weakly: a thing nobody waits on costs nothing. Keyed
/// by the name as the store layer has it (a caller-scoped name where names are), so an
/// announcement finds its room without being parsed back into a name.
#[derive(Debug, Default)]
pub struct Rooms {
    rooms: Mutex<HashMap<String, Weak<Room>>>,
}

impl Rooms {
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Weak<Room>>> {
        self.rooms.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The room of `name`, made (its times on `clock`) when nobody holds it.
    pub fn room(&self, name: &str, clock: &Clock) -> Arc<Room> {
        let mut rooms = self.lock();
        if let Some(room) = rooms.get(name).and_then(Weak::upgrade) {
            return room;
        }
        if rooms.len() >= 1024 {
            rooms.retain(|_, room| room.strong_count() > 0);
        }
        let room = Arc::new(Room::new(clock.clone()));
        rooms.insert(name.to_owned(), Arc::downgrade(&room));
        room
    }

    /// The room of `name` if someone waits in it.
    pub fn existing(&self, name: &str) -> Option<Arc<Room>> {
        self.lock().get(name).and_then(Weak::upgrade)
    }

    /// Events may have gone unheard (a subscriber reconnected, or fell behind): one waiter of
    /// every room looks now.
    pub fn missed(&self) {
        let rooms: Vec<Arc<Room>> = self.lock().values().filter_map(Weak::upgrade).collect();
        for room in rooms {
            room.expect(room.clock.now_us());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_turn_sends_one_waiter_and_rooms_are_forgotten() {
        let rooms = Rooms::default();
        let room = rooms.room("a", &Clock::system());
        let seat = room.seat(2).unwrap();
        {
            let (first, second) = (room.turn.notified(), room.turn.notified());
            tokio::pin!(first, second);
            first.as_mut().enable();
            second.as_mut().enable();
            if let Some(other) = rooms.existing("b") {
                other.give_turn();
            }
            rooms.existing("a").unwrap().give_turn();
            tokio::time::timeout(Duration::from_secs(5), first)
                .await
                .expect("one waiter woken");
            assert!(second.now_or_never().is_none(), "not the other");
        }
        assert_eq!(room.waiting(), 1);
        drop(seat);
        assert_eq!(room.waiting(), 0);
        drop(room);
        assert!(rooms.existing("a").is_none());
    }

    #[test]
    fn past_the_cap_there_is_no_seat() {
        let rooms = Rooms::default();
        let room = rooms.room("a", &Clock::system());
        let seats: Vec<Seat> = (0..3).filter_map(|_| room.seat(3)).collect();
        assert_eq!(seats.len(), 3);
        assert!(room.seat(3).is_none(), "full");
        assert!(
            rooms.room("b", &Clock::system()).seat(3).is_some(),
            "another room"
        );
        drop(seats);
        assert!(room.seat(3).is_some(), "places given back");
    }

    /// Yields until `done` holds (the tasks of this test's one thread run meanwhile).
    async fn settled(mut done: impl FnMut() -> bool) {
        for _ in 0..10_000 {
            if done() {
                return;
            }
            tokio::task::yield_now().await;
        }
        panic!("never settled");
    }

    #[tokio::test]
    async fn a_waiter_looks_again_at_the_alarm_and_at_its_deadline_on_the_rooms_clock() {
        let clock = Clock::manual(std::time::SystemTime::now());
        let room = Arc::new(Room::new(clock.clone()));
        let start = clock.now_us();
        let looks = Arc::new(Mutex::new(Vec::new()));
        let waiter = {
            let (room, looks, clock) = (room.clone(), looks.clone(), clock.clone());
            tokio::spawn(async move {
                let answer: Result<usize, ()> =
                    wait_in_room(&room, Duration::from_secs(10), || {
                        let n = {
                            let mut looks = looks.lock().unwrap();
                            looks.push(clock.now_us() - start);
                            looks.len()
                        };
                        // The first look sees something due in 3 s.
                        let next = (n == 1).then(|| clock.now_us() + 3_000_000);
                        async move {
                            Ok(Look {
                                answer: n,
                                done: false,
                                next,
                                spends_turn: false,
                            })
                        }
                    })
                    .await;
                answer
            })
        };
        let looked = |n: usize| looks.lock().unwrap().len() == n && clock.sleeping() == 1;
        settled(|| looked(1)).await;
        clock.advance(Duration::from_millis(2_999));
        for _ in 0..100 {
            tokio::task::yield_now().await;
        }
        assert_eq!(looks.lock().unwrap().len(), 1, "not before the alarm");
        clock.advance(Duration::from_millis(1));
        settled(|| looked(2)).await;
        clock.advance(Duration::from_secs(7));
        assert_eq!(waiter.await.unwrap(), Ok(3));
        assert_eq!(*looks.lock().unwrap(), [0, 3_000_000, 10_000_000]);
        assert_eq!(clock.sleeping(), 0);
    }
}
