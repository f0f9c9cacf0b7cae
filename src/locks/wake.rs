//! The acquisitions waiting on each lock in this process, shared by both backends: a waiter
//! takes a place in its lock's [`Room`] ([`Wakeups::watch`]) before it sleeps, and whoever
//! learns of a release (the memory backend itself; the Redis backend for its own releases and,
//! through its pub/sub subscriber, for the other instances') calls [`Wakeups::released`],
//! which wakes one waiter of the room, not all: a lock can serve one of them (docs/api.md "Clients
//! and abuse": a write that wakes waiters wakes only as many as it can serve).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};

use tokio::sync::Notify;
use tokio::time::Instant;

use super::MAX_WAITING_ACQUISITIONS;

/// The acquisitions of this process waiting on one lock, and what they share so that a
/// release or a lease's end costs the store one attempt, not one per waiter (see
/// [`super::acquire`] for what holds):
/// - a turn (`turn`) sends one waiter to try: one per release heard. A pending turn is kept
///   (one at most: the lock serves one holder at a time, so two releases unheard in between
///   still need one attempt — the one after the later release);
/// - the alarm is when the next attempt is needed without a turn: the end of the lease the
///   last attempt saw (an expiry sends no message), or now when a waiter sent to try went
///   away. The first waiter whose timer passes it takes it and tries for the room, the others
///   keep sleeping; when it moves earlier, `retimed` has every waiter re-aim its timer (no
///   store call).
#[derive(Debug, Default)]
pub struct Room {
    pub(super) turn: Notify,
    pub(super) retimed: Notify,
    state: Mutex<RoomState>,
}

#[derive(Debug, Default)]
struct RoomState {
    /// Waiters seated (at most [`MAX_WAITING_ACQUISITIONS`]).
    waiting: usize,
    alarm: Option<Instant>,
}

impl Room {
    fn state(&self) -> MutexGuard<'_, RoomState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waiters seated now.
    pub fn waiting(&self) -> usize {
        self.state().waiting
    }

    /// The alarm as it stands.
    pub(super) fn alarm(&self) -> Option<Instant> {
        self.state().alarm
    }

    /// The lock may be free at `at`: the alarm rings no later.
    pub(super) fn expect(&self, at: Instant) {
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

    /// An attempt that started at `started` saw the lease end at `lease_end` (another
    /// holder's, or the one it took). It covers every alarm due by its start, so its own
    /// replaces those; a later one (set while it ran) still stands, the earlier of the two
    /// ringing.
    pub(super) fn tried(&self, started: Instant, lease_end: Instant) {
        let earlier = {
            let mut state = self.state();
            let alarm = match state.alarm.filter(|alarm| *alarm > started) {
                Some(kept) => kept.min(lease_end),
                None => lease_end,
            };
            let earlier = state.alarm.is_none_or(|old| alarm < old);
            state.alarm = Some(alarm);
            earlier
        };
        if earlier {
            self.retimed.notify_waiters();
        }
    }

    /// Takes the alarm set for `at` unless another waiter has (or it moved): `true` means the
    /// caller tries for the room.
    pub(super) fn take(&self, at: Instant) -> bool {
        let mut state = self.state();
        let mine = state.alarm == Some(at);
        if mine {
            state.alarm = None;
        }
        mine
    }
}

/// The rooms of one store's locks, held weakly: a lock nobody waits on costs nothing. Keyed
/// by the lock's name as the store layer has it (the text of the [`crate::types::Name`] the
/// handler passes, a caller-scoped name where names are), so a release announcement finds its
/// room without being parsed back into a name.
#[derive(Debug, Default)]
pub struct Wakeups {
    rooms: Mutex<HashMap<String, Weak<Room>>>,
}

impl Wakeups {
    /// The room of `name`, made when nobody holds it.
    fn room(&self, name: &str) -> Arc<Room> {
        let mut rooms = self.rooms.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(room) = rooms.get(name).and_then(Weak::upgrade) {
            return room;
        }
        if rooms.len() >= 1024 {
            rooms.retain(|_, room| room.strong_count() > 0);
        }
        let room = Arc::new(Room::default());
        rooms.insert(name.to_owned(), Arc::downgrade(&room));
        room
    }

