//! The order ledger against a real PostgreSQL the harness starts (see `common::postgres`) and
//! real Redis / Redis Cluster: every sold order lands exactly once, across crashes, outages
//! and several ingesting instances.

mod common;

use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use futures::future::join_all;
use serde_json::{json, Value};
use sqlx::postgres::PgPoolOptions;
use sqlx::PgPool;

use common::poll::eventually;
use common::postgres::Postgres;
use common::{settings, shared_redis, Backend, Gateway};
use redis_gateway::settings::Settings;

/// Longest wait for the ingester to catch up: generous, since the machine is shared; the
/// assertions are about what lands, not how fast.
const CATCH_UP: Duration = Duration::from_secs(90);

fn shared_pg() -> &'static Postgres {
    static PG: OnceLock<Postgres> = OnceLock::new();
    PG.get_or_init(Postgres::start)
}

/// A fresh database on `pg`; returns its URL.
async fn database(pg: &Postgres) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let name = format!(
        "t{}_{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    );
    let admin = PgPoolOptions::new()
        .max_connections(1)
        .connect(&pg.url("postgres"))
        .await
        .expect("connect to the test PostgreSQL");
    sqlx::query(&format!("CREATE DATABASE {name}"))
        .execute(&admin)
        .await
        .expect("create a test database");
    admin.close().await;
    pg.url(&name)
}

async fn pool(url: &str) -> PgPool {
    PgPoolOptions::new()
        .max_connections(2)
        .connect(url)
        .await
        .expect("connect to the test database")
}

/// Polls `/readyz` until `pred` holds for the ledger object; returns it.
async fn ledger_until(gw: &Gateway, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
    let what = format!("the ledger {what}");
    eventually(CATCH_UP, &what, || async {
        let ledger = gw.get("/readyz").await.1["ledger"].clone();
        pred(&ledger).then_some(ledger)
    })
    .await
}

async fn admin_get(gw: &Gateway, path: &str) -> (u16, Value) {
    let (status, body) = gw.admin_get(path).await;
    (status.as_u16(), body)
}

fn ledger_settings(backend: Backend, url: &str) -> Settings {
    let mut s = settings(backend);
    s.ledger.database_url = Some(url.to_owned());
    s.ledger.claim_idle = Duration::from_millis(300);
    s.store_timeout = Duration::from_secs(10);
    s
}

fn open(stock: u64) -> Value {
    let at = |m: i64| {
        (Utc::now() + chrono::Duration::minutes(m)).to_rfc3339_opts(SecondsFormat::Millis, true)
    };
    json!({"stock": stock, "begin": at(-1), "end": at(60)})
}

async fn buy(gw: &Gateway, v: &str, user: u64) -> (u16, Value) {
    let (status, body) = gw
        .post(
            &format!("/v1/seckill/vouchers/{v}/orders"),
            json!({ "user_id": user }),
        )
        .await;
    (status.as_u16(), body)
}

/// The order ids the ledger holds for `voucher`, each with how often it occurs.
async fn ledger_ids(db: &PgPool, voucher: &str) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT order_id FROM seckill_orders WHERE voucher_id = $1 ORDER BY order_id",
    )
    .bind(voucher)
    .fetch_all(db)
    .await
    .unwrap_or_default()
}

/// Waits until the ledger holds `want` orders of `voucher` and the gateway reports no lag and
/// nothing pending; then returns the ids.
async fn caught_up(gw: &Gateway, db: &PgPool, voucher: &str, want: usize) -> Vec<String> {
    let what = format!("the ledger holds {want} orders of {voucher}, nothing behind");
    eventually(CATCH_UP, &what, || async {
        let ids = ledger_ids(db, voucher).await;
        let (_, ready) = gw.get("/readyz").await;
        let ledger = &ready["ledger"];
        (ids.len() >= want && ledger["lag"] == 0 && ledger["pending"] == 0).then_some(ids)
    })
    .await
}

