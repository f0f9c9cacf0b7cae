//! The ledger's SQL (PostgreSQL through sqlx): migrations and the idempotent insert.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::postgres::{PgPool, PgPoolOptions};

use super::Row;

/// Embedded `migrations/`, applied at start-up.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Why a write failed, classified by SQLSTATE class (PostgreSQL appendix A). Only an error that
/// belongs to the rows themselves (class 22, data exception; class 23, integrity constraint
/// violation) may lead to dead-lettering; every error of the database as a whole —
/// unreachable, read-only, a table missing, out of resources, shutting down, timing out — is
/// [`DbError::Unavailable`], backed off from and retried for as long as it lasts, never counted
/// against an order.
#[derive(Debug, thiserror::Error)]
pub(crate) enum DbError {
    /// The database cannot take the rows now. `reason` is a stable code for `/readyz` and the
    /// metrics; `detail` (which may name hosts, users or SQL) only goes to the log.
    #[error("database unavailable ({reason}): {detail}")]
    Unavailable {
        reason: &'static str,
        /// Whether the database answered (and refused): the ledger is then `failing`, not
        /// `backing_off`.
        answered: bool,
        detail: String,
    },
    /// The database refused these rows for what they hold.
    #[error("database refused the rows ({reason}): {detail}")]
    Refused {
        reason: &'static str,
        detail: String,
    },
}

impl DbError {
    /// The stable code of this error.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Unavailable { reason, .. } | Self::Refused { reason, .. } => reason,
        }
    }
}

impl From<sqlx::Error> for DbError {
    fn from(e: sqlx::Error) -> Self {
        let detail = e.to_string();
        let unreachable = |reason| Self::Unavailable {
            reason,
            answered: false,
            detail: detail.clone(),
        };
        match &e {
            sqlx::Error::PoolTimedOut => unreachable("timeout"),
            sqlx::Error::Io(_)
            | sqlx::Error::Tls(_)
            | sqlx::Error::Protocol(_)
            | sqlx::Error::PoolClosed
            | sqlx::Error::WorkerCrashed => unreachable("unavailable"),
            sqlx::Error::Database(db) => {
                let code = db.code().map(|c| c.into_owned()).unwrap_or_default();
                classify_sqlstate(&code, detail)
            }
            _ => Self::Unavailable {
                reason: "database_error",
                answered: true,
                detail,
            },
        }
    }
}

/// SQLSTATE → row error or database-wide error, with a reason code.
fn classify_sqlstate(code: &str, detail: String) -> DbError {
    let row = |reason| DbError::Refused {
        reason,
        detail: detail.clone(),
    };
    let database = |reason| DbError::Unavailable {
        reason,
        answered: true,
        detail: detail.clone(),
    };
    match code {
        "23505" => row("unique_violation"),
        "23503" => row("foreign_key_violation"),
        "23502" => row("not_null_violation"),
        "23514" => row("check_violation"),
        c if c.starts_with("23") => row("integrity_violation"),
        c if c.starts_with("22") => row("data_exception"),
        "25006" => database("read_only"),
        "42P01" => database("undefined_table"),
        "42703" => database("undefined_column"),
        "42501" => database("insufficient_privilege"),
        "57014" => database("timeout"),
        c if c.starts_with("08") => DbError::Unavailable {
            reason: "unavailable",
            answered: false,
            detail: detail.clone(),
        },
        c if c.starts_with("25") => database("transaction_state"),
        c if c.starts_with("40") => database("transaction_rollback"),
        c if c.starts_with("42") => database("schema_error"),
        c if c.starts_with("53") => database("insufficient_resources"),
        c if c.starts_with("54") => database("program_limit"),
        c if c.starts_with("55") => database("object_not_ready"),
        c if c.starts_with("57") => database("operator_intervention"),
        c if c.starts_with("58") => database("system_error"),
        c if c.starts_with("XX") => database("internal_error"),
        _ => database("database_error"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_row_errors_may_dead_letter() {
        for (code, reason) in [
            ("23505", "unique_violation"),
            ("23P01", "integrity_violation"),
            ("22001", "data_exception"),
            ("22P02", "data_exception"),
        ] {
            match classify_sqlstate(code, String::new()) {
                DbError::Refused { reason: r, .. } => assert_eq!(r, reason, "{code}"),
                other => panic!("{code}: {other:?}"),
            }
        }
        for (code, reason, answered) in [
            ("25006", "read_only", true),
            ("42P01", "undefined_table", true),
            ("42601", "schema_error", true),
            ("53300", "insufficient_resources", true),
            ("57P01", "operator_intervention", true),
            ("57014", "timeout", true),
            ("58030", "system_error", true),
            ("XX000", "internal_error", true),
            ("40001", "transaction_rollback", true),
            ("08006", "unavailable", false),
            ("", "database_error", true),
        ] {
            match classify_sqlstate(code, String::new()) {
                DbError::Unavailable {
                    reason: r,
                    answered: a,
                    ..
                } => assert_eq!((r, a), (reason, answered), "{code}"),
                other => panic!("{code} must never dead-letter: {other:?}"),
            }
        }
    }
}

/// Cheap-clone handle to the ledger database.
#[derive(Debug, Clone)]
pub(crate) struct Db {
    pool: PgPool,
}

impl Db {
    /// Builds a pool of `connections` without connecting: the gateway starts even while
    /// PostgreSQL is down.
    pub fn connect_lazy(url: &str, timeout: Duration, connections: u32) -> Result<Self, String> {
        let pool = PgPoolOptions::new()
            .max_connections(connections)
            .acquire_timeout(timeout)
            .connect_lazy(url)
            .map_err(|e| format!("DATABASE_URL: {e}"))?;
        Ok(Self { pool })
    }

    /// Applies pending migrations (sqlx takes an advisory lock, so concurrent instances agree).
    pub async fn migrate(&self) -> Result<(), DbError> {
        MIGRATOR.run(&self.pool).await.map_err(|e| match e {
            sqlx::migrate::MigrateError::Execute(e) => e.into(),
            other => DbError::Unavailable {
                reason: "migration_failed",
                answered: true,
                detail: other.to_string(),
            },
        })
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

    /// Whether the database takes inserts into the ledger table now: an insert of no rows, so
    /// a read-only database (25006), a missing table (42P01) or a lost privilege answers as it
    /// would for a real order, where a plain `SELECT 1` would pass.
    pub async fn ping(&self) -> Result<(), DbError> {
        sqlx::query("INSERT INTO seckill_orders SELECT * FROM seckill_orders WHERE false")
            .execute(&self.pool)
            .await?;
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
