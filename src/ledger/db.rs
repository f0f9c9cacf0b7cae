//! The ledger's [`Sink`] in PostgreSQL (through sqlx): migrations, the idempotent insert, the
//! request path's lookup of which orders are in, and the classification of what went wrong by
//! SQLSTATE.

use std::str::FromStr;
use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};

use super::sink::{Fault, Sink, SinkError};
use super::Row;

/// Embedded `migrations/`, applied at start-up.
static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

/// Connections of the ingester's pool.
const WRITE_CONNECTIONS: u32 = 4;
/// Connections of the request-path pool (listings asking which orders are in): its own, so a
/// flood of listings waits on itself and never on the ingester's connections.
const READ_CONNECTIONS: u32 = 2;

/// Classifies a SQLSTATE. Only classes 22 and 23 belong to the row; every other class is the
/// database's (an unknown one too: wrongly waiting is recoverable, wrongly dead-lettering a
/// good order needs a human).
pub(crate) fn classify_sqlstate(code: &str) -> Fault {
    let class = code.get(..2).unwrap_or("");
    match (class, code) {
        (_, "23505") => Fault::Row("unique_violation"),
        (_, "23502") => Fault::Row("not_null_violation"),
        (_, "23503") => Fault::Row("foreign_key_violation"),
        (_, "23514") => Fault::Row("check_violation"),
        (_, "23P01") => Fault::Row("exclusion_violation"),
        ("23", _) => Fault::Row("integrity_violation"),
        (_, "22001") => Fault::Row("value_too_long"),
        (_, "22003") => Fault::Row("numeric_out_of_range"),
        ("22", _) => Fault::Row("data_exception"),
        // Cannot (stay) connected: the server is down, starting, shutting down, or full.
        ("08", _) | (_, "57P01" | "57P02" | "57P03") => Fault::Unreachable("unavailable"),
        (_, "53300") => Fault::Unreachable("too_many_connections"),
        ("28", _) => Fault::Unreachable("authentication_failed"),
        (_, "3D000") => Fault::Unreachable("unknown_database"),
        // A hot standby, a promoted replica's twin, `default_transaction_read_only`.
        (_, "25006") => Fault::Refusing("read_only"),
        ("25", _) => Fault::Refusing("invalid_transaction_state"),
        (_, "42P01") => Fault::Refusing("undefined_table"),
        (_, "42703") => Fault::Refusing("undefined_column"),
        (_, "42501") => Fault::Refusing("permission_denied"),
        ("42", _) => Fault::Refusing("schema_mismatch"),
        ("53", _) => Fault::Refusing("insufficient_resources"),
        ("54", _) => Fault::Refusing("program_limit_exceeded"),
        (_, "55P03") => Fault::Refusing("lock_not_available"),
        (_, "57014") => Fault::Refusing("timeout"),
        ("57", _) => Fault::Refusing("operator_intervention"),
        ("40", _) => Fault::Refusing("transaction_rollback"),
        ("58", _) => Fault::Refusing("system_error"),
        ("XX", _) => Fault::Refusing("internal_error"),
        _ => Fault::Refusing("database_error"),
    }
}

/// The fault of a sqlx error.
fn fault(e: &sqlx::Error) -> Fault {
    match e {
        sqlx::Error::Database(db) => db
            .code()
            .map_or(Fault::Refusing("database_error"), |c| classify_sqlstate(&c)),
        sqlx::Error::Io(_)
        | sqlx::Error::Tls(_)
        | sqlx::Error::Protocol(_)
        | sqlx::Error::PoolTimedOut
        | sqlx::Error::PoolClosed
        | sqlx::Error::WorkerCrashed => Fault::Unreachable("unavailable"),
        // Decoding, configuration, a driver surprise: nothing about one row.
        _ => Fault::Refusing("client_error"),
    }
}

impl From<sqlx::Error> for SinkError {
    fn from(e: sqlx::Error) -> Self {
        Self::new(fault(&e), e.to_string())
    }
}

impl From<sqlx::migrate::MigrateError> for SinkError {
    fn from(e: sqlx::migrate::MigrateError) -> Self {
        use sqlx::migrate::MigrateError::{Execute, ExecuteMigration};
        let fault = match &e {
            Execute(inner) | ExecuteMigration(inner, _) => fault(inner),
            _ => Fault::Refusing("migration_failed"),
        };
        Self::new(fault, e.to_string())
    }
}

/// Cheap-clone handles to the ledger database: the ingester's pool, and a separate small pool
/// for the request path.
#[derive(Debug, Clone)]
pub(crate) struct Db {
    pool: PgPool,
    reads: PgPool,
    /// Longest a write may take: past it the database counts as refusing (`timeout`).
    timeout: Duration,
    options: PgConnectOptions,
}