/// Sells out a 50-unit voucher with 400 concurrent attempts spread over `gateways`.
async fn sell_out(gateways: &[&Gateway], voucher: &str) -> HashSet<String> {
    let (status, body) = gateways[0]
        .admin_put(&format!("/v1/seckill/vouchers/{voucher}"), open(50))
        .await;
    assert_eq!(status, 201, "{body}");
    let attempts =
        (0..400u64).map(|i| buy(gateways[i as usize % gateways.len()], voucher, i % 300));
    let won: HashSet<String> = join_all(attempts)
        .await
        .into_iter()
        .filter(|(s, _)| *s == 201)
        .map(|(_, b)| b["order_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(won.len(), 50);
    won
}

macro_rules! on_redis_and_cluster {
    ($($scenario:ident),* $(,)?) => {
        mod redis {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
               async fn $scenario() { super::$scenario(super::Backend::Redis).await } )*
        }
        mod cluster {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
               async fn $scenario() { super::$scenario(super::Backend::Cluster).await } )*
        }
    };
}

on_redis_and_cluster!(
    sold_out_voucher_lands_exactly,
    two_instances_no_duplicates_no_gaps
);

async fn sold_out_voucher_lands_exactly(backend: Backend) {
    let url = database(shared_pg()).await;
    let gw = Gateway::with_settings(ledger_settings(backend, &url)).await;
    let won = sell_out(&[&gw], "flash").await;
    let db = pool(&url).await;
    let ids = caught_up(&gw, &db, "flash", 50).await;
    assert_eq!(ids.len(), 50, "each order exactly once");
    assert_eq!(ids.into_iter().collect::<HashSet<_>>(), won);
    let (_, ready) = gw.get("/readyz").await;
    assert_eq!(ready["ledger"]["state"], "running");
    assert_eq!(ready["ledger"]["ingested"], 50);
    assert_eq!(ready["ledger"]["dead_lettered"], 0);
    // The rows carry what the sale said.
    let (user, nth): (i64, i32) =
        sqlx::query_as("SELECT user_id, nth FROM seckill_orders WHERE order_id = $1")
            .bind(won.iter().next().unwrap())
            .fetch_one(&db)
            .await
            .unwrap();
    assert!((0..300).contains(&user));
    assert_eq!(nth, 1);
    // Listings say each order is in the ledger.
    let (_, page) = gw.get("/v1/seckill/vouchers/flash/orders?limit=1000").await;
    let orders = page["orders"].as_array().unwrap();
    assert_eq!(orders.len(), 50);
    assert!(orders.iter().all(|o| o["ingested"] == true), "{page}");
    let buyer = orders[0]["user_id"].as_u64().unwrap();
    let (_, mine) = gw
        .get(&format!("/v1/seckill/vouchers/flash/orders/{buyer}"))
        .await;
    assert_eq!(mine["orders"][0]["ingested"], true);
}

async fn two_instances_no_duplicates_no_gaps(backend: Backend) {
    let url = database(shared_pg()).await;
    let first = ledger_settings(backend, &url);
    let mut second = ledger_settings(backend, &url);
    second.key_prefix = first.key_prefix.clone();
    let a = Gateway::with_settings(first).await;
    let b = Gateway::with_settings(second).await;
    let won = sell_out(&[&a, &b], "shared").await;
    let db = pool(&url).await;
    let ids = caught_up(&a, &db, "shared", 50).await;
    assert_eq!(ids.len(), 50);
    assert_eq!(ids.into_iter().collect::<HashSet<_>>(), won);
    // Each instance counts only rows it inserted: together exactly the 50, none twice.
    assert_eq!(ingested(&a).await + ingested(&b).await, 50);
    let (_, ready) = a.get("/readyz").await;
    assert_eq!(ready["ledger"]["dead_lettered"], 0);
}

async fn ingested(gw: &Gateway) -> u64 {
    gw.get("/readyz").await.1["ledger"]["ingested"]
        .as_u64()
        .unwrap()
}