    fn existing(&self, name: &str) -> Option<Arc<Room>> {
        self.rooms
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(name)
            .and_then(Weak::upgrade)
    }

    /// A place among the acquisitions waiting on `name` in this process, or none when
    /// [`MAX_WAITING_ACQUISITIONS`] hold one (the acquisition then answers at once).
    pub fn watch(&self, name: &str) -> Watch {
        let room = self.room(name);
        {
            let mut state = room.state();
            if state.waiting >= MAX_WAITING_ACQUISITIONS {
                return Watch::full();
            }
            state.waiting += 1;
        }
        Watch {
            room: Some(room),
            on_drop: None,
        }
    }

    /// `name` was released: one of its waiters in this process tries.
    pub fn released(&self, name: &str) {
        if let Some(room) = self.existing(name) {
            room.turn.notify_one();
        }
    }

    /// Releases may have gone unheard (the subscriber reconnected, or fell behind): one
    /// waiter of every lock tries now, rather than at its holder's lease end.
    pub fn missed(&self) {
        let rooms: Vec<Arc<Room>> = self
            .rooms
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .filter_map(Weak::upgrade)
            .collect();
        for room in rooms {
            room.expect(Instant::now());
        }
    }
}

/// One waiter's place in its lock's room (or none: the room is full); dropping it gives the
/// place back and runs what the backend asked (the Redis backend: stop listening).
pub struct Watch {
    room: Option<Arc<Room>>,
    /// What the backend does when the waiter is gone (the Redis backend: unsubscribe).
    on_drop: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("seated", &self.room.is_some())
            .finish()
    }
}

impl Watch {
    /// No place: the room holds [`MAX_WAITING_ACQUISITIONS`] waiters.
    fn full() -> Self {
        Self {
            room: None,
            on_drop: None,
        }
    }

    /// The room this watch has a place in; `None` when it was full.
    pub fn room(&self) -> Option<&Arc<Room>> {
        self.room.as_ref()
    }

    /// Runs `f` when this watch is dropped.
    pub fn on_drop(mut self, f: impl FnOnce() + Send + Sync + 'static) -> Self {
        self.on_drop = Some(Box::new(f));
        self
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(f) = self.on_drop.take() {
            f();
        }
        if let Some(room) = self.room.take() {
            room.state().waiting -= 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_release_gives_one_turn_and_rooms_are_forgotten() {
        let hub = Wakeups::default();
        let w = hub.watch("a");
        let room = w.room().unwrap().clone();
        {
            let (first, second) = (room.turn.notified(), room.turn.notified());
            tokio::pin!(first, second);
            first.as_mut().enable();
            second.as_mut().enable();
            hub.released("b");
            hub.released("a");
            tokio::time::timeout(std::time::Duration::from_secs(5), first)
                .await
                .expect("one waiter woken");
            assert!(
                futures::FutureExt::now_or_never(second).is_none(),
                "not the other"
            );
        }
        assert_eq!(room.waiting(), 1);
        drop(w);
        assert_eq!(room.waiting(), 0);
        drop(room);
        hub.released("a");
        assert!(hub.existing("a").is_none());
    }

    #[test]
    fn past_the_cap_a_watch_has_no_place() {
        let hub = Wakeups::default();
        let seated: Vec<Watch> = (0..MAX_WAITING_ACQUISITIONS)
            .map(|_| hub.watch("a"))
            .collect();
        assert!(seated.iter().all(|w| w.room().is_some()));
        assert!(hub.watch("a").room().is_none(), "full");
        assert!(hub.watch("b").room().is_some(), "another lock's room");
        drop(seated);
        assert!(hub.watch("a").room().is_some(), "places given back");
    }
}
