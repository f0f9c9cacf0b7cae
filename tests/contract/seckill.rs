//! Flash-sale scenarios (docs/api.md "Flash sale (seckill)").

use std::collections::{HashMap, HashSet};

use chrono::{Duration, SecondsFormat, Utc};
use futures::future::join_all;
use serde_json::{json, Value};

use crate::common::{settings, Backend, Gateway};

fn at(offset: Duration) -> String {
    (Utc::now() + offset).to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A voucher on sale now, for an hour.
fn open(stock: u64, per_user_limit: u64) -> Value {
    json!({
        "stock": stock,
        "begin": at(Duration::minutes(-1)),
        "end": at(Duration::hours(1)),
        "per_user_limit": per_user_limit,
    })
}

fn voucher_path(v: &str) -> String {
    format!("/v1/seckill/vouchers/{v}")
}

async fn create(gw: &Gateway, v: &str, body: Value) -> Value {
    let (status, view) = gw.admin_put(&voucher_path(v), body).await;
    assert_eq!(status, 201, "{view}");
    view
}

async fn buy(gw: &Gateway, v: &str, user: u64) -> (u16, Value) {
    let (status, body) = gw
        .post(
            &format!("{}/orders", voucher_path(v)),
            json!({ "user_id": user }),
        )
        .await;
    (status.as_u16(), body)
}

/// Every order of `v`, following the cursors with pages of `limit`.
async fn all_orders(gw: &Gateway, v: &str, limit: usize) -> Vec<Value> {
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let path = match &after {
            Some(a) => format!("{}/orders?limit={limit}&after={a}", voucher_path(v)),
            None => format!("{}/orders?limit={limit}", voucher_path(v)),
        };
        let (status, page) = gw.get(&path).await;
        assert_eq!(status, 200, "{page}");
        let orders = page["orders"].as_array().unwrap();
        assert!(orders.len() <= limit);
        out.extend(orders.iter().cloned());
        match page["next"].as_str() {
            Some(n) => after = Some(n.to_owned()),
            None => return out,
        }
    }
}

crate::contract_tests!(
    concurrent_sale_never_oversells,
    voucher_lifecycle_and_replace,
    windows_refuse_outside_the_sale,
    restock_is_exact_under_concurrent_buys,
    stock_never_exceeds_the_cap,
    per_user_limit_and_listing,
    orders_page_with_cursors,
    unknown_voucher_is_404,
    admin_routes_need_the_token,
    bad_inputs_are_problems,
    retries_with_an_idempotency_key_buy_once,
    a_burst_of_distinct_buyers_sells_the_stock_once,
    one_users_concurrent_purchases_buy_once,
    documented_bounds_are_the_enforced_ones,
    an_unknown_api_key_is_a_documented_401,
    a_purchase_key_is_its_buyers_as_documented,
    vouchers_are_listed_by_begin_in_pages,
    the_listing_filters_by_status_as_time_passes,
    a_listing_never_shows_a_voucher_missing_nor_misses_one,
    the_listing_refuses_bad_pages,
    vouchers_written_before_the_index_are_listed,
);

/// A voucher's and a restock's bounds (`stock` from 0, `per_user_limit` 1–1,000, `quantity`
/// from 1; the upper bound of stock and quantity is the configured cap) are the served OpenAPI
/// document's.
async fn documented_bounds_are_the_enforced_ones(backend: Backend) {
    let gw = Gateway::start(backend).await;
    create(&gw, "bounds", open(1, 1)).await;
    let path = voucher_path("bounds");
    for (field, bounds) in [("stock", (0, None)), ("per_user_limit", (1, Some(1_000)))] {
        crate::documented_bounds_hold(
            &gw,
            (reqwest::Method::PUT, path.as_str()),
            "VoucherBody",
            field,
            bounds,
            |v| {
                let mut body = open(1, 1);
                body[field] = v;
                body
            },
        )
        .await;
    }
    let restock = format!("{path}/restock");
    crate::documented_bounds_hold(
        &gw,
        (reqwest::Method::POST, restock.as_str()),
        "RestockBody",
        "quantity",
        (1, None),
        |v| json!({ "quantity": v }),
    )
    .await;
}

async fn an_unknown_api_key_is_a_documented_401(backend: Backend) {
    crate::unknown_api_keys_are_a_documented_401(backend, "/v1/seckill/").await;
}

/// A purchase's `Idempotency-Key` is its buyer's (docs/clients.md "Retries: `Idempotency-Key`"):
/// the same string sent for another buyer is that buyer's own key and buys, so the body under
/// one key never differs and the route has no 422 to give, nor to document.
async fn a_purchase_key_is_its_buyers_as_documented(backend: Backend) {
    let gw = Gateway::start(backend).await;
    create(&gw, "keys", open(5, 1)).await;
    let (status, _, first) = buy_once(&gw, "keys", 7, "one-key").await;
    assert_eq!(status, 201, "{first}");
    let (status, replayed, second) = buy_once(&gw, "keys", 8, "one-key").await;
    assert_eq!((status, replayed), (201, false), "{second}");
    assert_ne!(first["order_id"], second["order_id"]);
    let doc = crate::served_document(&gw).await;
    let buy = &doc["paths"]["/v1/seckill/vouchers/{voucher_id}/orders"]["post"];
    assert_eq!(buy["operationId"], "seckillBuy");
    assert!(
        buy["responses"].get("422").is_none(),
        "seckillBuy documents a 422 it never gives: {}",
        buy["responses"]["422"]
    );
}

/// A gateway for the concurrency scenarios: hundreds of requests land at once on a small,
/// shared test machine, so the store timeout is generous; these tests check correctness only.
async fn patient_gateway(backend: Backend) -> Gateway {
    let mut s = settings(backend);
    s.store_timeout = std::time::Duration::from_secs(10);
    Gateway::with_settings(s).await
}