/// An ingester that died after committing some rows but before acking them leaves entries
/// pending under its name; a live instance claims them after the idle time, and each order
/// still lands exactly once, with nothing left pending.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crash_between_insert_and_ack_is_recovered() {
    let url = database(shared_pg()).await;
    let db = pool(&url).await;
    sqlx::migrate!("./migrations").run(&db).await.unwrap();
    let mut seller = settings(Backend::Redis);
    seller.store_timeout = Duration::from_secs(10);
    let prefix = seller.key_prefix.clone();
    let mut ledger = ledger_settings(Backend::Redis, &url);
    ledger.key_prefix = prefix.clone();

    // Sell 20 with no ledger running.
    let shop = Gateway::with_settings(seller).await;
    let (status, _) = shop.admin_put("/v1/seckill/vouchers/crash", open(20)).await;
    assert_eq!(status, 201);
    let mut won = HashSet::new();
    for u in 0..20 {
        let (status, body) = buy(&shop, "crash", u).await;
        assert_eq!(status, 201);
        won.insert(body["order_id"].as_str().unwrap().to_owned());
    }

    // The crashed ingester: it read 10 entries, committed 5 rows, and died before acking.
    let redis = shared_redis();
    let stream = format!("{prefix}sk:{{crash}}:orders");
    redis
        .cli(&["XGROUP", "CREATE", &stream, "ledger", "0", "MKSTREAM"])
        .unwrap();
    let read = redis
        .cli(&[
            "XREADGROUP",
            "GROUP",
            "ledger",
            "crashed",
            "COUNT",
            "10",
            "STREAMS",
            &stream,
            ">",
        ])
        .unwrap();
    let lines: Vec<&str> = read.lines().map(str::trim).collect();
    let taken: Vec<(String, String)> = lines
        .iter()
        .enumerate()
        .filter(|(_, l)| is_stream_id(l))
        .map(|(i, id)| {
            let user = lines[i + 1..]
                .windows(2)
                .find(|w| w[0] == "user")
                .map(|w| w[1].to_owned())
                .unwrap();
            ((*id).to_owned(), user)
        })
        .collect();
    assert_eq!(taken.len(), 10, "{read}");
    for (id, user) in &taken[..5] {
        let ms: i64 = id.split('-').next().unwrap().parse().unwrap();
        sqlx::query(
            "INSERT INTO seckill_orders (order_id, voucher_id, user_id, nth, created_at) \
             VALUES ($1, 'crash', $2, 1, to_timestamp($3::float8 / 1000))",
        )
        .bind(format!("crash/{id}"))
        .bind(user.parse::<i64>().unwrap())
        .bind(ms as f64)
        .execute(&db)
        .await
        .unwrap();
    }
    let pending = redis.cli(&["XPENDING", &stream, "ledger"]).unwrap();
    assert!(pending.lines().next().unwrap().trim() == "10", "{pending}");

    // A live instance takes over.
    let live = Gateway::with_settings(ledger).await;
    let ids = caught_up(&live, &db, "crash", 20).await;
    assert_eq!(ids.len(), 20, "each order exactly once");
    assert_eq!(ids.into_iter().collect::<HashSet<_>>(), won);
    let pending = redis.cli(&["XPENDING", &stream, "ledger"]).unwrap();
    assert_eq!(pending.lines().next().unwrap().trim(), "0", "{pending}");
    let (_, ready) = live.get("/readyz").await;
    assert_eq!(
        ready["ledger"]["ingested"], 15,
        "the 5 committed rows were not inserted again"
    );
    assert_eq!(
        ready["ledger"]["dead_lettered"], 0,
        "already-committed rows are acked, not refused"
    );
}

fn is_stream_id(s: &str) -> bool {
    s.split_once('-').is_some_and(|(a, b)| {
        !a.is_empty()
            && !b.is_empty()
            && a.bytes().all(|c| c.is_ascii_digit())
            && b.bytes().all(|c| c.is_ascii_digit())
            && a.len() >= 10
    })
}

