//! The ledger's SQL (PostgreSQL through sqlx): migrations and the idempotent insert.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::postgres::{PgPool, PgPoolOptions};

use super::Row;

/// Embedded `migrations/`, applied at start-up.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Why a write failed: the database cannot be reached (back off, retry everything), or it
/// refused these rows (retry them a few times, then dead-letter).
#[derive(Debug, thiserror::Error)]
pub(crate) enum DbError {
    #[error("database unavailable: {0}")]
    Unavailable(String),
    #[error("database refused the rows: {0}")]
    Refused(String),
}

impl From<sqlx::Error> for DbError {
    fn from(e: sqlx::Error) -> Self {
        let transient = match &e {
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::PoolTimedOut
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => true,
            // Class 08 is connection trouble; 57P0x is the server shutting down or starting;
            // 53xxx is resources; 40001/40P01 are retryable by definition.
            sqlx::Error::Database(db) => db.code().is_some_and(|c| {
                c.starts_with("08")
                    || c.starts_with("57P")
                    || c.starts_with("53")
                    || c == "40001"
                    || c == "40P01"
            }),
            _ => false,
        };
        if transient {
            Self::Unavailable(e.to_string())
        } else {
            Self::Refused(e.to_string())
        }
    }
}

/// Cheap-clone handle to the ledger database.
#[derive(Debug, Clone)]
pub(crate) struct Db {
    pool: PgPool,
}

impl Db {
    /// Builds the pool without connecting: the gateway starts even while PostgreSQL is down.
    pub fn connect_lazy(url: &str, timeout: Duration) -> Result<Self, String> {
        let pool = PgPoolOptions::new()
            .max_connections(4)
            .acquire_timeout(timeout)
            .connect_lazy(url)
            .map_err(|e| format!("DATABASE_URL: {e}"))?;
        Ok(Self { pool })
    }

    /// Applies pending migrations (sqlx takes an advisory lock, so concurrent instances agree).
    pub async fn migrate(&self) -> Result<(), String> {
        MIGRATOR.run(&self.pool).await.map_err(|e| e.to_string())
    }

    /// Inserts `rows` in one statement, skipping order ids already there; committed on return.
    /// Returns how many rows were new.
    pub async fn insert(&self, rows: &[Row]) -> Result<u64, DbError> {
        let mut ids = Vec::with_capacity(rows.len());
        let mut vouchers = Vec::with_capacity(rows.len());
        let mut users = Vec::with_capacity(rows.len());
        let mut nths = Vec::with_capacity(rows.len());
        let mut times = Vec::with_capacity(rows.len());
        for r in rows {
            ids.push(r.order_id.clone());
            vouchers.push(r.voucher.to_string());
            users.push(i64::from(r.user.0));
            nths.push(i32::try_from(r.nth).unwrap_or(i32::MAX));
            times.push(
                DateTime::<Utc>::from_timestamp_millis(i64::try_from(r.created_at_ms).unwrap_or(0))
                    .unwrap_or_default(),
            );
        }
        // Only a repeated order id is "already done"; any other conflict (the same user's n-th
        // order under a different id) is an error the ingester must see, not skip.
        let done = sqlx::query(
            "INSERT INTO seckill_orders (order_id, voucher_id, user_id, nth, created_at) \
             SELECT * FROM UNNEST($1::text[], $2::text[], $3::bigint[], $4::int[], $5::timestamptz[]) \
             ON CONFLICT (order_id) DO NOTHING",
        )
        .bind(ids)
        .bind(vouchers)
        .bind(users)
        .bind(nths)
        .bind(times)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }

    /// Whether the database answers.
    pub async fn ping(&self) -> Result<(), DbError> {
        sqlx::query("SELECT 1").execute(&self.pool).await?;
        Ok(())
    }

    /// Which of `order_ids` are in the ledger.
    pub async fn present(&self, order_ids: &[String]) -> Result<Vec<String>, DbError> {
        Ok(
            sqlx::query_scalar("SELECT order_id FROM seckill_orders WHERE order_id = ANY($1)")
                .bind(order_ids)
                .fetch_all(&self.pool)
                .await?,
        )
    }
}
