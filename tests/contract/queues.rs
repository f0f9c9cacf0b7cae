//! Delayed-queue scenarios (docs/api.md "Delayed queues").

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{DateTime, SecondsFormat, Utc};
use futures::future::join_all;
use serde_json::{json, Value};

use crate::common::{
    claim, enqueue, script_runs, settings, Backend, Gateway, RedisCluster, RedisProcess,
};

fn at(offset_ms: i64) -> String {
    (Utc::now() + chrono::Duration::milliseconds(offset_ms))
        .to_rfc3339_opts(SecondsFormat::Millis, true)
}

fn ms(rfc3339: &Value) -> i64 {
    DateTime::parse_from_rfc3339(rfc3339.as_str().expect("an instant"))
        .expect("RFC 3339")
        .timestamp_millis()
}

async fn ack(gw: &Gateway, queue: &str, job: &Value) -> (u16, Value) {
    let (status, reply) = gw
        .post(
            &format!(
                "/v1/queues/{queue}/jobs/{}/ack",
                job["id"].as_str().unwrap()
            ),
            json!({ "receipt": job["receipt"] }),
        )
        .await;
    (status.as_u16(), reply)
}

async fn stats(gw: &Gateway, queue: &str) -> [u64; 4] {
    let (status, s) = gw.get(&format!("/v1/queues/{queue}")).await;
    assert_eq!(status, 200, "{s}");
    assert_eq!(s["queue"], queue);
    ["delayed", "ready", "in_flight", "dead"].map(|k| s[k].as_u64().expect(k))
}

/// Enqueue (idempotent by id and by Idempotency-Key), claim, ack, cancel, stats.
async fn enqueue_claim_ack_cancel(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let payload = json!({"to": "a@example.com", "n": [1, 2.5, null, "x"]});
    let first = enqueue(&gw, "mail", json!({"id": "m1", "payload": payload})).await;
    assert_eq!(first["id"], "m1");
    assert_eq!(first["queue"], "mail");
    // The same id again changes nothing and answers the existing job.
    let (status, again) = gw
        .post(
            "/v1/queues/mail/jobs",
            json!({"id": "m1", "payload": "other", "delay_ms": 60000}),
        )
        .await;
    assert_eq!((status.as_u16(), &again), (200, &first));
    assert_eq!(stats(&gw, "mail").await, [0, 1, 0, 0]);

    let jobs = claim(&gw, "mail", json!({})).await;
    assert_eq!(jobs.len(), 1);
    let job = &jobs[0];
    assert_eq!(job["id"], "m1");
    assert_eq!(job["payload"], payload);
    assert_eq!(job["attempts"], 1);
    assert_eq!(job["run_at"], first["run_at"]);
    assert_eq!(stats(&gw, "mail").await, [0, 0, 1, 0]);
    assert!(
        claim(&gw, "mail", json!({})).await.is_empty(),
        "claimed once"
    );

    // In flight: no cancel; a wrong receipt does not ack.
    let (status, p) = gw.delete("/v1/queues/mail/jobs/m1").await;
    assert_eq!(
        (status.as_u16(), p["code"].as_str()),
        (409, Some("conflict"))
    );
    let mut wrong = job.clone();
    wrong["receipt"] = json!("7.7");
    let (status, p) = ack(&gw, "mail", &wrong).await;
    assert_eq!((status, p["code"].as_str()), (409, Some("receipt_expired")));
    assert_eq!(ack(&gw, "mail", job).await.0, 204);
    let (status, p) = ack(&gw, "mail", job).await;
    assert_eq!(
        (status, p["code"].as_str()),
        (409, Some("receipt_expired")),
        "acked once"
    );
    assert_eq!(stats(&gw, "mail").await, [0, 0, 0, 0]);
    // A job that never existed is 404, on a queue never used and on this one with a receipt
    // it never issued; a receipt it issued cannot tell "never existed" from "done", so that
    // stays 409 (docs/api.md "Delayed queues").
    for (queue, receipt) in [("never-used", "1.1"), ("mail", "1.2")] {
        let ghost = json!({"id": "ghost", "receipt": receipt});
        let (status, p) = ack(&gw, queue, &ghost).await;
        assert_eq!(
            (status, p["code"].as_str()),
            (404, Some("not_found")),
            "{queue} {receipt}: {p}"
        );
    }
    let ghost = json!({"id": "ghost", "receipt": "1.1"});
    assert_eq!(ack(&gw, "mail", &ghost).await.0, 409);

    // Cancel a waiting job; unknown → 404.
    enqueue(
        &gw,
        "mail",
        json!({"id": "m2", "payload": 1, "delay_ms": 60000}),
    )
    .await;
    assert_eq!(stats(&gw, "mail").await, [1, 0, 0, 0]);
    assert_eq!(gw.delete("/v1/queues/mail/jobs/m2").await.0, 204);
    let (status, p) = gw.delete("/v1/queues/mail/jobs/m2").await;
    assert_eq!(
        (status.as_u16(), p["code"].as_str()),
        (404, Some("not_found"))
    );
    assert_eq!(stats(&gw, "mail").await, [0, 0, 0, 0]);
    assert_eq!(stats(&gw, "never-used").await, [0, 0, 0, 0]);

    // Without an id, the Idempotency-Key makes a retry safe: same id, nothing added.
    let body = json!({"payload": {"k": 1}, "delay_ms": 60000});
    let (s1, r1, b1) = gw.post_once("/v1/queues/mail/jobs", "key-1", &body).await;
    let (s2, r2, b2) = gw.post_once("/v1/queues/mail/jobs", "key-1", &body).await;
    assert_eq!((s1, r1, s2, r2), (201, false, 201, true));
    assert_eq!(b1, b2);
    assert_eq!(stats(&gw, "mail").await, [1, 0, 0, 0]);
    let other = json!({"payload": {"k": 2}});
    let (s3, _, b3) = gw.post_once("/v1/queues/mail/jobs", "key-1", &other).await;
    assert_eq!((s3, b3["code"].as_str()), (422, Some("unprocessable")));
    // Without a key, two enqueues are two jobs with generated ids.
    let a = enqueue(&gw, "mail", json!({"payload": null})).await;
    let b = enqueue(&gw, "mail", json!({"payload": null})).await;
    assert_ne!(a["id"], b["id"]);
    assert_eq!(stats(&gw, "mail").await, [1, 2, 0, 0]);
}

/// 20 concurrent claimers over 2,000 jobs: every job is delivered exactly once when all ack.
async fn concurrent_claimers_get_each_job_once(backend: Backend) {
    let gw = Arc::new(Gateway::start(backend).await);
    const JOBS: usize = 2000;
    for chunk in (0..JOBS).collect::<Vec<_>>().chunks(100) {
        join_all(chunk.iter().map(|i| {
            let gw = gw.clone();
            async move {
                enqueue(
                    &gw,
                    "work",
                    json!({"id": format!("j{i}"), "payload": {"i": i}}),
                )
                .await;
            }
        }))
        .await;
    }
    assert_eq!(stats(&gw, "work").await, [0, JOBS as u64, 0, 0]);
    let seen = Arc::new(Mutex::new(Vec::new()));
    join_all((0..20).map(|_| {
        let gw = gw.clone();
        let seen = seen.clone();
        async move {
            loop {
                let jobs = claim(&gw, "work", json!({"max": 7, "visibility_ms": 120000})).await;
                if jobs.is_empty() {
                    return;
                }
                for job in &jobs {
                    assert_eq!(job["attempts"], 1, "{job}");
                    assert_eq!(
                        job["payload"]["i"]
                            .as_u64()
                            .map(|i| format!("j{i}"))
                            .as_deref(),
                        job["id"].as_str()
                    );
                    assert_eq!(ack(&gw, "work", job).await.0, 204, "{job}");
                    seen.lock()
                        .unwrap()
                        .push(job["id"].as_str().unwrap().to_owned());
                }
            }
        }
    }))
    .await;
    let seen = seen.lock().unwrap().clone();
    let distinct: HashSet<&String> = seen.iter().collect();
    assert_eq!(distinct.len(), seen.len(), "no job delivered twice");
    assert_eq!(distinct.len(), JOBS, "every job delivered");
    assert_eq!(stats(&gw, "work").await, [0, 0, 0, 0]);
}