/// Long enough for more than 5 claim cycles at the tests' 300 ms claim idle time: under the
/// old delivery counting every pending order would have been dead-lettered by then.
const OVER_FIVE_CLAIM_CYCLES: Duration = Duration::from_millis(3_500);

/// PostgreSQL stops mid-sale for longer than 5 claim cycles, comes back read-only (a promoted
/// replica, read-only maintenance) for longer than 5 more, then writable: nothing is
/// dead-lettered, every order lands once, and `/readyz` tells the truth throughout (true lag
/// during the outage, `failing` with `read_only` while writes are refused).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outage_then_read_only_dead_letters_nothing() {
    let mut pg = Postgres::start();
    let url = database(&pg).await;
    let name = url.rsplit('/').next().unwrap().to_owned();
    let gw = Gateway::with_settings(ledger_settings(Backend::Redis, &url)).await;
    let (status, _) = gw.admin_put("/v1/seckill/vouchers/out", open(40)).await;
    assert_eq!(status, 201);
    let mut won = HashSet::new();
    for u in 0..10 {
        won.insert(
            buy(&gw, "out", u).await.1["order_id"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    {
        let db = pool(&url).await;
        caught_up(&gw, &db, "out", 10).await;
        db.close().await;
    }
    // Sessions opened after the outage are read-only; those before it are cut by it.
    as_admin(
        &pg,
        &name,
        &format!("ALTER DATABASE {name} SET default_transaction_read_only = on"),
    )
    .await;

    pg.stop();
    for u in 10..30 {
        let (status, body) = buy(&gw, "out", u).await;
        assert_eq!(status, 201, "sales go on without the ledger: {body}");
        won.insert(body["order_id"].as_str().unwrap().to_owned());
    }
    let ledger = ledger_until(&gw, "backing off with the true lag", |l| {
        l["state"] == "backing_off" && l["lag"] == 20
    })
    .await;
    assert_eq!(ledger["reason"], "unavailable", "{ledger}");
    assert!(
        ledger.get("last_error").is_none(),
        "no raw error text: {ledger}"
    );
    // Listings still answer; the orders sold during the outage are not ingested yet.
    let (status, page) = gw.get("/v1/seckill/vouchers/out/orders").await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["orders"].as_array().unwrap().len(), 30);
    assert!(page["orders"][29]["ingested"] != true, "{page}");
    // Real time: the gateway's claim cycles, on its own timers.
    tokio::time::sleep(OVER_FIVE_CLAIM_CYCLES).await;
    let (_, ready) = gw.get("/readyz").await;
    assert_eq!(ready["ledger"]["lag"], 20, "{ready}");
    assert_eq!(ready["ledger"]["dead_lettered"], 0, "{ready}");

    pg.restart();
    let ledger = ledger_until(&gw, "failing read-only", |l| l["state"] == "failing").await;
    assert_eq!(ledger["reason"], "read_only", "{ledger}");
    for u in 30..35 {
        let (status, body) = buy(&gw, "out", u).await;
        assert_eq!(status, 201, "{body}");
        won.insert(body["order_id"].as_str().unwrap().to_owned());
    }
    // Real time: the gateway's claim cycles, on its own timers.
    tokio::time::sleep(OVER_FIVE_CLAIM_CYCLES).await;
    let ledger = ledger_until(&gw, "counting the read-only backlog", |l| l["lag"] == 25).await;
    assert_eq!(ledger["state"], "failing", "{ledger}");
    assert_eq!(ledger["reason"], "read_only", "{ledger}");
    assert_eq!(
        ledger["dead_lettered"], 0,
        "read-only is not the orders' fault: {ledger}"
    );
    assert!(ledger.get("last_error").is_none(), "{ledger}");

    as_admin(
        &pg,
        &name,
        &format!("ALTER DATABASE {name} RESET default_transaction_read_only"),
    )
    .await;
    let db = pool(&url).await;
    let ids = caught_up(&gw, &db, "out", 35).await;
    assert_eq!(ids.len(), 35, "each order exactly once");
    assert_eq!(ids.into_iter().collect::<HashSet<_>>(), won);
    let (_, ready) = gw.get("/readyz").await;
    assert_eq!(ready["ledger"]["state"], "running", "{ready}");
    assert!(ready["ledger"].get("reason").is_none(), "{ready}");
    assert_eq!(ready["ledger"]["dead_lettered"], 0);
    let (status, dead) = admin_get(&gw, "/v1/seckill/vouchers/out/dead-letters").await;
    assert_eq!(status, 200, "{dead}");
    assert_eq!(dead, json!({"dead_letters": [], "next": null}));
    let (_, page) = gw.get("/v1/seckill/vouchers/out/orders").await;
    assert!(page["orders"]
        .as_array()
        .unwrap()
        .iter()
        .all(|o| o["ingested"] == true));
}

/// An order the database keeps refusing (here: the same user's first order is already there
/// under another id) is retried, then dead-lettered; the others land.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_orders_are_dead_lettered() {
    let url = database(shared_pg()).await;
    let db = pool(&url).await;
    sqlx::migrate!("./migrations").run(&db).await.unwrap();
    sqlx::query(
        "INSERT INTO seckill_orders (order_id, voucher_id, user_id, nth, created_at) \
         VALUES ('dl/1-0', 'dl', 7, 1, now())",
    )
    .execute(&db)
    .await
    .unwrap();
    let s = ledger_settings(Backend::Redis, &url);
    let prefix = s.key_prefix.clone();
    let gw = Gateway::with_settings(s).await;
    let (status, _) = gw.admin_put("/v1/seckill/vouchers/dl", open(5)).await;
    assert_eq!(status, 201);
    let mut good = HashSet::new();
    for u in [5, 6, 7, 8] {
        let (status, body) = buy(&gw, "dl", u).await;
        assert_eq!(status, 201);
        if u != 7 {
            good.insert(body["order_id"].as_str().unwrap().to_owned());
        }
    }
    ledger_until(&gw, "dead-letters one order", |l| {
        l["dead_lettered"] == 1 && l["pending"] == 0
    })
    .await;
    let ids: HashSet<String> = ledger_ids(&db, "dl").await.into_iter().collect();
    good.insert("dl/1-0".to_owned());
    assert_eq!(ids, good);
    let dead = shared_redis()
        .cli(&["XRANGE", &format!("{prefix}sk:{{dl}}:dead"), "-", "+"])
        .unwrap();
    assert!(
        dead.contains("reason") && dead.contains("unique_violation"),
        "a reason code, not raw text: {dead}"
    );

    // The admin sees it, with its order and reason...
    let (status, page) = gw.get("/v1/seckill/vouchers/dl/dead-letters").await;
    assert_eq!(status, 401, "admin only");
    let listed = admin_get(&gw, "/v1/seckill/vouchers/dl/dead-letters")
        .await
        .1;
    let letters = listed["dead_letters"].as_array().unwrap();
    assert_eq!(letters.len(), 1, "{listed} {page}");
    assert_eq!(letters[0]["user_id"], 7);
    assert_eq!(letters[0]["reason"], "unique_violation");
    assert_eq!(
        letters[0]["attempts"], 5,
        "refused 5 times, each a real attempt"
    );
    assert!(letters[0]["dead_lettered_at"].is_string(), "{listed}");
    assert_eq!(listed["next"], Value::Null);
    let (status, _) = admin_get(&gw, "/v1/seckill/vouchers/nope/dead-letters").await;
    assert_eq!(status, 404);
    let (status, _) = admin_get(&gw, "/v1/seckill/vouchers/dl/dead-letters?limit=0").await;
    assert_eq!(status, 400);
    let order_id = letters[0]["order_id"].as_str().unwrap().to_owned();
    // ...fixes the cause, and replays: the order lands, once.
    sqlx::query("DELETE FROM seckill_orders WHERE order_id = 'dl/1-0'")
        .execute(&db)
        .await
        .unwrap();
    let (status, replay) = gw
        .admin_post("/v1/seckill/vouchers/dl/dead-letters/replay", json!({}))
        .await;
    assert_eq!(
        (status.as_u16(), replay["replayed"].as_u64()),
        (200, Some(1)),
        "{replay}"
    );
    let ids: HashSet<String> = ledger_ids(&db, "dl").await.into_iter().collect();
    assert!(ids.contains(&order_id), "{ids:?}");
    let (_, again) = gw
        .admin_post("/v1/seckill/vouchers/dl/dead-letters/replay", json!({}))
        .await;
    assert_eq!(again["replayed"], 0);
    let listed = admin_get(&gw, "/v1/seckill/vouchers/dl/dead-letters")
        .await
        .1;
    assert_eq!(listed["dead_letters"], json!([]));
    let rows: i64 = sqlx::query_scalar("SELECT count(*) FROM seckill_orders WHERE order_id = $1")
        .bind(&order_id)
        .fetch_one(&db)
        .await
        .unwrap();
    assert_eq!(rows, 1, "lands once");
    let (_, ready) = gw.get("/readyz").await;
    assert_eq!(ready["ledger"]["state"], "running", "{ready}");
}

