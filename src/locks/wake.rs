//! The acquisitions waiting on each lock in this process, shared by both backends: a waiter
//! takes a place in its lock's room ([`Wakeups::watch`]) before it sleeps, and whoever learns
//! of a release (the memory backend itself; the Redis backend for its own releases and,
//! through its pub/sub subscriber, for the other instances') calls [`Wakeups::released`],
//! which gives the room one turn: a lock can serve one waiter (the rooms themselves are
//! `crate::wait`'s).

use std::sync::Arc;

use crate::clock::Clock;
use crate::wait::{Room, Rooms, Seat};

use super::MAX_WAITING_ACQUISITIONS;

/// The rooms of one store's locks.
#[derive(Debug, Default)]
pub struct Wakeups {
    rooms: Rooms,
}

impl Wakeups {
    /// A place among the acquisitions waiting on `name` in this process, sleeping on `clock`
    /// (the store's), or none when [`MAX_WAITING_ACQUISITIONS`] hold one (the acquisition then
    /// answers at once).
    pub fn watch(&self, name: &str, clock: &Clock) -> Watch {
        Watch {
            seat: self.rooms.room(name, clock).seat(MAX_WAITING_ACQUISITIONS),
            on_drop: None,
        }
    }

    /// `name` was released: one of its waiters in this process tries. A pending turn is kept
    /// (one at most: the lock serves one holder at a time, so two releases unheard in between
    /// still need one attempt, the one after the later release).
    pub fn released(&self, name: &str) {
        if let Some(room) = self.rooms.existing(name) {
            room.give_turn();
        }
    }

    /// Releases may have gone unheard (the subscriber reconnected, or fell behind): one
    /// waiter of every lock tries now, rather than at its holder's lease end.
    pub fn missed(&self) {
        self.rooms.missed();
    }
}

/// One waiter's place in its lock's room (or none: the room is full); dropping it gives the
/// place back and runs what the backend asked (the Redis backend: stop listening).
pub struct Watch {
    seat: Option<Seat>,
    /// What the backend does when the waiter is gone (the Redis backend: unsubscribe).
    on_drop: Option<Box<dyn FnOnce() + Send + Sync>>,
}

impl std::fmt::Debug for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Watch")
            .field("seated", &self.seat.is_some())
            .finish()
    }
}

impl Watch {
    /// The room this watch has a place in; `None` when it was full.
    pub fn room(&self) -> Option<&Arc<Room>> {
        self.seat.as_ref().map(Seat::room)
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
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_watch_holds_a_place_until_dropped() {
        let hub = Wakeups::default();
        let w = hub.watch("a", &Clock::system());
        let room = w.room().unwrap().clone();
        hub.released("b");
        hub.released("a");
        assert_eq!(room.waiting(), 1);
        drop(w);
        assert_eq!(room.waiting(), 0);
        drop(room);
        hub.released("a");
        assert!(hub.rooms.existing("a").is_none());
    }

    #[test]
    fn past_the_cap_a_watch_has_no_place() {
        let hub = Wakeups::default();
        let seated: Vec<Watch> = (0..MAX_WAITING_ACQUISITIONS)
            .map(|_| hub.watch("a", &Clock::system()))
            .collect();
        assert!(seated.iter().all(|w| w.room().is_some()));
        assert!(hub.watch("a", &Clock::system()).room().is_none(), "full");
        assert!(
            hub.watch("b", &Clock::system()).room().is_some(),
            "another lock's room"
        );
        drop(seated);
        assert!(
            hub.watch("a", &Clock::system()).room().is_some(),
            "places given back"
        );
    }
}