/// A claim that is not acked lapses: the job comes back with attempts + 1 and a new receipt,
/// and the old receipt no longer acks.
async fn unacked_job_comes_back(backend: Backend) {
    let gw = Gateway::start(backend).await;
    enqueue(&gw, "q", json!({"id": "a", "payload": "p"})).await;
    let first = claim(&gw, "q", json!({"visibility_ms": 1000})).await;
    assert_eq!(first[0]["attempts"], 1);
    // Past the visibility the lapsed claim is due again (the long poll covers a slow store).
    gw.pass(Duration::from_millis(1000)).await;
    let second = claim(&gw, "q", json!({"visibility_ms": 1000, "wait_ms": 8000})).await;
    assert_eq!(second.len(), 1, "the job came back");
    assert_eq!(second[0]["id"], "a");
    assert_eq!(second[0]["attempts"], 2);
    assert_ne!(second[0]["receipt"], first[0]["receipt"]);
    let (status, p) = ack(&gw, "q", &first[0]).await;
    assert_eq!((status, p["code"].as_str()), (409, Some("receipt_expired")));
    assert_eq!(ack(&gw, "q", &second[0]).await.0, 204);
    assert_eq!(stats(&gw, "q").await, [0, 0, 0, 0]);
}

/// An ack whose answer was lost, retried under its `Idempotency-Key`, is answered `204` again
/// (replayed) when the first took effect, where without the key the job's absence answers
/// `409`; the key with another ack is `422`; a refused ack records nothing; two at once under
/// one key are one ack.
async fn a_retried_ack_under_its_key_is_answered_again(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let keyed = |job: &Value, key: &str| {
        let path = format!("/v1/queues/k/jobs/{}/ack", job["id"].as_str().unwrap());
        let req = gw
            .client
            .post(gw.url(&path))
            .header("idempotency-key", key)
            .json(&json!({ "receipt": job["receipt"] }));
        async move {
            let r = req.send().await.unwrap();
            let replayed = r.headers().get("idempotency-replayed").is_some();
            let status = r.status().as_u16();
            let body: Value = r.json().await.unwrap_or(Value::Null);
            (status, replayed, body)
        }
    };
    for id in ["a", "b"] {
        enqueue(&gw, "k", json!({"id": id, "payload": 1})).await;
    }
    let jobs = claim(&gw, "k", json!({"max": 2})).await;
    assert_eq!(jobs.len(), 2);
    let (a, b) = (&jobs[0], &jobs[1]);
    assert_eq!(keyed(a, "ack-a").await.0, 204);
    let (status, replayed, body) = keyed(a, "ack-a").await;
    assert_eq!((status, replayed), (204, true), "{body}");
    let (status, p) = ack(&gw, "k", a).await;
    assert_eq!((status, p["code"].as_str()), (409, Some("receipt_expired")));
    let (status, _, p) = keyed(b, "ack-a").await;
    assert_eq!((status, p["code"].as_str()), (422, Some("unprocessable")));
    // Refused under a key (a stale receipt), then the job's current receipt under the same
    // key: the refusal recorded nothing.
    let mut stale = b.clone();
    stale["receipt"] = json!("1.999999");
    let (status, _, p) = keyed(&stale, "ack-b").await;
    assert_eq!(
        (status, p["code"].as_str()),
        (409, Some("receipt_expired")),
        "{p}"
    );
    let ((s1, r1, _), (s2, r2, _)) = tokio::join!(keyed(b, "ack-b"), keyed(b, "ack-b"));
    assert_eq!((s1, s2), (204, 204));
    assert!(r1 != r2, "one of the two is the replay: {r1} {r2}");
    assert_eq!(stats(&gw, "k").await, [0, 0, 0, 0]);
}