/// Runs `sql` on the server's `postgres` database (never itself read-only), then ends every
/// session of `db` so the gateway's pool reconnects under the new settings.
async fn as_admin(pg: &Postgres, db: &str, sql: &str) {
    let admin = PgPoolOptions::new()
        .max_connections(1)
        .connect(&pg.url("postgres"))
        .await
        .unwrap();
    sqlx::query(sql).execute(&admin).await.unwrap();
    sqlx::query("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1")
        .bind(db)
        .execute(&admin)
        .await
        .unwrap();
    admin.close().await;
}

/// Waits until `/readyz` shows the ledger `failing` with `reason`, holding at least `behind`
/// orders as lag or pending; returns that ledger object.
async fn failing_with(gw: &Gateway, reason: &str, behind: u64) -> Value {
    let what = format!("fails with {reason}, {behind} behind");
    ledger_until(gw, &what, |l| {
        l["state"] == "failing" && l["reason"] == reason && l["lag"].as_u64().unwrap_or(0) >= behind
    })
    .await
}

/// Waits until PostgreSQL has refused more writes in database `db` (errors saying `what`) than
/// an order may be delivered before it is dead-lettered: that many rounds of the ingester,
/// however long its back-off makes them.
async fn refused_rounds(pg: &Postgres, db: &str, what: &str) {
    let rounds = redis_gateway::ledger::MAX_ATTEMPTS as usize + 2;
    let refused = format!("{rounds} writes refused with {what}");
    common::poll::eventually_holds(CATCH_UP, &refused, || pg.errors(db, what) >= rounds).await;
}