impl Db {
    /// Builds the pools without connecting: the gateway starts even while PostgreSQL is down.
    pub fn connect_lazy(
        url: &str,
        timeout: Duration,
        read_timeout: Duration,
    ) -> Result<Self, String> {
        let options = PgConnectOptions::from_str(url).map_err(|e| format!("DATABASE_URL: {e}"))?;
        // The server cancels a statement that outlives the client's patience (57014), so a
        // timed-out insert does not keep running and holding its connection.
        let ms = |d: Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX).to_string();
        let pool = PgPoolOptions::new()
            .max_connections(WRITE_CONNECTIONS)
            .acquire_timeout(timeout)
            .connect_lazy_with(
                options
                    .clone()
                    .options([("statement_timeout", ms(timeout))]),
            );
        let reads = PgPoolOptions::new()
            .max_connections(READ_CONNECTIONS)
            .acquire_timeout(read_timeout)
            .connect_lazy_with(
                options
                    .clone()
                    .options([("statement_timeout", ms(read_timeout))]),
            );
        Ok(Self {
            pool,
            reads,
            timeout,
            options,
        })
    }

    /// Which of `order_ids` are in the ledger (request path: the read pool).
    pub async fn present(&self, order_ids: &[String]) -> Result<Vec<String>, SinkError> {
        Ok(
            sqlx::query_scalar("SELECT order_id FROM seckill_orders WHERE order_id = ANY($1)")
                .bind(order_ids)
                .fetch_all(&self.reads)
                .await?,
        )
    }
}

impl Sink for Db {
    /// Applies pending migrations (sqlx takes an advisory lock, so concurrent instances agree),
    /// through a one-connection pool of its own without the statement timeout: a migration may
    /// take long. It is closed afterwards.
    async fn migrate(&self) -> Result<(), SinkError> {
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .acquire_timeout(self.timeout)
            .connect_lazy_with(self.options.clone());
        let done = MIGRATOR.run(&pool).await;
        pool.close().await;
        Ok(done?)
    }

    /// With no rows the statement still parses, plans and checks writability and privileges,
    /// inserting nothing: the probe the ingester runs before it takes orders.
    async fn insert(&self, rows: &[Row]) -> Result<u64, SinkError> {
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
        let insert = sqlx::query(
            "INSERT INTO seckill_orders (order_id, voucher_id, user_id, nth, created_at) \
             SELECT * FROM UNNEST($1::text[], $2::text[], $3::bigint[], $4::int[], $5::timestamptz[]) \
             ON CONFLICT (order_id) DO NOTHING",
        )
        .bind(ids)
        .bind(vouchers)
        .bind(users)
        .bind(nths)
        .bind(times)
        .execute(&self.pool);
        // The server-side statement timeout covers a slow statement; this covers a server that
        // stopped answering altogether.
        match tokio::time::timeout(self.timeout + Duration::from_secs(1), insert).await {
            Ok(done) => Ok(done?.rows_affected()),
            Err(_) => Err(SinkError::new(
                Fault::Refusing("timeout"),
                "insert timed out",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_data_and_integrity_errors_belong_to_the_row() {
        for code in [
            "23505", "23502", "23503", "23514", "23P01", "23000", "22001", "22P02",
        ] {
            assert!(matches!(classify_sqlstate(code), Fault::Row(_)), "{code}");
        }
        for code in [
            "25006", "42P01", "42703", "42501", "42601", "53100", "53200", "57014", "57000",
            "58030", "XX000", "XX001", "40001", "40P01", "55P03", "54000", "0A000", "P0001", "",
        ] {
            assert!(
                matches!(classify_sqlstate(code), Fault::Refusing(_)),
                "{code}"
            );
        }
        for code in [
            "08006", "08001", "57P01", "57P03", "53300", "28P01", "3D000",
        ] {
            assert!(
                matches!(classify_sqlstate(code), Fault::Unreachable(_)),
                "{code}"
            );
        }
    }

    #[test]
    fn reasons_are_codes() {
        assert_eq!(classify_sqlstate("25006").reason(), "read_only");
        assert_eq!(classify_sqlstate("42P01").reason(), "undefined_table");
        assert_eq!(classify_sqlstate("57014").reason(), "timeout");
        assert_eq!(
            classify_sqlstate("53100").reason(),
            "insufficient_resources"
        );
        assert_eq!(classify_sqlstate("08006").reason(), "unavailable");
        assert_eq!(classify_sqlstate("23505").reason(), "unique_violation");
        assert_eq!(
            fault(&sqlx::Error::PoolTimedOut),
            Fault::Unreachable("unavailable")
        );
    }
}