async fn concurrent_sale_never_oversells(backend: Backend) {
    let gw = patient_gateway(backend).await;
    create(&gw, "flash", open(50, 1)).await;
    // 300 distinct users; the first 100 of them try twice: 400 attempts at once.
    let users: Vec<u64> = (0..400u64).map(|i| 1000 + i % 300).collect();
    let replies = join_all(users.iter().map(|u| buy(&gw, "flash", *u))).await;

    let mut won: Vec<String> = Vec::new();
    let mut per_user: HashMap<u64, usize> = HashMap::new();
    let mut winners = HashSet::new();
    for (user, (status, body)) in users.iter().zip(&replies) {
        if *status == 201 {
            assert_eq!(body["user_id"], *user);
            assert_eq!(body["voucher_id"], "flash");
            won.push(body["order_id"].as_str().unwrap().to_owned());
            *per_user.entry(*user).or_default() += 1;
            winners.insert(*user);
        }
    }
    assert_eq!(won.len(), 50, "exactly the stock is sold");
    assert!(per_user.values().all(|n| *n == 1), "no user over the limit");
    for (user, (status, body)) in users.iter().zip(&replies) {
        if *status == 201 {
            continue;
        }
        assert_eq!(*status, 409, "{body}");
        match body["code"].as_str().unwrap() {
            "sold_out" => {}
            "already_ordered" => {
                assert!(
                    winners.contains(user),
                    "already_ordered to a non-buyer: {body}"
                );
                assert_eq!(body["order_ids"].as_array().unwrap().len(), 1);
            }
            other => panic!("unexpected refusal {other}: {body}"),
        }
    }

    let listed: Vec<String> = all_orders(&gw, "flash", 1000)
        .await
        .iter()
        .map(|o| o["order_id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed.len(), 50);
    let won_set: HashSet<&String> = won.iter().collect();
    assert_eq!(won_set.len(), 50, "order ids are unique");
    assert_eq!(listed.iter().collect::<HashSet<_>>(), won_set);

    let (_, v) = gw.get(&voucher_path("flash")).await;
    assert_eq!(v["stock"], 0);
    assert_eq!(v["sold"], 50);
    assert_eq!(v["status"], "sold_out");
}

/// 200 distinct buyers at once on stock 50 of one voucher: exactly 50 sold, one per
/// buyer, every order listed once, in sale order; every other buyer is told `sold_out`. (The
/// Redis backend sends the purchases of one voucher that a worker takes up in one turn as one
/// script run, `src/seckill/redis/buy.rs`: a reply given another purchase's place fails this.)
async fn a_burst_of_distinct_buyers_sells_the_stock_once(backend: Backend) {
    let gw = patient_gateway(backend).await;
    create(&gw, "burst", open(50, 1)).await;
    let users: Vec<u64> = (0..200u64).map(|i| 5000 + i).collect();
    let replies = join_all(users.iter().map(|u| buy(&gw, "burst", *u))).await;

    let mut won: HashMap<String, u64> = HashMap::new();
    for (user, (status, body)) in users.iter().zip(&replies) {
        match status {
            201 => {
                assert_eq!(body["user_id"], *user, "{body}");
                let id = body["order_id"].as_str().unwrap().to_owned();
                assert!(won.insert(id, *user).is_none(), "an order id twice: {body}");
            }
            409 => assert_eq!(body["code"], "sold_out", "{body}"),
            _ => panic!("unexpected {status}: {body}"),
        }
    }
    assert_eq!(won.len(), 50, "exactly the stock is sold");
    assert_eq!(
        won.values().collect::<HashSet<_>>().len(),
        50,
        "one order per buyer"
    );

    let listed = all_orders(&gw, "burst", 1000).await;
    assert_eq!(listed.len(), 50, "every order listed once");
    let seqs: Vec<(u64, u64)> = listed
        .iter()
        .map(|o| {
            let id = o["order_id"].as_str().unwrap();
            assert_eq!(won.get(id), o["user_id"].as_u64().as_ref(), "{o}");
            let (ms, seq) = id.trim_start_matches("burst/").split_once('-').unwrap();
            (ms.parse().unwrap(), seq.parse().unwrap())
        })
        .collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "listed in sale order: {listed:?}"
    );
    let (_, v) = gw.get(&voucher_path("burst")).await;
    assert_eq!(
        (v["stock"].as_u64(), v["sold"].as_u64()),
        (Some(0), Some(50))
    );
}

/// One user sending 12 purchases at once (limit 1): exactly one is sold, and every other is
/// the `already_ordered` refusal naming it; 6 more at once under one Idempotency-Key all get
/// that key's single outcome (a limit of 2 lets the key's purchase buy), so 2 orders in all.
async fn one_users_concurrent_purchases_buy_once(backend: Backend) {
    let gw = patient_gateway(backend).await;
    create(&gw, "mine", open(50, 1)).await;
    let replies = join_all((0..12).map(|_| buy(&gw, "mine", 42))).await;
    let won: Vec<&Value> = replies
        .iter()
        .filter(|(s, _)| *s == 201)
        .map(|(_, b)| b)
        .collect();
    assert_eq!(won.len(), 1, "{replies:?}");
    let id = &won[0]["order_id"];
    for (status, body) in &replies {
        if *status != 201 {
            assert_eq!(
                (*status, body["code"].as_str()),
                (409, Some("already_ordered")),
                "{body}"
            );
            assert_eq!(body["order_ids"], json!([id]), "{body}");
        }
    }

    let (status, _) = gw.admin_put(&voucher_path("mine"), open(49, 2)).await;
    assert_eq!(status, 200);
    let keyed = join_all((0..6).map(|_| buy_once(&gw, "mine", 42, "same-key"))).await;
    crate::applied_once(&keyed, 201);
    let orders = all_orders(&gw, "mine", 100).await;
    assert_eq!(orders.len(), 2, "{orders:?}");
    let (_, v) = gw.get(&voucher_path("mine")).await;
    assert_eq!(
        (v["stock"].as_u64(), v["sold"].as_u64()),
        (Some(48), Some(2))
    );
}

async fn voucher_lifecycle_and_replace(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let body = json!({
        "stock": 3,
        "begin": "2020-01-01T00:00:00Z",
        "end": "2099-01-01T01:00:00+01:00",
    });
    let view = create(&gw, "v1", body).await;
    assert_eq!(
        view,
        json!({
            "voucher_id": "v1", "stock": 3, "sold": 0,
            "begin": "2020-01-01T00:00:00.000Z", "end": "2099-01-01T00:00:00.000Z",
            "per_user_limit": 1, "status": "active",
        })
    );
    let (status, got) = gw.get(&voucher_path("v1")).await;
    assert_eq!(status, 200);
    assert_eq!(got, view);

    let (status, order) = buy(&gw, "v1", 7).await;
    assert_eq!(status, 201, "{order}");
    let id = order["order_id"].as_str().unwrap();
    assert!(id.starts_with("v1/"), "{id}");
    let created = chrono::DateTime::parse_from_rfc3339(order["created_at"].as_str().unwrap())
        .expect("created_at is RFC 3339");
    assert!((Utc::now() - created.to_utc()).num_minutes().abs() < 5);

    // Replace: new stock left and limit; what was sold stays.
    let (status, replaced) = gw.admin_put(&voucher_path("v1"), open(10, 2)).await;
    assert_eq!(status, 200, "{replaced}");
    assert_eq!(replaced["stock"], 10);
    assert_eq!(replaced["sold"], 1);
    assert_eq!(replaced["per_user_limit"], 2);
    let (status, again) = buy(&gw, "v1", 7).await;
    assert_eq!(status, 201, "the new limit of 2 applies: {again}");
    let (status, third) = buy(&gw, "v1", 7).await;
    assert_eq!(
        (status, third["code"].as_str()),
        (409, Some("already_ordered"))
    );
    assert_eq!(
        third["order_ids"],
        json!([id, again["order_id"].as_str().unwrap()])
    );
    let (_, v) = gw.get(&voucher_path("v1")).await;
    assert_eq!(
        (v["stock"].as_u64(), v["sold"].as_u64()),
        (Some(9), Some(2))
    );
    assert_eq!(all_orders(&gw, "v1", 100).await.len(), 2);

    // Stock 0 while on sale is sold_out.
    create(&gw, "empty", open(0, 1)).await;
    let (_, v) = gw.get(&voucher_path("empty")).await;
    assert_eq!(v["status"], "sold_out");
    let (status, body) = buy(&gw, "empty", 1).await;
    assert_eq!((status, body["code"].as_str()), (409, Some("sold_out")));
}

async fn windows_refuse_outside_the_sale(backend: Backend) {
    let gw = Gateway::start(backend).await;
    create(
        &gw,
        "later",
        json!({"stock": 5, "begin": at(Duration::hours(1)), "end": at(Duration::hours(2))}),
    )
    .await;
    create(
        &gw,
        "over",
        json!({"stock": 5, "begin": at(Duration::hours(-2)), "end": at(Duration::hours(-1))}),
    )
    .await;
    let (_, later) = gw.get(&voucher_path("later")).await;
    assert_eq!(later["status"], "pending");
    let (_, over) = gw.get(&voucher_path("over")).await;
    assert_eq!(over["status"], "ended");
    let (status, body) = buy(&gw, "later", 1).await;
    assert_eq!((status, body["code"].as_str()), (409, Some("not_started")));
    let (status, body) = buy(&gw, "over", 1).await;
    assert_eq!((status, body["code"].as_str()), (409, Some("ended")));
    for v in ["later", "over"] {
        let (_, view) = gw.get(&voucher_path(v)).await;
        assert_eq!(
            (view["stock"].as_u64(), view["sold"].as_u64()),
            (Some(5), Some(0))
        );
        assert!(all_orders(&gw, v, 10).await.is_empty());
    }
    // Opening the window by replacing makes it sell.
    let (status, _) = gw.admin_put(&voucher_path("later"), open(5, 1)).await;
    assert_eq!(status, 200);
    let (status, _) = buy(&gw, "later", 1).await;
    assert_eq!(status, 201);
}

async fn restock_is_exact_under_concurrent_buys(backend: Backend) {
    let gw = patient_gateway(backend).await;
    create(&gw, "r", open(10, 1)).await;
    let buys = join_all((0..100u64).map(|u| buy(&gw, "r", u)));
    let restock = format!("{}/restock", voucher_path("r"));
    let restocks = join_all((0..4).map(|_| gw.admin_post(&restock, json!({"quantity": 5}))));
    let (buys, restocks) = tokio::join!(buys, restocks);
    assert!(restocks.iter().all(|(s, _)| *s == 200), "{restocks:?}");
    let sold = buys.iter().filter(|(s, _)| *s == 201).count() as u64;
    assert!(
        buys.iter()
            .all(|(s, b)| *s == 201 || (*s == 409 && b["code"] == "sold_out")),
        "{buys:?}"
    );
    let (_, v) = gw.get(&voucher_path("r")).await;
    assert_eq!(v["sold"], sold);
    assert_eq!(v["stock"].as_u64().unwrap() + sold, 30, "{v}");
    assert_eq!(all_orders(&gw, "r", 7).await.len() as u64, sold);

    // And sequentially, to the unit.
    let (status, v) = gw
        .admin_post(
            &format!("{}/restock", voucher_path("r")),
            json!({"quantity": 3}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(v["stock"].as_u64().unwrap(), 30 - sold + 3);
    assert_eq!(v["sold"], sold);
}

async fn stock_never_exceeds_the_cap(backend: Backend) {
    let mut s = settings(backend);
    s.seckill.max_orders = 20;
    let gw = Gateway::with_settings(s).await;
    let (status, body) = gw.admin_put(&voucher_path("c"), open(21, 1)).await;
    assert_eq!(
        (status.as_u16(), body["code"].as_str()),
        (400, Some("invalid_argument"))
    );
    let (status, _) = gw.get(&voucher_path("c")).await;
    assert_eq!(status, 404, "a refused create leaves nothing behind");
    create(&gw, "c", open(12, 1)).await;
    let restock = format!("{}/restock", voucher_path("c"));
    let (status, body) = gw.admin_post(&restock, json!({"quantity": 9})).await;
    assert_eq!(
        (status.as_u16(), body["code"].as_str()),
        (400, Some("invalid_argument"))
    );
    let (status, v) = gw.admin_post(&restock, json!({"quantity": 8})).await;
    assert_eq!(status, 200);
    assert_eq!(v["stock"], 20);
    for u in 0..5 {
        assert_eq!(buy(&gw, "c", u).await.0, 201);
    }
    // 5 sold: replacing may set at most 15 left.
    let (status, _) = gw.admin_put(&voucher_path("c"), open(16, 1)).await;
    assert_eq!(status, 400);
    let (status, v) = gw.admin_put(&voucher_path("c"), open(15, 1)).await;
    assert_eq!(status, 200);
    assert_eq!(
        (v["stock"].as_u64(), v["sold"].as_u64()),
        (Some(15), Some(5))
    );
    let (status, _) = gw.admin_post(&restock, json!({"quantity": 1})).await;
    assert_eq!(status, 400);
}

async fn per_user_limit_and_listing(backend: Backend) {
    let gw = Gateway::start(backend).await;
    create(&gw, "u", open(10, 3)).await;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let (status, order) = buy(&gw, "u", 4_294_967_295).await;
        assert_eq!(status, 201);
        ids.push(order["order_id"].clone());
    }
    let (status, body) = buy(&gw, "u", 4_294_967_295).await;
    assert_eq!(
        (status, body["code"].as_str()),
        (409, Some("already_ordered"))
    );
    assert_eq!(body["order_ids"], Value::Array(ids.clone()));
    let (status, mine) = gw
        .get(&format!("{}/orders/4294967295", voucher_path("u")))
        .await;
    assert_eq!(status, 200);
    let mine = mine["orders"].as_array().unwrap();
    assert_eq!(
        mine.iter()
            .map(|o| o["order_id"].clone())
            .collect::<Vec<_>>(),
        ids
    );
    assert!(mine
        .iter()
        .all(|o| o["user_id"] == 4_294_967_295u64 && o["voucher_id"] == "u"));
    let (status, none) = gw.get(&format!("{}/orders/5", voucher_path("u"))).await;
    assert_eq!(status, 200);
    assert_eq!(none, json!({"orders": []}));
    let (_, v) = gw.get(&voucher_path("u")).await;
    assert_eq!(
        (v["stock"].as_u64(), v["sold"].as_u64()),
        (Some(7), Some(3))
    );
}

async fn orders_page_with_cursors(backend: Backend) {
    let gw = Gateway::start(backend).await;
    create(&gw, "p", open(25, 1)).await;
    let mut sold = Vec::new();
    for u in 0..25u64 {
        let (status, order) = buy(&gw, "p", u).await;
        assert_eq!(status, 201);
        sold.push(order);
    }
    let (_, first) = gw
        .get(&format!("{}/orders?limit=10", voucher_path("p")))
        .await;
    assert_eq!(first["orders"].as_array().unwrap().len(), 10);
    assert!(first["next"].is_string());
    let pages = all_orders(&gw, "p", 10).await;
    assert_eq!(
        pages, sold,
        "sale order, every order once, same views as the 201s"
    );
    let (_, whole) = gw.get(&format!("{}/orders", voucher_path("p"))).await;
    assert_eq!(whole["orders"].as_array().unwrap().len(), 25);
    assert!(whole["next"].is_null());
    let (status, from_start) = gw
        .get(&format!("{}/orders?after=", voucher_path("p")))
        .await;
    assert_eq!(
        status, 200,
        "an empty cursor means from the start: {from_start}"
    );
    assert_eq!(from_start, whole);
    let (_, exact) = gw
        .get(&format!("{}/orders?limit=25", voucher_path("p")))
        .await;
    assert!(exact["next"].is_null(), "a full last page has no next");
    // An empty, existing voucher lists nothing.
    create(&gw, "q", open(1, 1)).await;
    let (status, empty) = gw.get(&format!("{}/orders", voucher_path("q"))).await;
    assert_eq!(status, 200);
    assert_eq!(empty, json!({"orders": [], "next": null}));
}

async fn unknown_voucher_is_404(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let nope = voucher_path("nope");
    for (status, body) in [
        gw.get(&nope).await,
        gw.post(&format!("{nope}/orders"), json!({"user_id": 1}))
            .await,
        gw.get(&format!("{nope}/orders")).await,
        gw.get(&format!("{nope}/orders/1")).await,
        gw.admin_post(&format!("{nope}/restock"), json!({"quantity": 1}))
            .await,
    ] {
        assert_eq!(
            (status.as_u16(), body["code"].as_str()),
            (404, Some("not_found")),
            "{body}"
        );
    }
}

async fn admin_routes_need_the_token(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let path = voucher_path("a");
    for token in [None, Some("wrong")] {
        let mut put = gw.client.put(gw.url(&path)).json(&open(1, 1));
        let mut restock = gw
            .client
            .post(gw.url(&format!("{path}/restock")))
            .json(&json!({"quantity": 1}));
        if let Some(t) = token {
            put = put.bearer_auth(t);
            restock = restock.bearer_auth(t);
        }
        for req in [put, restock] {
            let resp = req.send().await.unwrap();
            assert_eq!(resp.status(), 401);
            assert!(resp.headers()["www-authenticate"]
                .to_str()
                .unwrap()
                .starts_with("Bearer"));
            let body: Value = resp.json().await.unwrap();
            assert_eq!(body["code"], "unauthorized");
        }
    }
    let (status, _) = gw.get(&path).await;
    assert_eq!(status, 404, "nothing was created");
}

async fn bad_inputs_are_problems(backend: Backend) {
    let gw = Gateway::start(backend).await;
    create(&gw, "ok", open(5, 1)).await;
    let path = voucher_path("ok");
    let begin = at(Duration::minutes(-1));
    let end = at(Duration::hours(1));
    let bad_puts = [
        json!({"stock": 5, "begin": end, "end": begin}),
        json!({"stock": 5, "begin": begin, "end": begin}),
        json!({"stock": 5, "begin": "yesterday", "end": end}),
        json!({"stock": 5, "begin": "2026-11-21", "end": end}),
        json!({"stock": -1, "begin": begin, "end": end}),
        json!({"stock": 1_000_001, "begin": begin, "end": end}),
        json!({"stock": 5, "begin": begin, "end": end, "per_user_limit": 0}),
        json!({"stock": 5, "begin": begin, "end": end, "per_user_limit": 1001}),
        json!({"stock": 5, "begin": begin}),
        json!({"stock": 5, "begin": begin, "end": end, "extra": 1}),
    ];
    for body in bad_puts {
        let (status, problem) = gw.admin_put(&path, body.clone()).await;
        assert_eq!(status, 400, "{body} → {problem}");
        assert_eq!(problem["code"], "invalid_argument");
    }
    let bad = [
        gw.admin_put("/v1/seckill/vouchers/a%20b", open(1, 1)).await,
        gw.admin_post(&format!("{path}/restock"), json!({"quantity": 0}))
            .await,
        gw.admin_post(&format!("{path}/restock"), json!({"quantity": "1"}))
            .await,
        gw.post(&format!("{path}/orders"), json!({"user_id": -1}))
            .await,
        gw.post(
            &format!("{path}/orders"),
            json!({"user_id": 4_294_967_296u64}),
        )
        .await,
        gw.post(&format!("{path}/orders"), json!({})).await,
        gw.get(&format!("{path}/orders?limit=0")).await,
        gw.get(&format!("{path}/orders?limit=1001")).await,
        gw.get(&format!("{path}/orders?after=xyz")).await,
        gw.get(&format!("{path}/orders?after=1-2-3")).await,
        gw.get(&format!(
            "{path}/orders?after=18446744073709551615-18446744073709551615"
        ))
        .await,
        gw.get(&format!("{path}/orders?after=18446744073709551616-0"))
            .await,
        gw.post(&format!("{path}/orders"), json!({"user_id": "7"}))
            .await,
        gw.get(&format!("{path}/orders/abc")).await,
        gw.get(&format!("{}/orders", voucher_path(&"x".repeat(129))))
            .await,
    ];
    for (status, problem) in bad {
        assert_eq!(status, 400, "{problem}");
        assert_eq!(problem["code"], "invalid_argument");
    }
    let (_, v) = gw.get(&path).await;
    assert_eq!(
        (v["stock"].as_u64(), v["sold"].as_u64()),
        (Some(5), Some(0))
    );
}

/// A purchase under `key`: status, the `Idempotency-Replayed` header, body.
async fn buy_once(gw: &Gateway, v: &str, user: u64, key: &str) -> (u16, bool, Value) {
    let path = format!("{}/orders", voucher_path(v));
    gw.post_once(&path, key, &json!({ "user_id": user })).await
}

/// docs/clients.md "Retries: `Idempotency-Key`": a repeat with the same key and body gets the first
/// reply and changes nothing; the same key with another body is 422; refusals replay too. A
/// purchase's key is its user's: another user sending the same string buys (or is refused) on its
/// own.
async fn retries_with_an_idempotency_key_buy_once(backend: Backend) {
    let gw = Gateway::start(backend).await;
    create(&gw, "idem", open(1, 5)).await;

    let (status, replayed, first) = buy_once(&gw, "idem", 7, "retry-1").await;
    assert_eq!((status, replayed), (201, false), "{first}");
    for _ in 0..3 {
        let (status, replayed, again) = buy_once(&gw, "idem", 7, "retry-1").await;
        assert_eq!((status, replayed), (201, true));
        assert_eq!(again, first, "the first reply, byte for byte");
    }
    let (status, replayed, other) = buy_once(&gw, "idem", 8, "retry-1").await;
    assert_eq!(
        (status, replayed, other["code"].as_str()),
        (409, false, Some("sold_out")),
        "user 8's key is not user 7's: its own answer, neither a replay nor a 422: {other}"
    );

    // A refusal is a reply too: it replays as it was, even after the cause changed.
    let (status, replayed, sold_out) = buy_once(&gw, "idem", 9, "retry-2").await;
    assert_eq!(
        (status, replayed, sold_out["code"].as_str()),
        (409, false, Some("sold_out"))
    );
    let (status, _) = gw
        .admin_post(
            &format!("{}/restock", voucher_path("idem")),
            json!({"quantity": 5}),
        )
        .await;
    assert_eq!(status, 200);
    let (status, replayed, again) = buy_once(&gw, "idem", 9, "retry-2").await;
    assert_eq!((status, replayed), (409, true));
    assert_eq!(again, sold_out);

    // One order in all, the one bought first; a new key buys anew.
    let orders = all_orders(&gw, "idem", 100).await;
    assert_eq!(orders.len(), 1, "{orders:?}");
    assert_eq!(orders[0]["order_id"], first["order_id"]);
    assert_eq!(buy_once(&gw, "idem", 9, "retry-3").await.0, 201);

    // A restock retried under its key adds its stock once.
    let restock = |key: &'static str, quantity: u64| {
        let gw = &gw;
        async move {
            let r = gw
                .client
                .post(gw.url(&format!("{}/restock", voucher_path("idem"))))
                .bearer_auth(crate::common::ADMIN_TOKEN)
                .header("idempotency-key", key)
                .json(&json!({ "quantity": quantity }))
                .send()
                .await
                .unwrap();
            let status = r.status().as_u16();
            let replayed = r.headers().contains_key("idempotency-replayed");
            (status, replayed, r.json::<Value>().await.unwrap())
        }
    };
    let (_, before) = gw.get(&voucher_path("idem")).await;
    let (status, replayed, first) = restock("restock-1", 3).await;
    assert_eq!((status, replayed), (200, false), "{first}");
    let (status, replayed, again) = restock("restock-1", 3).await;
    assert_eq!((status, replayed), (200, true));
    assert_eq!(again, first);
    let (_, after) = gw.get(&voucher_path("idem")).await;
    assert_eq!(
        after["stock"].as_u64().unwrap(),
        before["stock"].as_u64().unwrap() + 3,
        "added once"
    );
    assert_eq!(restock("restock-1", 4).await.0, 422);
    // One key string, two routes: a purchase's key is its user's, so the admin's restock key
    // sent with a purchase is that user's own, fresh key.
    assert_eq!(buy_once(&gw, "idem", 11, "restock-1").await.0, 201);

    // Malformed keys are 400.
    let long = "k".repeat(129);
    for bad in ["has space", long.as_str()] {
        let (status, _, problem) = buy_once(&gw, "idem", 10, bad).await;
        assert_eq!(
            (status, problem["code"].as_str()),
            (400, Some("invalid_argument")),
            "{bad:?}"
        );
    }
}

/// `seckill_buy.lua` answering several purchases in one run answers each as if it
/// ran alone, in order: the per-user limit and the stock across the call, a key's outcome
/// replayed to a later purchase in the same call, 422's `key_reused`, and refusals recorded
/// under their keys. Called directly on a private Redis so the call's make-up is the test's.
#[tokio::test]
async fn one_purchase_script_run_answers_each_purchase_in_order() {
    use fred::prelude::*;
    let script = include_str!("../../src/seckill/redis/seckill_buy.lua");
    let (redis, client, sha) = crate::common::fred_on_private_redis(script).await;
    let far = (Utc::now() + Duration::hours(1))
        .timestamp_millis()
        .to_string();
    redis
        .cli(&[
            "HSET", "sk:{v}", "stock", "2", "sold", "0", "begin", "0", "end", &far, "limit", "1",
            "cap", "100",
        ])
        .unwrap();
    let sale = [
        "sk:{v}",
        "sk:{v}:buyers",
        "sk:{v}:user_orders",
        "sk:{v}:orders",
    ];
    let call = |purchases: &[(&str, &str, &str)]| {
        let mut keys: Vec<String> = sale.iter().map(|k| k.to_string()).collect();
        let mut args: Vec<String> = vec!["v".into(), "100".into(), "86400".into()];
        for (user, key, fp) in purchases {
            keys.push(format!("sk:{{v}}:idem:{key}"));
            args.extend([user.to_string(), fp.to_string()]);
        }
        let (client, sha) = (client.clone(), sha.clone());
        async move {
            let reply: Vec<Vec<String>> = client.evalsha(sha, keys, args).await.unwrap();
            reply
        }
    };
    let replies = call(&[
        ("1", "", ""),
        ("1", "", ""),
        ("2", "a", "buy|2"),
        ("2", "a", "buy|2"),
        ("3", "a", "buy|3"),
        ("4", "", ""),
        ("3", "b", "buy|3"),
        ("2", "c", "buy|2"),
    ])
    .await;
    let first = replies[0][1].clone();
    let second = replies[2][1].clone();
    assert_eq!(replies[0][0], "ok", "{replies:?}");
    assert_eq!(replies[1], ["already_ordered", first.as_str()]);
    assert_eq!(replies[2][0], "ok", "{replies:?}");
    assert!(second > first, "sale order: {replies:?}");
    assert_eq!(replies[3], ["replay", "ok", second.as_str()]);
    assert_eq!(replies[4], ["key_reused"]);
    assert_eq!(replies[5], ["sold_out"]);
    assert_eq!(replies[6], ["sold_out"]);
    // Sold out is checked before the per-user limit, as for one purchase alone.
    assert_eq!(replies[7], ["sold_out"]);
    assert_eq!(replies.len(), 8);

    // The next run replays what this one recorded; the voucher holds exactly the two sales.
    let again = call(&[("3", "b", "buy|3"), ("2", "c", "buy|2")]).await;
    assert_eq!(
        again,
        [["replay", "sold_out", ""], ["replay", "sold_out", ""]]
    );
    let held = |f: &str| redis.cli(&["HGET", "sk:{v}", f]).unwrap().trim().to_owned();
    assert_eq!((held("stock"), held("sold")), ("0".into(), "2".into()));
    assert_eq!(redis.cli(&["XLEN", "sk:{v}:orders"]).unwrap().trim(), "2");
    assert_eq!(
        redis
            .cli(&["HGET", "sk:{v}:user_orders", "2"])
            .unwrap()
            .trim(),
        second
    );
}

/// The grouping the burst tests check does happen: 200 concurrent purchases of one voucher take
/// fewer script runs than purchases (a private Redis, so its command counts are this test's).
/// On one thread, as the binary's workers run (`src/workers.rs`; see the UV test of the same).
#[tokio::test]
async fn a_burst_on_one_voucher_shares_script_runs() {
    let (redis, gw, _) = crate::common::on_private_redis().await;
    create(&gw, "shared", open(50, 1)).await;
    let before = crate::common::script_runs(&redis);
    let replies = join_all((0..200u64).map(|u| buy(&gw, "shared", u))).await;
    let runs = crate::common::script_runs(&redis) - before;
    assert_eq!(replies.iter().filter(|(s, _)| *s == 201).count(), 50);
    assert!(runs < 200, "{runs} script runs for 200 purchases");
}

/// A voucher beginning `begin_ms` (store clock) and ending `end_ms`.
fn window(stock: u64, begin_ms: i64, end_ms: i64) -> Value {
    let at = |ms: i64| {
        chrono::DateTime::from_timestamp_millis(ms)
            .unwrap()
            .to_rfc3339_opts(SecondsFormat::Millis, true)
    };
    json!({"stock": stock, "begin": at(begin_ms), "end": at(end_ms)})
}

/// Every voucher of the listing under `query` (`status=…&` or empty), following the cursors
/// with pages of `limit`: each page's vouchers and its `next`.
async fn listing(gw: &Gateway, query: &str, limit: usize) -> Vec<Value> {
    let mut out = Vec::new();
    let mut after = String::new();
    for _ in 0..10_000 {
        let (status, page) = gw
            .get(&format!(
                "/v1/seckill/vouchers?{query}limit={limit}&after={after}"
            ))
            .await;
        assert_eq!(status, 200, "{page}");
        let vouchers = page["vouchers"].as_array().unwrap();
        assert!(vouchers.len() <= limit, "{page}");
        out.extend(vouchers.iter().cloned());
        match page["next"].as_str() {
            Some(n) => after = n.to_owned(),
            None => return out,
        }
    }
    panic!("the listing never ends");
}

fn ids(vouchers: &[Value]) -> Vec<&str> {
    vouchers
        .iter()
        .map(|v| v["voucher_id"].as_str().unwrap())
        .collect()
}

/// By begin then id, every voucher once, each as its own GET shows it; any page size gives the
/// same listing; a replaced begin moves the voucher (not a copy of it).
async fn vouchers_are_listed_by_begin_in_pages(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let (status, empty) = gw.get("/v1/seckill/vouchers").await;
    assert_eq!(
        (status.as_u16(), empty),
        (200, json!({"vouchers": [], "next": null}))
    );
    let now = gw.now_ms();
    let hour = 3_600_000;
    // Created out of order; three share a begin (then ordered by id).
    let begins = [
        ("e", 5),
        ("b", 2),
        ("d", 3),
        ("a", 3),
        ("c", 3),
        ("f", -7),
        ("g", 9),
    ];
    for (v, h) in begins {
        create(&gw, v, window(10, now + h * hour, now + 20 * hour)).await;
    }
    let want = ["f", "b", "a", "c", "d", "e", "g"];
    for limit in [1, 2, 3, 7, 100] {
        let listed = listing(&gw, "", limit).await;
        assert_eq!(ids(&listed), want, "pages of {limit}");
    }
    let listed = listing(&gw, "", 100).await;
    for v in &listed {
        let (_, got) = gw
            .get(&voucher_path(v["voucher_id"].as_str().unwrap()))
            .await;
        assert_eq!(v, &got, "the listing shows the voucher as its GET does");
    }
    let (_, first) = gw.get("/v1/seckill/vouchers?limit=7").await;
    assert!(
        first["next"].is_null(),
        "a full last page has no next: {first}"
    );
    let (_, one) = gw.get("/v1/seckill/vouchers?limit=1").await;
    let after_f = one["next"].as_str().unwrap().to_owned();
    let (_, two) = gw.get("/v1/seckill/vouchers?limit=2").await;
    assert_eq!(ids(two["vouchers"].as_array().unwrap()), ["f", "b"]);
    let after_b = two["next"].as_str().unwrap().to_owned();
    assert_eq!(after(&gw, &after_b).await, ["a", "c", "d", "e", "g"]);

    // Moving "f" last, and "g" between "a" and "c".
    let (status, _) = gw
        .admin_put(
            &voucher_path("f"),
            window(10, now + 10 * hour, now + 20 * hour),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = gw
        .admin_put(
            &voucher_path("g"),
            window(10, now + 3 * hour, now + 20 * hour),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        ids(&listing(&gw, "", 2).await),
        ["b", "a", "c", "d", "g", "e", "f"]
    );
    // Cursors taken before the moves go on after the place they name, the moved voucher's too.
    assert_eq!(after(&gw, &after_b).await, ["a", "c", "d", "g", "e", "f"]);
    assert_eq!(
        after(&gw, &after_f).await,
        ["b", "a", "c", "d", "g", "e", "f"]
    );
}

/// The ids of the listing's page after the cursor `after`.
async fn after(gw: &Gateway, after: &str) -> Vec<String> {
    let (status, page) = gw.get(&format!("/v1/seckill/vouchers?after={after}")).await;
    assert_eq!(status, 200, "{page}");
    ids(page["vouchers"].as_array().unwrap())
        .into_iter()
        .map(str::to_owned)
        .collect()
}

/// `upcoming` is `pending`, `active` is on sale with stock, `ended` is `ended` or `sold_out`;
/// as store time passes (moved by hand on the memory backend, waited on Redis, whose clock no
/// test moves) a voucher goes from one to the next, and a restock brings a sold-out one back.
async fn the_listing_filters_by_status_as_time_passes(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let now = gw.now_ms();
    let hour = 3_600_000;
    create(&gw, "over", window(5, now - 2 * hour, now - hour)).await;
    create(&gw, "on", window(5, now - hour, now + hour)).await;
    create(&gw, "gone", window(0, now - hour / 2, now + hour)).await;
    create(&gw, "soon", window(5, now + 1_500, now + hour)).await;
    create(&gw, "later", window(5, now + hour, now + 2 * hour)).await;
    let listed = |status: &'static str| {
        let gw = &gw;
        async move { ids(&listing(gw, &format!("status={status}&"), 2).await).join(" ") }
    };
    assert_eq!(listed("upcoming").await, "soon later");
    assert_eq!(listed("active").await, "on");
    assert_eq!(listed("ended").await, "over gone");
    assert_eq!(
        ids(&listing(&gw, "", 100).await).join(" "),
        "over on gone soon later"
    );
    for v in listing(&gw, "status=ended&", 100).await {
        assert!(
            ["ended", "sold_out"].contains(&v["status"].as_str().unwrap()),
            "{v}"
        );
    }

    gw.pass(std::time::Duration::from_millis(2_000)).await;
    assert_eq!(listed("upcoming").await, "later");
    assert_eq!(listed("active").await, "on soon");
    let (status, _) = gw
        .admin_post(
            &format!("{}/restock", voucher_path("gone")),
            json!({"quantity": 1}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(listed("active").await, "on gone soon");
    assert_eq!(listed("ended").await, "over");
    let (status, _) = buy(&gw, "gone", 1).await;
    assert_eq!(status, 201);
    assert_eq!(listed("ended").await, "over gone");
}

/// Creates running while listings page through: a listing holds every voucher created before
/// it began, never a voucher twice, and never one that was not created. Then concurrent
/// replacements that move every voucher twice: once they are over, every voucher is listed
/// once, at the begin the later put gave it. (A voucher moved while a client pages may be seen
/// twice or not at all by that one pass, as in any listing ordered by what can change:
/// docs/seckill.md "Listing vouchers".)
async fn a_listing_never_shows_a_voucher_missing_nor_misses_one(backend: Backend) {
    use std::sync::Mutex;
    let gw = patient_gateway(backend).await;
    let now = gw.now_ms();
    let end = now + 3_600_000;
    let created: Mutex<HashSet<String>> = Mutex::new(HashSet::new());
    let names: Vec<String> = (0..60).map(|i| format!("c{i:02}")).collect();
    let begin = |i: usize| now + (i as i64 % 7) * 60_000;
    let writes = join_all(names.iter().enumerate().map(|(i, v)| {
        let (gw, created) = (&gw, &created);
        async move {
            let (status, body) = gw
                .admin_put(&voucher_path(v), window(3, begin(i), end))
                .await;
            assert_eq!(status, 201, "{body}");
            created.lock().unwrap().insert(v.clone());
        }
    }));
    let reads = async {
        for _ in 0..12 {
            // What exists before the listing begins: every create answered, and every voucher
            // a read finds (one whose put has not answered yet included).
            let mut before: HashSet<String> = created.lock().unwrap().clone();
            let paths: Vec<String> = names.iter().map(|v| voucher_path(v)).collect();
            let found = join_all(paths.iter().map(|p| gw.get(p))).await;
            before.extend(
                names
                    .iter()
                    .zip(found)
                    .filter(|(_, (status, _))| *status == 200)
                    .map(|(v, _)| v.clone()),
            );
            let listed = listing(&gw, "", 7).await;
            let seen: Vec<&str> = ids(&listed);
            let unique: HashSet<&str> = seen.iter().copied().collect();
            assert_eq!(unique.len(), seen.len(), "a voucher listed twice: {seen:?}");
            for v in &before {
                assert!(
                    unique.contains(v.as_str()),
                    "{v} was created before the listing, not listed"
                );
            }
            for v in &unique {
                assert!(names.iter().any(|n| n == v), "{v} was never created");
            }
        }
    };
    futures::join!(writes, reads);

    join_all(names.iter().enumerate().flat_map(|(i, v)| {
        let path = voucher_path(v);
        [begin(i) + 1_000, begin(i) - 1_000].map(|b| {
            let (gw, path) = (&gw, path.clone());
            async move { gw.admin_put(&path, window(3, b, end)).await }
        })
    }))
    .await;
    let listed = listing(&gw, "", 100).await;
    assert_eq!(listed.len(), names.len());
    let begins: Vec<String> = listed
        .iter()
        .map(|v| format!("{} {}", v["begin"].as_str().unwrap(), v["voucher_id"]))
        .collect();
    let mut sorted = begins.clone();
    sorted.sort();
    assert_eq!(begins, sorted, "in order of the begins the vouchers hold");
}

async fn the_listing_refuses_bad_pages(backend: Backend) {
    let gw = Gateway::start(backend).await;
    create(&gw, "x", open(1, 1)).await;
    for query in [
        "limit=0",
        "limit=1001",
        "limit=-1",
        "limit=a",
        "after=xyz",
        "after=1-2",
        "after=12~a%20b",
        "after=~x",
        "after=99999999999999999999~x",
        "status=pending",
        "status=sold_out",
        "status=",
        "other=1",
    ] {
        let (status, problem) = gw.get(&format!("/v1/seckill/vouchers?{query}")).await;
        assert_eq!(
            (status.as_u16(), problem["code"].as_str()),
            (400, Some("invalid_argument")),
            "{query}: {problem}"
        );
    }
    for query in [
        "",
        "?after=",
        "?limit=1000",
        "?limit=1",
        "?status=active&limit=1000",
    ] {
        let (status, page) = gw.get(&format!("/v1/seckill/vouchers{query}")).await;
        assert_eq!(status, 200, "{query}: {page}");
        assert_eq!(ids(page["vouchers"].as_array().unwrap()), ["x"], "{query}");
    }
}

/// A store written by a gateway from before the listing's index holds vouchers the index never
/// saw (their puts only entered them in the registry): listings complete the index from the
/// registry as they go, and list them in place. (The memory backend starts empty with each
/// process: it has no such store.)
async fn vouchers_written_before_the_index_are_listed(backend: Backend) {
    if backend == Backend::Memory {
        return;
    }
    let s = settings(backend);
    let prefix = s.key_prefix.clone();
    let server = crate::common::servers(backend)[0];
    let now = Utc::now().timestamp_millis();
    for (v, begin) in [("old-b", now + 2_000), ("old-a", now - 2_000)] {
        let key = format!("{prefix}sk:{{{v}}}");
        let (begin, end) = (begin.to_string(), (now + 3_600_000).to_string());
        let fields = [
            "stock", "4", "sold", "0", "begin", &begin, "end", &end, "limit", "1", "cap", "10",
        ];
        let mut hset = vec!["-c", "hset", key.as_str()];
        hset.extend(fields);
        server.cli(&hset).expect("HSET");
        let registry = format!("{prefix}skr:{{vouchers}}");
        server.cli(&["-c", "sadd", &registry, v]).expect("SADD");
    }
    let gw = Gateway::with_settings(s).await;
    create(&gw, "new", window(1, now, now + 3_600_000)).await;
    assert_eq!(ids(&listing(&gw, "", 2).await), ["old-a", "new", "old-b"]);
    let (_, old) = gw.get(&voucher_path("old-b")).await;
    let listed = listing(&gw, "status=upcoming&", 10).await;
    assert_eq!(listed, [old], "listed as its GET shows it");
}