/// A database that answers but refuses every insert — read-only (a promoted replica, a
/// maintenance window), or its table renamed — is an outage of the database, not a fault of
/// the orders: for many claim rounds nothing is dead-lettered, `/readyz` says `failing` with a
/// reason code and the true backlog, and every order lands once the database is writable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_only_or_broken_database_never_dead_letters_good_orders() {
    let pg = shared_pg();
    let url = database(pg).await;
    let name = url.rsplit('/').next().unwrap().to_owned();
    let db = pool(&url).await;
    let gw = Gateway::with_settings(ledger_settings(Backend::Redis, &url)).await;
    let (status, _) = gw.admin_put("/v1/seckill/vouchers/ro", open(40)).await;
    assert_eq!(status, 201);
    for u in 0..2 {
        assert_eq!(buy(&gw, "ro", u).await.0, 201);
    }
    caught_up(&gw, &db, "ro", 2).await;
    db.close().await;

    as_admin(
        pg,
        &name,
        &format!("ALTER DATABASE {name} SET default_transaction_read_only = on"),
    )
    .await;
    for u in 2..12 {
        assert_eq!(buy(&gw, "ro", u).await.0, 201);
    }
    let l = failing_with(&gw, "read_only", 10).await;
    assert_eq!(l["dead_lettered"], 0);
    refused_rounds(pg, &name, "read-only transaction").await;
    let (_, ready) = gw.get("/readyz").await;
    assert_eq!(ready["ledger"]["dead_lettered"], 0, "{ready}");
    assert_eq!(ready["ledger"]["state"], "failing");

    as_admin(
        pg,
        &name,
        &format!("ALTER DATABASE {name} SET default_transaction_read_only = off"),
    )
    .await;
    let db = pool(&url).await;
    assert_eq!(caught_up(&gw, &db, "ro", 12).await.len(), 12);

    // A migration gone wrong: the table is not there under its name.
    sqlx::query("ALTER TABLE seckill_orders RENAME TO seckill_orders_moved")
        .execute(&db)
        .await
        .unwrap();
    for u in 12..15 {
        assert_eq!(buy(&gw, "ro", u).await.0, 201);
    }
    failing_with(&gw, "undefined_table", 3).await;
    refused_rounds(pg, &name, "relation \"seckill_orders\" does not exist").await;
    sqlx::query("ALTER TABLE seckill_orders_moved RENAME TO seckill_orders")
        .execute(&db)
        .await
        .unwrap();
    assert_eq!(caught_up(&gw, &db, "ro", 15).await.len(), 15);
    let (_, ready) = gw.get("/readyz").await;
    assert_eq!(ready["ledger"]["dead_lettered"], 0, "{ready}");
    assert_eq!(ready["ledger"]["state"], "running");
}