/// A worker that crashes between claim and ack loses nothing: every job comes back.
async fn crash_between_claim_and_ack_loses_nothing(backend: Backend) {
    let gw = Gateway::start(backend).await;
    for i in 0..5 {
        enqueue(&gw, "c", json!({"id": format!("c{i}"), "payload": i})).await;
    }
    // The crashed worker: claims everything, drops the receipts.
    let lost = claim(&gw, "c", json!({"max": 10, "visibility_ms": 1000})).await;
    assert_eq!(lost.len(), 5);
    assert!(claim(&gw, "c", json!({"max": 10})).await.is_empty());
    // Once the claim lapses, another worker gets them all.
    gw.pass(Duration::from_millis(1000)).await;
    let mut back = Vec::new();
    while back.len() < 5 {
        let jobs = claim(&gw, "c", json!({"max": 10, "wait_ms": 8000})).await;
        assert!(!jobs.is_empty(), "the jobs come back");
        back.extend(jobs);
    }
    let ids: HashSet<&str> = back.iter().map(|j| j["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 5);
    for job in &back {
        assert_eq!(job["attempts"], 2);
        assert_eq!(ack(&gw, "c", job).await.0, 204);
    }
    assert_eq!(stats(&gw, "c").await, [0, 0, 0, 0]);
}

/// No job is claimed before it is due by the store's clock (the test runs on the store's
/// machine, so its clock is the store's); due jobs come out oldest first.
async fn nothing_is_claimed_before_it_is_due(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let delayed = enqueue(
        &gw,
        "d",
        json!({"id": "later", "payload": 1, "delay_ms": 1500}),
    )
    .await;
    let scheduled = enqueue(
        &gw,
        "d",
        json!({"id": "at", "payload": 2, "run_at": at(2500)}),
    )
    .await;
    assert_eq!(stats(&gw, "d").await, [2, 0, 0, 0]);
    assert!(
        claim(&gw, "d", json!({"max": 10})).await.is_empty(),
        "not due yet"
    );
    for (expect, reply) in [("later", &delayed), ("at", &scheduled)] {
        // Until it is due by the store's clock (the long poll covers a slow store).
        let due_in = ms(&reply["run_at"]) - gw.now_ms();
        gw.pass(Duration::from_millis(due_in.max(0) as u64)).await;
        let jobs = claim(&gw, "d", json!({"wait_ms": 8000})).await;
        assert_eq!(jobs.len(), 1, "{jobs:?}");
        assert_eq!(jobs[0]["id"], expect);
        assert_eq!(jobs[0]["run_at"], reply["run_at"]);
        let now = gw.now_ms();
        assert!(
            now >= ms(&reply["run_at"]),
            "claimed at {now}, before its due time {}",
            reply["run_at"]
        );
    }
    // Past due times: due at once, oldest first.
    enqueue(
        &gw,
        "o",
        json!({"id": "b", "payload": 0, "run_at": at(-1000)}),
    )
    .await;
    enqueue(
        &gw,
        "o",
        json!({"id": "a", "payload": 0, "run_at": at(-2000)}),
    )
    .await;
    enqueue(&gw, "o", json!({"id": "c", "payload": 0})).await;
    let jobs = claim(&gw, "o", json!({"max": 3})).await;
    let order: Vec<&str> = jobs.iter().map(|j| j["id"].as_str().unwrap()).collect();
    assert_eq!(order, ["a", "b", "c"]);
}

/// A long poll answers as soon as a job is enqueued, not at the end of its wait nor at its
/// safety-net re-check (5 s on Redis). Raced against a 4 s claim on an empty queue started
/// first, rather than timed by the test: that one answers first only if the enqueue did not
/// wake the waiting claim.
async fn long_poll_wakes_on_enqueue(backend: Backend) {
    let mut s = settings(backend);
    s.request_timeout = Duration::from_secs(40);
    let gw = Arc::new(Gateway::with_settings(s).await);
    let claim_on = |queue: &'static str, wait_ms: u64| {
        let gw = gw.clone();
        tokio::spawn(async move { claim(&gw, queue, json!({"wait_ms": wait_ms})).await })
    };
    let bound = claim_on("lp-empty", 4000);
    let waiter = claim_on("lp", 20000);
    gw.until_sleeping(2).await;
    enqueue(&gw, "lp", json!({"id": "x", "payload": 1})).await;
    tokio::select! {
        biased;
        jobs = waiter => assert_eq!(jobs.unwrap().len(), 1),
        _ = bound => panic!("the 4 s claim answered first: the enqueue did not wake the waiting claim"),
    }
}

/// Jobs that used up max_attempts go to the dead list, paged; cancel drops one.
async fn used_up_attempts_go_to_the_dead_list(backend: Backend) {
    let gw = Gateway::start(backend).await;
    for id in ["d1", "d2", "d3"] {
        enqueue(
            &gw,
            "z",
            json!({"id": id, "payload": {"id": id}, "max_attempts": 2}),
        )
        .await;
    }
    let one = claim(&gw, "z", json!({"max": 3, "visibility_ms": 1000})).await;
    assert_eq!(one.len(), 3);
    gw.pass(Duration::from_millis(1000)).await;
    let two = claim(
        &gw,
        "z",
        json!({"max": 3, "visibility_ms": 1000, "wait_ms": 8000}),
    )
    .await;
    assert_eq!(two.len(), 3, "{two:?}");
    assert!(two.iter().all(|j| j["attempts"] == 2));
    // After the second lapse they are dead, not delivered a third time.
    gw.pass(Duration::from_millis(1000)).await;
    let three = claim(&gw, "z", json!({"max": 3})).await;
    assert!(three.is_empty(), "{three:?}");
    assert_eq!(stats(&gw, "z").await, [0, 0, 0, 3]);

    let (status, page) = gw.get("/v1/queues/z/dead?limit=2").await;
    assert_eq!(status, 200, "{page}");
    let jobs = page["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0]["attempts"], 2);
    assert_eq!(jobs[0]["payload"]["id"], jobs[0]["id"]);
    let next = page["next"].as_str().expect("a next page");
    let (_, rest) = gw
        .get(&format!("/v1/queues/z/dead?limit=2&after={next}"))
        .await;
    let rest = rest["jobs"].as_array().unwrap().clone();
    assert_eq!(rest.len(), 1);
    let (_, all) = gw.get("/v1/queues/z/dead").await;
    assert!(all["next"].is_null());
    let mut ids: Vec<&str> = jobs
        .iter()
        .chain(&rest)
        .map(|j| j["id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, ["d1", "d2", "d3"]);

    // A dead id still exists (200), and cancel drops it from the list.
    let (status, _) = gw
        .post("/v1/queues/z/jobs", json!({"id": "d1", "payload": 0}))
        .await;
    assert_eq!(status, 200);
    assert_eq!(gw.delete("/v1/queues/z/jobs/d1").await.0, 204);
    assert_eq!(stats(&gw, "z").await, [0, 0, 0, 2]);
    enqueue(&gw, "z", json!({"id": "d1", "payload": 0})).await;
}

/// A payload is stored and handed back as the bytes sent: printing it again could store more
/// than was sent and priced (`1e15` printed is `1000000000000000.0`), and a worker gets what
/// its producer wrote.
async fn payloads_are_kept_as_sent(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let post_raw = |path: &str, body: String| {
        gw.client
            .post(gw.url(path))
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let payload = r#"[1e15, 1E+2, -0.0, "\u00e9\n", {"b" : 1,"a":[ ]}, 12345678901234567890123]"#;
    let sent = post_raw(
        "/v1/queues/raw/jobs",
        format!(r#"{{"id": "raw", "payload": {payload}}}"#),
    )
    .await
    .unwrap();
    assert_eq!(sent.status().as_u16(), 201);
    let claimed = post_raw("/v1/queues/raw/claim", "{}".to_owned())
        .await
        .unwrap();
    assert_eq!(claimed.status().as_u16(), 200);
    let text = claimed.text().await.unwrap();
    assert!(
        text.contains(&format!(r#""payload":{payload}"#)),
        "the payload as sent: {text}"
    );
    // A payload over the cap as sent is refused even when printing would shorten it.
    let spaced = format!(r#"{{"payload": [1{}]}}"#, " ".repeat(65_536));
    let refused = post_raw("/v1/queues/raw/jobs", spaced).await.unwrap();
    assert_eq!(refused.status().as_u16(), 400);
}

/// The payload cap and every range of docs/api.md are 400 `invalid_argument`.
async fn ranges_and_payload_cap(backend: Backend) {
    let gw = Gateway::start(backend).await;
    // At the cap: 65536 bytes serialized (a string of 65534 plus its quotes).
    enqueue(&gw, "r", json!({"payload": "x".repeat(65534)})).await;
    let bad_jobs = [
        json!({"payload": "x".repeat(65535)}),
        json!({}),
        json!({"payload": 1, "delay_ms": -1}),
        json!({"payload": 1, "delay_ms": 31_536_000_001u64}),
        json!({"payload": 1, "delay_ms": 5, "run_at": at(0)}),
        json!({"payload": 1, "run_at": "tomorrow"}),
        json!({"payload": 1, "run_at": at(31_536_000_000 + 60_000)}),
        json!({"payload": 1, "max_attempts": 0}),
        json!({"payload": 1, "max_attempts": 1001}),
        json!({"payload": 1, "id": "a b"}),
        json!({"payload": 1, "id": ""}),
        json!({"payload": 1, "extra": true}),
    ];
    for body in bad_jobs {
        let (status, p) = gw.post("/v1/queues/r/jobs", body.clone()).await;
        assert_eq!(
            (status.as_u16(), p["code"].as_str()),
            (400, Some("invalid_argument")),
            "{body}"
        );
    }
    let bad_claims = [
        json!({"max": 0}),
        json!({"max": 101}),
        json!({"visibility_ms": 999}),
        json!({"visibility_ms": 43_200_001}),
        json!({"wait_ms": 20_001}),
        json!({"wait_ms": -1}),
        json!({"nope": 1}),
    ];
    for body in bad_claims {
        let (status, p) = gw.post("/v1/queues/r/claim", body.clone()).await;
        assert_eq!(
            (status.as_u16(), p["code"].as_str()),
            (400, Some("invalid_argument")),
            "{body}"
        );
    }
    // The edges are fine.
    claim(
        &gw,
        "r",
        json!({"max": 100, "visibility_ms": 43_200_000, "wait_ms": 0}),
    )
    .await;
    claim(&gw, "r", json!({"max": 1, "visibility_ms": 1000})).await;
    for (path, body) in [
        ("/v1/queues/r/jobs/x/ack", json!({"receipt": "nope"})),
        ("/v1/queues/r/jobs/x/ack", json!({})),
        ("/v1/queues/bad%20name/jobs", json!({"payload": 1})),
        ("/v1/queues/r/jobs/bad%7Bid/ack", json!({"receipt": "1.1"})),
    ] {
        let (status, p) = gw.post(path, body).await;
        assert_eq!(
            (status.as_u16(), p["code"].as_str()),
            (400, Some("invalid_argument")),
            "{path}"
        );
    }
    for query in ["limit=0", "limit=1001", "after=x", "after=-1", "what=1"] {
        let (status, p) = gw.get(&format!("/v1/queues/r/dead?{query}")).await;
        assert_eq!(
            (status.as_u16(), p["code"].as_str()),
            (400, Some("invalid_argument")),
            "{query}"
        );
    }
}

/// A queue holding GATEWAY_QUEUE_MAX_JOBS live jobs refuses new ones with 409 queue_full.
async fn full_queue_is_refused(backend: Backend) {
    let mut s = settings(backend);
    s.queues.max_jobs = 3;
    let gw = Gateway::with_settings(s).await;
    for i in 0..3 {
        enqueue(&gw, "f", json!({"id": format!("f{i}"), "payload": i})).await;
    }
    let (status, p) = gw.post("/v1/queues/f/jobs", json!({"payload": 9})).await;
    assert_eq!(
        (status.as_u16(), p["code"].as_str()),
        (409, Some("queue_full"))
    );
    // An existing id is still answered; other queues are not affected.
    let (status, _) = gw
        .post("/v1/queues/f/jobs", json!({"id": "f0", "payload": 0}))
        .await;
    assert_eq!(status, 200);
    enqueue(&gw, "g", json!({"payload": 1})).await;
    // In-flight jobs count; an acked one frees its place.
    let jobs = claim(&gw, "f", json!({})).await;
    let (status, _) = gw.post("/v1/queues/f/jobs", json!({"payload": 9})).await;
    assert_eq!(status, 409);
    // A full queue's refusal under a key is not kept (docs/api.md "Retries and
    // `Idempotency-Key`"): like a 429 it says "later", so the repeat once a place is free runs
    // afresh, and its job is what the key keeps from then on.
    let body = json!({"payload": "keyed"});
    let (status, replayed, p) = gw.post_once("/v1/queues/f/jobs", "fk", &body).await;
    assert_eq!(
        (status, replayed, p["code"].as_str()),
        (409, false, Some("queue_full"))
    );
    assert_eq!(ack(&gw, "f", &jobs[0]).await.0, 204);
    let (status, replayed, first) = gw.post_once("/v1/queues/f/jobs", "fk", &body).await;
    assert_eq!((status, replayed), (201, false), "{first}");
    let (status, replayed, again) = gw.post_once("/v1/queues/f/jobs", "fk", &body).await;
    assert_eq!((status, replayed, &again["id"]), (201, true, &first["id"]));
}

/// An enqueue costs the global limiter more units the bigger its payload.
async fn enqueue_cost_grows_with_payload(backend: Backend) {
    let mut s = settings(backend);
    s.global.enabled = true;
    s.global.max_burst = 39; // a limit of 40, refilling one a minute
    s.global.count_per_period = 1;
    s.global.period = 60;
    let gw = Gateway::with_settings(s).await;
    let remaining = |r: &reqwest::Response| -> i64 {
        r.headers()["ratelimit-remaining"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    let send = |payload: Value| {
        gw.client
            .post(gw.url("/v1/queues/cost/jobs"))
            .json(&json!({ "payload": payload }))
            .send()
    };
    // 3 + body bytes / 1,024 (docs/ratelimit.md "Route costs").
    let small = send(json!(1)).await.unwrap();
    assert_eq!((small.status().as_u16(), remaining(&small)), (201, 37));
    // ~20 KiB of payload: 3 + 20,015 / 1,024 = 22 units.
    let big = send(json!("y".repeat(20_000))).await.unwrap();
    assert_eq!((big.status().as_u16(), remaining(&big)), (201, 15));
    // More than the whole burst of 40: refused as too costly, nothing spent. Refused before
    // its body is read, so the server closes that connection after answering: sent on a
    // connection of its own, or the client may reuse the closing one for the next request.
    let huge = gw
        .client
        .post(gw.url("/v1/queues/cost/jobs"))
        .header("connection", "close")
        .json(&json!({ "payload": "y".repeat(60_000) }))
        .send()
        .await
        .unwrap();
    assert_eq!(huge.status().as_u16(), 413);
    let small = send(json!(2)).await.unwrap();
    assert_eq!((small.status().as_u16(), remaining(&small)), (201, 12));
}

crate::contract_tests!(
    enqueue_claim_ack_cancel,
    concurrent_claimers_get_each_job_once,
    unacked_job_comes_back,
    a_retried_ack_under_its_key_is_answered_again,
    crash_between_claim_and_ack_loses_nothing,
    nothing_is_claimed_before_it_is_due,
    long_poll_wakes_on_enqueue,
    used_up_attempts_go_to_the_dead_list,
    ranges_and_payload_cap,
    payloads_are_kept_as_sent,
    full_queue_is_refused,
    enqueue_cost_grows_with_payload,
    the_dead_list_is_capped,
    a_long_poll_outlasts_the_request_timeout,
    a_long_poll_costs_more_the_longer_it_may_wait,
    claims_past_the_waiting_cap_answer_at_once,
    concurrent_enqueues_get_distinct_ids,
    concurrent_enqueues_under_one_key_make_one_job,
    concurrent_claimers_and_acks_share_a_queue,
    a_made_id_given_back_is_the_existing_job,
    documented_bounds_are_the_enforced_ones,
    an_unknown_api_key_is_a_documented_401,
    a_claim_body_may_be_left_out_as_documented,
);

/// A claim's body is optional (docs/api.md "Delayed queues": every field has a default): none,
/// an empty one, `{}`, and `null` — which the served OpenAPI document allows in its place —
/// each claim with the defaults.
async fn a_claim_body_may_be_left_out_as_documented(backend: Backend) {
    let gw = Gateway::start(backend).await;
    let doc = crate::served_document(&gw).await;
    let body = &doc["paths"]["/v1/queues/{queue}/claim"]["post"]["requestBody"];
    assert_ne!(body["required"], true, "{body}");
    let schema = &body["content"]["application/json"]["schema"];
    assert!(
        schema["oneOf"]
            .as_array()
            .is_some_and(|alternatives| alternatives.contains(&json!({"type": "null"}))),
        "{schema}"
    );
    let path = "/v1/queues/bare/claim";
    let bare = [
        gw.client.post(gw.url(path)),
        gw.client
            .post(gw.url(path))
            .header("content-type", "application/json"),
        gw.client.post(gw.url(path)).json(&json!({})),
        gw.client.post(gw.url(path)).json(&Value::Null),
    ];
    for request in bare {
        enqueue(&gw, "bare", json!({"payload": 1})).await;
        enqueue(&gw, "bare", json!({"payload": 2})).await;
        let (status, reply) = gw.send(request).await;
        assert_eq!(status, 200, "{reply}");
        assert_eq!(
            reply["jobs"].as_array().map(Vec::len),
            Some(1),
            "max 1: {reply}"
        );
        // The other one, for the next request.
        claim(&gw, "bare", json!({})).await;
    }
}

/// A claim's and an enqueue's bounds (docs/api.md "Delayed queues") are the served OpenAPI
/// document's: `max` 1–100, `visibility_ms` 1,000–43,200,000, `wait_ms` 0–20,000, `delay_ms`
/// 0–31,536,000,000, `max_attempts` 1–1,000.
async fn documented_bounds_are_the_enforced_ones(backend: Backend) {
    let gw = Gateway::start(backend).await;
    // Due jobs, so that the claims waiting up to 20 s answer at once.
    for _ in 0..2 {
        enqueue(&gw, "bounds", json!({"payload": 1})).await;
    }
    let claim = (reqwest::Method::POST, "/v1/queues/bounds/claim");
    for (field, bounds) in [
        ("wait_ms", (0, Some(20_000))),
        ("visibility_ms", (1_000, Some(43_200_000))),
        ("max", (1, Some(100))),
    ] {
        crate::documented_bounds_hold(
            &gw,
            claim.clone(),
            "ClaimBody",
            field,
            bounds,
            |v| json!({ field: v }),
        )
        .await;
    }
    let jobs = (reqwest::Method::POST, "/v1/queues/bounds/jobs");
    for (field, bounds) in [
        ("delay_ms", (0, Some(31_536_000_000))),
        ("max_attempts", (1, Some(1_000))),
    ] {
        crate::documented_bounds_hold(
            &gw,
            jobs.clone(),
            "EnqueueBody",
            field,
            bounds,
            |v| json!({"payload": 1, field: v}),
        )
        .await;
    }
}

async fn an_unknown_api_key_is_a_documented_401(backend: Backend) {
    crate::unknown_api_keys_are_a_documented_401(backend, "/v1/queues/").await;
}

/// A claim's wait is not cut by `GATEWAY_REQUEST_TIMEOUT_MS`: its route gets the longest
/// allowed wait on top, so a poll longer than the timeout still answers 200 (with the job that
/// became due while it waited).
async fn a_long_poll_outlasts_the_request_timeout(backend: Backend) {
    let mut s = settings(backend);
    s.request_timeout = std::time::Duration::from_millis(300);
    let gw = Gateway::with_settings(s).await;
    enqueue(&gw, "slow", json!({"payload": 1, "delay_ms": 1200})).await;
    let started = std::time::Instant::now();
    let jobs = claim(&gw, "slow", json!({"wait_ms": 5000})).await;
    assert_eq!(
        jobs.len(),
        1,
        "the job due after 1.2 s arrived within the wait"
    );
    assert!(started.elapsed() >= std::time::Duration::from_millis(300));
}

/// Two gateway instances on one store: a claim waiting on one is woken by an enqueue through
/// the other (pub/sub), before its safety-net re-check (5 s) or the end of its wait. Raced
/// against a 4 s claim on an empty queue started first, rather than timed by the test: that
/// one answers first only if the wake-up was missed.
async fn another_instances_enqueue_wakes_a_waiting_claim(backend: Backend) {
    let mut s = settings(backend);
    s.request_timeout = Duration::from_secs(40);
    let a = Arc::new(Gateway::with_settings(s.clone()).await);
    let b = Gateway::with_settings(s).await;
    let claim_on = |queue: &'static str, wait_ms: u64| {
        let a = a.clone();
        tokio::spawn(async move { claim(&a, queue, json!({"wait_ms": wait_ms})).await })
    };
    // A's first waiting claim starts its subscriber; it hears of B's enqueue once that listens
    // (the announcement, or the look each subscription makes). Then A listens for the race
    // below, where only the announcement can wake its claim in time.
    let warm = claim_on("warm", 20000);
    a.until_sleeping(1).await;
    enqueue(&b, "warm", json!({"id": "w", "payload": 0})).await;
    assert_eq!(warm.await.unwrap().len(), 1);
    let bound = claim_on("shared-empty", 4000);
    let waiter = claim_on("shared", 20000);
    a.until_sleeping(2).await;
    enqueue(&b, "shared", json!({"id": "x", "payload": 1})).await;
    tokio::select! {
        biased;
        jobs = waiter => assert_eq!(jobs.unwrap().len(), 1),
        _ = bound => panic!("the 4 s claim answered first: the announcement did not wake the waiting claim"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_instances_enqueue_wakes_a_waiting_claim_redis() {
    another_instances_enqueue_wakes_a_waiting_claim(Backend::Redis).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_instances_enqueue_wakes_a_waiting_claim_cluster() {
    another_instances_enqueue_wakes_a_waiting_claim(Backend::Cluster).await;
}

/// The dead list keeps the newest 1,000 jobs: one more death drops the oldest (and its data).
async fn the_dead_list_is_capped(backend: Backend) {
    let gw = Arc::new(Gateway::start(backend).await);
    const JOBS: usize = 1001;
    for chunk in (0..JOBS).collect::<Vec<_>>().chunks(100) {
        join_all(chunk.iter().map(|i| {
            let gw = gw.clone();
            async move {
                let body = json!({"id": format!("k{i:04}"), "payload": i, "max_attempts": 1});
                enqueue(&gw, "cap", body).await;
            }
        }))
        .await;
    }
    let mut claimed = 0;
    while claimed < JOBS {
        let jobs = claim(&gw, "cap", json!({"max": 100, "visibility_ms": 1000})).await;
        assert!(!jobs.is_empty());
        claimed += jobs.len();
    }
    // Once the claims lapse, each claim call sends up to 100 of them to the dead list.
    gw.pass(Duration::from_millis(1000)).await;
    let mut dead = 0;
    for _ in 0..200 {
        assert!(claim(&gw, "cap", json!({"max": 100})).await.is_empty());
        let [_, ready, in_flight, d] = stats(&gw, "cap").await;
        dead = d;
        if ready + in_flight == 0 {
            break;
        }
    }
    assert_eq!(dead, 1000, "capped");
    // The first to die (claimed first, so due first: k0000 ... in id order at one deadline)
    // is gone; the list pages through exactly the 1,000 kept.
    let (_, page) = gw.get("/v1/queues/cap/dead?limit=1000").await;
    let ids: HashSet<String> = page["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 1000);
    assert!(page["next"].is_null());
    let (status, _) = gw.delete("/v1/queues/cap/jobs/k0000").await;
    assert_eq!(status, 404, "the oldest death was dropped whole");
    assert!(!ids.contains("k0000"));
}

const DAY_MS: i64 = 86_400_000;
/// What an expiry refresh sets beyond the idle period (`IDLE_SLACK_SECS`).
const SLACK_MS: i64 = 3_600_000;

/// A payload is handed back as the text it is stored as; one that is not JSON (written into
/// Redis by hand, not through a gateway) is claimed, and listed dead, as `null`, in a reply
/// that stays JSON.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stored_payload_that_is_not_json_reads_as_null() {
    let s = settings(Backend::Redis);
    let prefix = s.key_prefix.clone();
    let gw = Gateway::with_settings(s).await;
    let payload = json!({"b": [1, 2.5, "é\"\n"], "a": {"c": null}});
    for id in ["good", "bad"] {
        let body = json!({"id": id, "payload": payload, "max_attempts": 1});
        enqueue(&gw, "raw", body).await;
    }
    let redis = crate::common::shared_redis();
    let pay = format!("{prefix}q:{{raw}}:pay");
    redis.cli(&["hset", &pay, "bad", "{not json"]).unwrap();
    let by_id = |jobs: &[Value]| {
        let mut got: Vec<(String, Value)> = jobs
            .iter()
            .map(|j| (j["id"].as_str().unwrap().to_owned(), j["payload"].clone()))
            .collect();
        got.sort_by(|a, b| a.0.cmp(&b.0));
        got
    };
    let jobs = claim(&gw, "raw", json!({"max": 2, "visibility_ms": 1000})).await;
    assert_eq!(
        by_id(&jobs),
        [("bad".into(), Value::Null), ("good".into(), payload)]
    );
    // With one attempt each, both lapsed claims go to the dead list at the next claim; its
    // listing reads payloads the same way.
    redis.cli(&["hset", &pay, "good", "[1, 2]"]).unwrap();
    gw.pass(Duration::from_millis(1000)).await;
    assert!(claim(&gw, "raw", json!({})).await.is_empty());
    let (status, page) = gw.get("/v1/queues/raw/dead").await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(
        by_id(page["jobs"].as_array().unwrap()),
        [("bad".into(), Value::Null), ("good".into(), json!([1, 2]))]
    );
}

/// A queue's keys expire (an abandoned queue goes away), but never before the latest due time
/// they hold plus the idle period (7 days), and at most an hour later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_keys_expire_after_their_last_due_time() {
    let s = settings(Backend::Redis);
    let prefix = s.key_prefix.clone();
    let gw = Gateway::with_settings(s).await;
    enqueue(&gw, "exp", json!({"payload": 1, "delay_ms": 30 * DAY_MS})).await;
    let redis = crate::common::shared_redis();
    for part in ["due", "meta", "pay"] {
        let key = format!("{prefix}q:{{exp}}:{part}");
        let pttl: i64 = redis.cli(&["pttl", &key]).unwrap().trim().parse().unwrap();
        assert!(
            pttl > 36 * DAY_MS && pttl <= 37 * DAY_MS + SLACK_MS,
            "{key}: PTTL {pttl} is not 30 days of delay + 7 idle (+ at most 1 h)"
        );
    }
}

/// An enqueue refreshes its queue's expiry only when it must (queue_enqueue.lua): one that
/// finds every key it writes expiring late enough sets nothing, yet a key an enqueue creates
/// gets its expiry (here `due`, after a claim emptied it), and a job due later than the expiry
/// allows pushes every key's further, those the enqueue does not write too. On a private
/// Redis, so its `PEXPIRE` count is this test's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enqueue_refreshes_the_queue_expiry_only_when_it_must() {
    let (redis, gw, prefix) = crate::common::on_private_redis().await;
    let pexpires = || crate::common::command_calls(&redis, "pexpire");
    // PTTL of each of the queue's keys, -2 for one that is not there.
    let pttls = || {
        ["due", "flight", "meta", "pay", "dead", "ctr"].map(|part| {
            let key = format!("{prefix}q:{{ttl}}:{part}");
            let pttl: i64 = redis.cli(&["pttl", &key]).unwrap().trim().parse().unwrap();
            (part, pttl)
        })
    };
    // Every key there expires `lo` ms from now, up to an hour more; a minute either way for
    // the claims' deadlines and the test's own time.
    let within = |lo: i64, what: &str| {
        for (part, pttl) in pttls() {
            assert!(
                pttl == -2 || (pttl > lo - 60_000 && pttl <= lo + SLACK_MS + 60_000),
                "{what}: {part} has PTTL {pttl}, not {lo} ms (+ at most 1 h): {:?}",
                pttls()
            );
        }
    };
    let present = |parts: &[&str]| {
        let there: Vec<&str> = pttls()
            .iter()
            .filter(|(_, pttl)| *pttl != -2)
            .map(|(part, _)| *part)
            .collect();
        assert_eq!(there, parts);
    };

    enqueue(&gw, "ttl", json!({"payload": 1})).await;
    present(&["due", "meta", "pay"]);
    within(7 * DAY_MS, "the first enqueue into an empty queue");
    let before = pexpires();
    assert!(before > 0);
    enqueue(&gw, "ttl", json!({"payload": 2})).await;
    enqueue(
        &gw,
        "ttl",
        json!({"id": "given", "payload": 3, "delay_ms": 1000}),
    )
    .await;
    assert_eq!(
        pexpires(),
        before,
        "expiring late enough already: no refresh"
    );
    within(7 * DAY_MS, "enqueues that refreshed nothing");

    // Every job in flight: the claim's run deletes `due`; the next enqueue makes it again.
    // The delayed job by a claim that waits for it (its 1 s runs on Redis's clock).
    assert_eq!(claim(&gw, "ttl", json!({"max": 3})).await.len(), 2);
    let delayed = claim(&gw, "ttl", json!({"max": 3, "wait_ms": 5000})).await;
    assert_eq!(delayed.len(), 1, "{delayed:?}");
    assert_eq!(delayed[0]["id"], "given");
    present(&["flight", "meta", "pay", "ctr"]);
    enqueue(&gw, "ttl", json!({"payload": 4})).await;
    present(&["due", "flight", "meta", "pay", "ctr"]);
    within(7 * DAY_MS, "an enqueue that made `due` again");

    // A job due in 30 days: every key's expiry goes past it, `flight` and `ctr` too.
    enqueue(&gw, "ttl", json!({"payload": 5, "delay_ms": 30 * DAY_MS})).await;
    within(37 * DAY_MS, "an enqueue due later than the expiry");
}

/// A claim costs the global limiter 2 + wait_ms / 1000: a long poll pays for what it holds.
async fn a_long_poll_costs_more_the_longer_it_may_wait(backend: Backend) {
    let mut s = settings(backend);
    s.global.enabled = true;
    s.global.max_burst = 39; // a limit of 40, refilling one a minute
    s.global.count_per_period = 1;
    s.global.period = 60;
    let gw = Gateway::with_settings(s).await;
    let send = |body: Option<Value>| {
        let req = gw.client.post(gw.url("/v1/queues/paid/claim"));
        match body {
            Some(body) => req.json(&body),
            None => req,
        }
        .send()
    };
    let remaining = |r: &reqwest::Response| -> i64 {
        assert_eq!(r.status(), 200);
        r.headers()["ratelimit-remaining"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap()
    };
    assert_eq!(remaining(&send(None).await.unwrap()), 38, "no body: 2");
    // Charged for the wait it asked for, known before it waits: a job is due, so this one
    // answers at once and still pays 2 + 20.
    let (status, _) = gw.post("/v1/queues/paid/jobs", json!({"payload": 1})).await;
    assert_eq!(status, 201);
    let long = send(Some(json!({"wait_ms": 20000}))).await.unwrap();
    assert_eq!(
        remaining(&long),
        38 - 3 - 22,
        "an enqueue (3) and a 20 s poll (22)"
    );
    let short = send(Some(json!({"wait_ms": 1500, "max": 5})))
        .await
        .unwrap();
    assert_eq!(remaining(&short), 13 - 3, "2 + 1");
}

/// At most `MAX_WAITING_CLAIMS` claims wait on one queue in one instance: one more is answered
/// at once (200, as if its wait_ms were 0); another queue's claims still wait.
async fn claims_past_the_waiting_cap_answer_at_once(backend: Backend) {
    let cap = redis_gateway::queues::MAX_WAITING_CLAIMS;
    let mut s = settings(backend);
    s.request_timeout = Duration::from_secs(40);
    let gw = Arc::new(Gateway::with_settings(s).await);
    let waiting: Vec<_> = (0..cap)
        .map(|_| {
            let gw = gw.clone();
            tokio::spawn(async move { claim(&gw, "capped", json!({"wait_ms": 20000})).await })
        })
        .collect();
    gw.until_sleeping(cap).await;
    assert!(waiting.iter().all(|w| !w.is_finished()), "they wait");
    let extra = tokio::time::timeout(
        Duration::from_secs(10),
        claim(&gw, "capped", json!({"wait_ms": 20000})),
    )
    .await
    .expect("answered at once, not at the end of its 20 s wait");
    assert!(extra.is_empty(), "{extra:?}");
    let started = Instant::now();
    let other = claim(&gw, "not-capped", json!({"wait_ms": 1500})).await;
    assert!(other.is_empty());
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "another queue's claim waited its wait"
    );
    // The waiting claims are still served: a job goes to one of them.
    enqueue(&gw, "capped", json!({"id": "j", "payload": 1})).await;
    let served = "a waiting claim gets the job";
    let served = crate::common::poll::eventually(Duration::from_secs(10), served, || {
        let finished = waiting.iter().position(|w| w.is_finished());
        async move { finished }
    })
    .await;
    for (i, w) in waiting.into_iter().enumerate() {
        if i == served {
            assert_eq!(w.await.unwrap().len(), 1);
        } else {
            w.abort();
        }
    }
}

/// The Redis servers of a private store (script counts are the test's own).
enum Private {
    Redis(RedisProcess),
    Cluster(RedisCluster),
}

impl Private {
    fn start(backend: Backend) -> Self {
        match backend {
            Backend::Redis => Self::Redis(RedisProcess::start(&[], false)),
            Backend::Cluster => Self::Cluster(RedisCluster::start()),
            Backend::Memory => unreachable!("counts script runs"),
        }
    }

    fn url(&self) -> String {
        match self {
            Self::Redis(r) => r.url(),
            Self::Cluster(c) => c.url(),
        }
    }

    /// Script runs on every node.
    fn runs(&self) -> u64 {
        match self {
            Self::Redis(r) => script_runs(r),
            Self::Cluster(c) => c.nodes.iter().map(script_runs).sum(),
        }
    }

    async fn until_runs(&self, n: u64) {
        let looked = "the claims looked";
        crate::common::poll::eventually_holds(Duration::from_secs(20), looked, || self.runs() >= n)
            .await;
    }

    /// Waits until `n` connections listen on a pattern on this (standalone) store: the
    /// gateways' enqueue announcement subscribers (one pattern for all: `PUBSUB NUMPAT` counts
    /// it once).
    async fn until_pattern_subscriptions(&self, n: usize) {
        let Self::Redis(r) = self else {
            unreachable!("a standalone store's subscriptions")
        };
        let listening = format!("{n} subscribers listen");
        crate::common::poll::eventually_holds(Duration::from_secs(20), &listening, || {
            let clients = r.cli(&["client", "list"]).expect("redis-cli answers");
            let subscribed = clients
                .lines()
                .filter(|l| l.split(' ').any(|field| field == "psub=1"))
                .count();
            subscribed >= n
        })
        .await;
    }

    /// Settings for gateways on this store; instances made from one value share its keys.
    fn settings(&self) -> redis_gateway::settings::Settings {
        let mut s = settings(Backend::Memory);
        s.store = redis_gateway::config::StoreChoice::Redis(self.url());
        s.request_timeout = Duration::from_secs(40);
        s
    }
}

type Waiting = tokio::task::JoinHandle<Vec<Value>>;

/// `n` claims of one job each waiting up to 20 s on `queue`, once each has made its first look.
/// They arrive one after the other, each once the one before has looked: claims arriving
/// together share their looks' script runs, and this counts one run per look.
async fn waiting_claims(store: &Private, gw: &Arc<Gateway>, queue: &str, n: usize) -> Vec<Waiting> {
    let (mut waiting, asleep) = (Vec::with_capacity(n), gw.sleeping());
    for _ in 0..n {
        let before = store.runs();
        let (gw, queue) = (gw.clone(), queue.to_owned());
        waiting.push(tokio::spawn(async move {
            claim(&gw, &queue, json!({"wait_ms": 20000})).await
        }));
        store.until_runs(before + 1).await;
    }
    gw.until_sleeping(asleep + n).await;
    waiting
}

async fn until_answered(waiting: &[Waiting], n: usize) {
    let what = "claims answered";
    crate::common::poll::eventually_holds(Duration::from_secs(10), what, || {
        waiting.iter().filter(|w| w.is_finished()).count() >= n
    })
    .await;
    // Real time: any other claim woken looks within it; the test counts those looks after.
    tokio::time::sleep(Duration::from_millis(300)).await;
}

/// With 50 claims waiting, one enqueue costs the store a bounded number of script runs (its
/// own and one claim's, plus at most one re-check), not one per waiting claim: exactly one
/// waiting claim gets the job, the others keep waiting and get the later jobs.
async fn one_enqueue_wakes_one_of_many_waiting_claims(backend: Backend) {
    const WAITERS: usize = 50;
    let store = Private::start(backend);
    let gw = Arc::new(Gateway::with_settings(store.settings()).await);
    // Loads the scripts on the queue's node, so that each run below is one run.
    enqueue(&gw, "many", json!({"payload": 0})).await;
    assert_eq!(claim(&gw, "many", json!({})).await.len(), 1);
    let waiting = waiting_claims(&store, &gw, "many", WAITERS).await;
    let before = store.runs();
    enqueue(&gw, "many", json!({"id": "j0", "payload": 0})).await;
    until_answered(&waiting, 1).await;
    let first = store.runs() - before;
    assert_eq!(
        waiting.iter().filter(|w| w.is_finished()).count(),
        1,
        "one claim answered"
    );
    // The others, still waiting, get the next jobs: one each.
    let before = store.runs();
    for n in 1..WAITERS {
        enqueue(&gw, "many", json!({"id": format!("j{n}"), "payload": n})).await;
    }
    until_answered(&waiting, WAITERS).await;
    let rest = store.runs() - before;
    eprintln!(
        "{backend:?}, {WAITERS} claims waiting: {first} script runs for the first enqueue, \
         {rest} for the next {}",
        WAITERS - 1
    );
    assert!(first <= 3, "{first} script runs for one enqueue");
    assert!(
        rest <= 3 * (WAITERS as u64 - 1),
        "{rest} script runs for {} enqueues",
        WAITERS - 1
    );
    let mut ids = HashSet::new();
    for w in waiting {
        let jobs = w.await.unwrap();
        assert_eq!(jobs.len(), 1, "a job each, not the end of a wait");
        assert!(ids.insert(jobs[0]["id"].as_str().unwrap().to_owned()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_enqueue_wakes_one_of_many_waiting_claims_redis() {
    one_enqueue_wakes_one_of_many_waiting_claims(Backend::Redis).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_enqueue_wakes_one_of_many_waiting_claims_cluster() {
    one_enqueue_wakes_one_of_many_waiting_claims(Backend::Cluster).await;
}

/// Two instances on one Redis, 20 claims waiting on each: an enqueue through one wakes one
/// claim in each (the other hears it announced), not every claim, and not two in the
/// enqueuing instance (its own announcement coming back is not counted again).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_enqueue_wakes_one_waiting_claim_per_instance() {
    let store = Private::start(Backend::Redis);
    let s = store.settings();
    let a = Arc::new(Gateway::with_settings(s.clone()).await);
    let b = Arc::new(Gateway::with_settings(s).await);
    // Loads the scripts, so that each run below is one run.
    enqueue(&b, "two", json!({"payload": 0})).await;
    assert_eq!(claim(&b, "two", json!({})).await.len(), 1);
    let on_a = waiting_claims(&store, &a, "two", 20).await;
    let on_b = waiting_claims(&store, &b, "two", 20).await;
    // Both instances' subscribers (started by their first waiting claims) listen, and the look
    // each subscription makes is over: every claim is asleep again.
    store.until_pattern_subscriptions(2).await;
    a.until_sleeping(20).await;
    b.until_sleeping(20).await;
    let before = store.runs();
    enqueue(&b, "two", json!({"id": "x", "payload": 1})).await;
    let all: Vec<Waiting> = on_a.into_iter().chain(on_b).collect();
    until_answered(&all, 1).await;
    let runs = store.runs() - before;
    eprintln!("two instances, 20 claims waiting on each: {runs} script runs for one enqueue");
    // The enqueue, one look per instance, and at most one re-check.
    assert!(runs <= 4, "{runs} script runs");
    assert_eq!(all.iter().filter(|w| w.is_finished()).count(), 1);
    for w in all {
        w.abort();
    }
}

/// 200 concurrent enqueues into one queue (grouped into shared script runs on Redis, issue
/// 42): 200 distinct ids, each job claimable exactly once.
async fn concurrent_enqueues_get_distinct_ids(backend: Backend) {
    let gw = Arc::new(Gateway::start(backend).await);
    let replies = join_all((0..200).map(|i| {
        let gw = gw.clone();
        async move { enqueue(&gw, "burst", json!({"payload": {"i": i}})).await }
    }))
    .await;
    let ids: HashSet<String> = replies
        .iter()
        .map(|r| r["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), 200, "distinct ids");
    assert_eq!(stats(&gw, "burst").await, [0, 200, 0, 0]);
    let mut claimed = HashSet::new();
    loop {
        let jobs = claim(&gw, "burst", json!({"max": 100})).await;
        if jobs.is_empty() {
            break;
        }
        for job in jobs {
            assert!(
                claimed.insert(job["id"].as_str().unwrap().to_owned()),
                "{job}"
            );
        }
    }
    assert_eq!(claimed, ids, "every job claimed once");
}

/// An id the gateway made, given back by a client, is looked up like any id a client gives:
/// 200 with the existing job, waiting or in flight, alone or in a burst beside enqueues
/// without an id (so within one grouped script run on Redis): the gateway, not the id's
/// shape, tells the store an id is new (`made_id` in src/queues/mod.rs).
async fn a_made_id_given_back_is_the_existing_job(backend: Backend) {
    let gw = Arc::new(Gateway::start(backend).await);
    let first = enqueue(&gw, "back", json!({"payload": 1, "delay_ms": 60_000})).await;
    let id = first["id"].as_str().unwrap().to_owned();
    assert_eq!(id.len(), 32, "{first}");
    let again = json!({"id": id, "payload": "other"});
    let (status, reply) = gw.post("/v1/queues/back/jobs", again).await;
    assert_eq!((status.as_u16(), &reply), (200, &first));
    assert_eq!(stats(&gw, "back").await, [1, 0, 0, 0]);

    let due = enqueue(&gw, "back", json!({"payload": 2})).await;
    assert_eq!(claim(&gw, "back", json!({})).await[0]["id"], due["id"]);
    let replies = join_all((0..40).map(|i| {
        let gw = gw.clone();
        let body = if i % 2 == 0 {
            json!({"id": due["id"], "payload": i})
        } else {
            json!({"payload": i})
        };
        async move { gw.post("/v1/queues/back/jobs", body).await }
    }))
    .await;
    for (i, (status, reply)) in replies.iter().enumerate() {
        if i % 2 == 0 {
            assert_eq!((status.as_u16(), reply), (200, &due), "in flight");
        } else {
            assert_eq!(status.as_u16(), 201, "{reply}");
        }
    }
    assert_eq!(stats(&gw, "back").await, [1, 20, 1, 0]);
}

/// 50 concurrent enqueues under one Idempotency-Key and body: one job, and every reply the
/// first's, byte for byte (replays inside one grouped script run answer the first's reply).
async fn concurrent_enqueues_under_one_key_make_one_job(backend: Backend) {
    let gw = Arc::new(Gateway::start(backend).await);
    let body = json!({"payload": {"to": "a@example.com"}});
    let replies = join_all((0..50).map(|_| {
        let (gw, body) = (gw.clone(), body.clone());
        async move {
            let r = gw
                .client
                .post(gw.url("/v1/queues/once/jobs"))
                .header("idempotency-key", "the-key")
                .json(&body)
                .send()
                .await
                .unwrap();
            let replayed = r
                .headers()
                .get("idempotency-replayed")
                .is_some_and(|h| h == "true");
            (r.status().as_u16(), replayed, r.bytes().await.unwrap())
        }
    }))
    .await;
    assert!(replies.iter().all(|(s, _, _)| *s == 201), "{replies:?}");
    assert_eq!(
        replies.iter().filter(|(_, replayed, _)| !replayed).count(),
        1
    );
    assert!(
        replies.iter().all(|(_, _, b)| *b == replies[0].2),
        "byte-identical replies: {replies:?}"
    );
    assert_eq!(stats(&gw, "once").await, [0, 1, 0, 0]);
}

/// 50 concurrent claimers on 100 jobs: each job claimed once; then every ack at once, with a
/// wrong-receipt ack beside every fifth: the right ones succeed, the wrong ones fail alone,
/// and the queue is empty after.
async fn concurrent_claimers_and_acks_share_a_queue(backend: Backend) {
    let gw = Arc::new(Gateway::start(backend).await);
    for i in 0..100 {
        enqueue(&gw, "share", json!({"id": format!("j{i}"), "payload": i})).await;
    }
    let claims = join_all((0..50).map(|_| {
        let gw = gw.clone();
        async move { claim(&gw, "share", json!({"max": 2, "visibility_ms": 120000})).await }
    }))
    .await;
    let jobs: Vec<Value> = claims.iter().flatten().cloned().collect();
    let ids: HashSet<&str> = jobs.iter().map(|j| j["id"].as_str().unwrap()).collect();
    assert!(
        claims.iter().all(|c| c.len() == 2),
        "each claim got its max"
    );
    assert_eq!((jobs.len(), ids.len()), (100, 100), "each job claimed once");
    assert!(claim(&gw, "share", json!({})).await.is_empty());
    let acks = join_all(jobs.iter().enumerate().flat_map(|(i, job)| {
        let mut wrong = job.clone();
        wrong["receipt"] = json!("1.99999");
        let mut sends = vec![(job.clone(), true)];
        if i % 5 == 0 {
            sends.insert(i % 2, (wrong, false));
        }
        sends.into_iter().map(|(job, right)| {
            let gw = gw.clone();
            async move { (ack(&gw, "share", &job).await, right) }
        })
    }))
    .await;
    for ((status, p), right) in &acks {
        if *right {
            assert_eq!(*status, 204, "{p}");
        } else {
            assert!(*status == 409 || *status == 404, "{status} {p}");
        }
    }
    assert_eq!(acks.len(), 120);
    assert_eq!(stats(&gw, "share").await, [0, 0, 0, 0]);
}

/// The grouping the tests above rely on does happen: 200 concurrent enqueues into
/// one queue, 100 concurrent claims and their 100 acks each take fewer script runs than
/// requests (a private Redis, so its command counts are this test's). On one thread, as the
/// binary's workers run (`src/workers.rs`).
#[tokio::test]
async fn a_burst_on_one_queue_shares_script_runs() {
    let (redis, gw, _) = crate::common::on_private_redis().await;
    let gw = Arc::new(gw);
    // Loads the scripts, so that each run below is one run.
    enqueue(&gw, "runs", json!({"payload": 0})).await;
    assert_eq!(claim(&gw, "runs", json!({})).await.len(), 1);
    let before = script_runs(&redis);
    join_all((0..200).map(|i| {
        let gw = gw.clone();
        async move { enqueue(&gw, "runs", json!({"payload": i})).await }
    }))
    .await;
    let enqueues = script_runs(&redis) - before;
    let before = script_runs(&redis);
    let claims = join_all((0..100).map(|_| {
        let gw = gw.clone();
        async move { claim(&gw, "runs", json!({"max": 2})).await }
    }))
    .await;
    let claim_runs = script_runs(&redis) - before;
    let jobs: Vec<Value> = claims.into_iter().flatten().collect();
    assert_eq!(jobs.len(), 200);
    let before = script_runs(&redis);
    let acked = join_all(jobs[..100].iter().map(|job| {
        let gw = gw.clone();
        async move { ack(&gw, "runs", job).await.0 }
    }))
    .await;
    let ack_runs = script_runs(&redis) - before;
    assert!(acked.iter().all(|s| *s == 204));
    eprintln!("script runs: {enqueues} for 200 enqueues, {claim_runs} for 100 claims, {ack_runs} for 100 acks");
    assert!(enqueues < 200, "{enqueues} script runs for 200 enqueues");
    assert!(claim_runs < 100, "{claim_runs} script runs for 100 claims");
    assert!(ack_runs < 100, "{ack_runs} script runs for 100 acks");
}

/// `queue_enqueue.lua`, `queue_claim.lua` and `queue_ack.lua` answering several requests in
/// one run answer each as if it ran alone, in order. Called directly on a private
/// Redis so each call's make-up is the test's.
#[tokio::test]
async fn one_queue_script_run_answers_each_request_in_order() {
    use fred::prelude::*;
    let common = include_str!("../../src/queues/redis/queue_common.lua");
    let (redis, client, enqueue_sha) = crate::common::fred_on_private_redis(&format!(
        "{common}{}",
        include_str!("../../src/queues/redis/queue_enqueue.lua")
    ))
    .await;
    let claim_sha: String = client
        .script_load(format!(
            "{common}{}",
            include_str!("../../src/queues/redis/queue_claim.lua")
        ))
        .await
        .unwrap();
    let ack_sha: String = client
        .script_load(format!(
            "{common}{}",
            include_str!("../../src/queues/redis/queue_ack.lua")
        ))
        .await
        .unwrap();
    let queue: Vec<String> = ["due", "flight", "meta", "pay", "dead", "ctr"]
        .iter()
        .map(|p| format!("q:{{t}}:{p}"))
        .collect();
    let idem = |k: &str| format!("q:{{t}}:idem:{k}");

    // Enqueue: (id, due, idempotency key and fingerprint, id made by the gateway) per job;
    // the queue holds at most 4.
    type Job<'a> = (&'a str, &'a str, Option<(&'a str, &'a str)>, bool);
    let jobs: &[Job<'_>] = &[
        ("a", "0", None, false),
        ("a", "0", None, false),
        ("b", "60000", Some(("k1", "fp1")), false),
        ("c", "0", Some(("k1", "fp1")), false),
        ("d", "0", Some(("k1", "fp2")), false),
        ("e", "0", None, true),
        ("g", "@1000", None, false),
        ("f", "0", None, false),
        ("b", "0", None, false),
        // The made id given again, as a client would: looked up, so it exists.
        ("e", "0", None, false),
    ];
    let mut keys = queue.clone();
    let mut args: Vec<String> = ["4", "86400", "604800000", "3600000", "qbell:t", "me"]
        .map(String::from)
        .to_vec();
    for (id, due, key, made) in jobs {
        if let Some((k, _)) = key {
            keys.push(idem(k));
        }
        let fp = key.map_or("", |(_, fp)| fp);
        let made = if *made { "1" } else { "" };
        args.extend([id, "{}", due, "5", fp, made].map(String::from));
    }
    let flat: Vec<Value> = client.evalsha(&enqueue_sha, keys, args).await.unwrap();
    // The flat reply cut into each job's: its tag and what follows it.
    let mut rest = flat[1..].iter().map(|v| v.as_string().unwrap());
    let mut replies: Vec<Vec<String>> = Vec::new();
    while let Some(tag) = rest.next() {
        let more = match tag.as_str() {
            "created" | "existing" => 1,
            "replay" => 3,
            _ => 0,
        };
        replies.push(
            std::iter::once(tag)
                .chain(rest.by_ref().take(more))
                .collect(),
        );
    }
    let tags: Vec<&str> = replies.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(
        tags,
        [
            "created",
            "existing",
            "created",
            "replay",
            "key_reused",
            "created",
            "created",
            "full",
            "existing",
            "existing"
        ],
        "{flat:?}"
    );
    let now = flat[0].as_i64().expect("the store's now");
    let run_at = |i: usize| replies[i][1].parse::<i64>().unwrap();
    assert_eq!(run_at(0), now, "due now: {flat:?}");
    assert_eq!(run_at(1), run_at(0), "the run's own job");
    assert_eq!(run_at(2), now + 60_000);
    assert_eq!(
        replies[3][1..],
        ["created".to_owned(), replies[2][1].clone(), "b".to_owned()],
        "the run's own record replayed"
    );
    assert_eq!(run_at(6), 1000, "due at a past instant");
    assert_eq!((run_at(8), run_at(9)), (run_at(2), run_at(5)));
    let zcard = |k: &str| redis.cli(&["ZCARD", k]).unwrap().trim().to_owned();
    assert_eq!(zcard("q:{t}:due"), "4");
    // Looked up: a, b, g and f; not e (made by the gateway) nor the ids the run made already.
    assert_eq!(crate::common::command_calls(&redis, "hget"), 4);

    // Claim: three due jobs (g, a, e) for four claims of max 1; the fourth finds none.
    let mut args: Vec<String> = ["100", "100", "1048576", "1000", "604800000"]
        .map(String::from)
        .to_vec();
    for _ in 0..4 {
        args.extend(["1", "60000"].map(String::from));
    }
    let reply: Vec<Value> = client
        .evalsha(&claim_sha, queue.clone(), args)
        .await
        .unwrap();
    assert_eq!(reply.len(), 5, "{reply:?}");
    let claimed: Vec<(String, String)> = reply[1..4]
        .iter()
        .map(|c| {
            let Value::Array(c) = c else {
                panic!("{reply:?}")
            };
            assert_eq!(c.len(), 1, "{reply:?}");
            let Value::Array(job) = &c[0] else {
                panic!("{reply:?}")
            };
            (job[0].as_string().unwrap(), job[4].as_string().unwrap())
        })
        .collect();
    assert_eq!(
        claimed.iter().map(|c| c.0.as_str()).collect::<Vec<_>>(),
        ["g", "a", "e"],
        "oldest first, one each"
    );
    assert!(
        matches!(&reply[4], Value::Array(c) if c.is_empty()),
        "{reply:?}"
    );
    assert_eq!(zcard("q:{t}:flight"), "3");

    // Ack: a wrong receipt fails alone before a right one; an ack repeated in the run is
    // 'expired' like a second ack alone, but under the key of one that took effect earlier in
    // the run it is its 'replay'; a receipt the queue never issued is 'unknown'.
    let (a, e) = (&claimed[1], &claimed[2]);
    let args: Vec<String> = [
        "604800000",
        "86400",
        &a.0,
        "1.99",
        "",
        &a.0,
        &a.1,
        "",
        &a.0,
        &a.1,
        "",
        &e.0,
        &e.1,
        "fp-e",
        &e.0,
        &e.1,
        "fp-e",
        "ghost",
        "1.5",
        "",
    ]
    .map(String::from)
    .to_vec();
    let mut keys = queue.clone();
    keys.extend(["q:{t}:idem:e".to_owned(), "q:{t}:idem:e".to_owned()]);
    let acks: Vec<String> = client.evalsha(&ack_sha, keys, args).await.unwrap();
    assert_eq!(
        acks,
        ["expired", "ok", "expired", "ok", "replay", "unknown"]
    );
    assert_eq!(zcard("q:{t}:flight"), "1");
    assert_eq!(redis.cli(&["HLEN", "q:{t}:pay"]).unwrap().trim(), "2");
}
