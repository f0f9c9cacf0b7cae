//! Where the ledger writes orders, and what a failed write says about whom. The ingester and the
//! replay hold a [`Sink`]: PostgreSQL in production (`db.rs`); an in-memory table in unit
//! tests, so the exactly-once, attempts and dead-letter rules are tested without a database.

use super::Row;

/// What a failed write says about whom: one order's data, or the database as a whole.
/// Only [`Fault::Row`] may ever dead-letter an order; the others stall every order alike, so
/// they are waited out, however long they last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Fault {
    /// The row's own data is refused (SQLSTATE class 22 data exception, 23 integrity).
    #[error("row refused: {0}")]
    Row(&'static str),
    /// The database cannot be reached (connection refused or cut, server starting or
    /// shutting down, authentication): the ledger is `backing_off`.
    #[error("database unreachable: {0}")]
    Unreachable(&'static str),
    /// The database answers but refuses writes as a whole (read-only, missing table, out of
    /// resources, timeouts, internal errors, anything not the row's fault): `failing`.
    #[error("database refusing writes: {0}")]
    Refusing(&'static str),
}

impl Fault {
    /// The stable snake_case reason code (what `/readyz` and dead letters carry).
    pub fn reason(self) -> &'static str {
        match self {
            Self::Row(r) | Self::Unreachable(r) | Self::Refusing(r) => r,
        }
    }
}

/// A failed write: its [`Fault`] (what the ledger acts on and reports), and the server's text,
/// which may name hosts, users and SQL and so goes to the log only.
#[derive(Debug, thiserror::Error)]
#[error("{fault}: {detail}")]
pub(crate) struct SinkError {
    pub fault: Fault,
    detail: String,
}

impl SinkError {
    pub fn new(fault: Fault, detail: impl Into<String>) -> Self {
        Self {
            fault,
            detail: detail.into(),
        }
    }
}

/// The ledger's table of orders.
pub(crate) trait Sink {
    /// Brings the table's schema up to date (before the first write).
    async fn migrate(&self) -> Result<(), SinkError>;

    /// Inserts `rows` as one statement, skipping order ids already there; committed on return
    /// (all or nothing). Returns how many rows were new. With no rows it is a probe that a
    /// write would be taken.
    async fn insert(&self, rows: &[Row]) -> Result<u64, SinkError>;
}

/// An in-memory [`Sink`] for unit tests: a table keyed by order id that can be told to fail as
/// a whole or to refuse given orders' rows, as PostgreSQL would.
#[cfg(test)]
pub(crate) mod memory {
    use std::collections::{BTreeMap, HashMap};
    use std::sync::Mutex;

    use super::{Fault, Row, Sink, SinkError};

    #[derive(Debug, Default)]
    pub(crate) struct MemorySink {
        table: Mutex<Table>,
    }

    #[derive(Debug, Default)]
    struct Table {
        rows: BTreeMap<String, Row>,
        /// Every statement fails with this (an outage, a read-only database).
        down: Option<Fault>,
        /// order id → the reason its row is refused for.
        refused: HashMap<String, &'static str>,
        /// Statements that wrote (or would have written) rows, counted to show retries.
        inserts: u64,
        /// Every statement tried, failed or not, counted to follow a back-off.
        tried: u64,
    }

    impl MemorySink {
        fn table(&self) -> std::sync::MutexGuard<'_, Table> {
            self.table
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
        }

        /// Every statement fails with `fault` until called again with `None`.
        pub fn set_down(&self, fault: Option<Fault>) {
            self.table().down = fault;
        }

        /// `order_id`'s row is refused for `reason` (a row fault) until forgiven.
        pub fn refuse(&self, order_id: &str, reason: &'static str) {
            self.table().refused.insert(order_id.to_owned(), reason);
        }

        pub fn forgive(&self, order_id: &str) {
            self.table().refused.remove(order_id);
        }

        /// The order ids in the table, in order.
        pub fn ids(&self) -> Vec<String> {
            self.table().rows.keys().cloned().collect()
        }

        /// Statements with rows tried so far.
        pub fn inserts(&self) -> u64 {
            self.table().inserts
        }

        /// Statements of any kind tried so far, those that failed too.
        pub fn tried(&self) -> u64 {
            self.table().tried
        }
    }

    impl Sink for MemorySink {
        async fn migrate(&self) -> Result<(), SinkError> {
            let mut table = self.table();
            table.tried += 1;
            match table.down {
                Some(fault) => Err(SinkError::new(fault, "memory sink down")),
                None => Ok(()),
            }
        }

        async fn insert(&self, rows: &[Row]) -> Result<u64, SinkError> {
            let mut table = self.table();
            table.tried += 1;
            if let Some(fault) = table.down {
                return Err(SinkError::new(fault, "memory sink down"));
            }
            if rows.is_empty() {
                return Ok(0);
            }
            table.inserts += 1;
            // One statement: a refused row fails it whole, nothing is written.
            if let Some(reason) = rows.iter().find_map(|r| table.refused.get(&r.order_id)) {
                return Err(SinkError::new(Fault::Row(reason), "row refused"));
            }
            let mut new = 0;
            for row in rows {
                if !table.rows.contains_key(&row.order_id) {
                    table.rows.insert(row.order_id.clone(), row.clone());
                    new += 1;
                }
            }
            Ok(new)
        }
    }
}