/// Without DATABASE_URL (or on the memory backend) the ledger is off and says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ledger_is_off_without_a_database_or_redis() {
    let gw = Gateway::start(Backend::Redis).await;
    let (_, ready) = gw.get("/readyz").await;
    assert_eq!(ready["ledger"]["state"], "off");
    let mut s = settings(Backend::Memory);
    s.ledger.database_url = Some("postgres://nobody@127.0.0.1:1/none".to_owned());
    let gw = Gateway::with_settings(s).await;
    let (_, ready) = gw.get("/readyz").await;
    assert_eq!(ready["ledger"]["state"], "off");
    // The admin routes answer alike without a ledger: nothing dead-lettered, nothing to replay.
    let (status, _) = gw.admin_put("/v1/seckill/vouchers/m", open(5)).await;
    assert_eq!(status, 201);
    let (status, page) = admin_get(&gw, "/v1/seckill/vouchers/m/dead-letters").await;
    assert_eq!(
        (status, page),
        (200, json!({"dead_letters": [], "next": null}))
    );
    let (status, body) = gw
        .admin_post("/v1/seckill/vouchers/m/dead-letters/replay", json!({}))
        .await;
    assert_eq!((status.as_u16(), body), (200, json!({"replayed": 0})));
    let (status, _) = admin_get(&gw, "/v1/seckill/vouchers/none/dead-letters").await;
    assert_eq!(status, 404);
}

/// The stream cap is the voucher's own, fixed when it was admitted: a gateway restarted (or a
/// second instance run) with a lower `GATEWAY_SECKILL_MAX_ORDERS` trims no order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lower_cap_setting_trims_no_order() {
    let s = settings(Backend::Redis);
    let a = Gateway::with_settings(s.clone()).await;
    let (status, _) = a.admin_put("/v1/seckill/vouchers/capped", open(30)).await;
    assert_eq!(status, 201);
    for u in 0..10 {
        assert_eq!(buy(&a, "capped", u).await.0, 201);
    }
    let mut low = s;
    low.seckill.max_orders = 5;
    let b = Gateway::with_settings(low).await;
    for u in 10..20 {
        assert_eq!(buy(&b, "capped", u).await.0, 201);
    }
    let (status, page) = b.get("/v1/seckill/vouchers/capped/orders?limit=100").await;
    assert_eq!(status, 200);
    assert_eq!(page["orders"].as_array().unwrap().len(), 20, "{page}");
}
