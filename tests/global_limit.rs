//! The global limiter (docs/api.md "Global limiter") end to end: budgets per client shared by
//! gateway instances, both header generations, 429s, exempt probes, trusted proxies, and what
//! happens when Redis is gone.

#[path = "common/mod.rs"]
mod common;

use std::time::Duration;

use redis_gateway::config::{FailPolicy, StoreChoice};
use redis_gateway::settings::Settings;
use reqwest::header::HeaderMap;
use serde_json::Value;

use common::poll::until_every;
use common::{Backend, Gateway, RedisProcess};

/// A cheap API route that is limited (it reads one small key).
const CHEAP: &str = "/v1/checkins/7/2026-01-01";

/// Test settings with the limiter on: burst 4, one per minute, so the limit is 5 and the
/// bucket refills one unit a minute (nothing refills during a test). The API clients the tests
/// use are configured, each with its name as its key.
fn limited(backend: Backend) -> Settings {
    let mut s = common::settings(backend);
    let names = ["alice", "bob", "carol", "dave", "erin"];
    let clients: Vec<_> = names.iter().map(|n| (*n, *n, None)).collect();
    s.clients.file = Some(common::clients_file(&clients));
    s.global.enabled = true;
    s.global.max_burst = 4;
    s.global.count_per_period = 1;
    s.global.period = 60;
    s
}

#[derive(Debug)]
struct Reply {
    status: u16,
    headers: HeaderMap,
    body: Value,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(|v| v.to_str().unwrap())
    }

    /// The `RateLimit-Remaining` header as a number.
    fn remaining(&self) -> i64 {
        self.header("ratelimit-remaining")
            .unwrap_or_else(|| panic!("no RateLimit-Remaining: {self:?}"))
            .parse()
            .unwrap()
    }
}

async fn get(gw: &Gateway, path: &str, headers: &[(&str, &str)]) -> Reply {
    let mut req = gw.client.get(gw.url(path));
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    let resp = req.send().await.expect("request reaches the gateway");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes = resp.bytes().await.unwrap();
    let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    if status >= 400 {
        assert_eq!(
            headers.get("content-type").unwrap(),
            "application/problem+json",
            "{status}"
        );
        assert_eq!(body["status"], status, "{body}");
    }
    Reply {
        status,
        headers,
        body,
    }
}

fn key(k: &str) -> [(&'static str, &str); 1] {
    [("x-api-key", k)]
}

async fn over_budget(backend: Backend) {
    let gw = Gateway::with_settings(limited(backend)).await;
    let alice = key("alice");
    let first = get(&gw, CHEAP, &alice).await;
    assert_eq!(first.status, 200);
    assert_eq!(first.header("ratelimit"), Some("\"global\";r=4;t=60"));
    assert_eq!(
        first.header("ratelimit-policy"),
        Some("\"global\";q=5;w=300")
    );
    assert_eq!(first.header("ratelimit-limit"), Some("5"));
    assert_eq!(first.header("ratelimit-remaining"), Some("4"));
    assert_eq!(first.header("ratelimit-reset"), Some("60"));
    assert_eq!(first.header("retry-after"), None);
    for left in (0..4).rev() {
        let r = get(&gw, CHEAP, &alice).await;
        assert_eq!((r.status, r.remaining()), (200, left));
    }
    let refused = get(&gw, CHEAP, &alice).await;
    assert_eq!(refused.status, 429);
    assert_eq!(refused.body["code"], "rate_limited");
    // The sixth unit fits one emission interval (60 s) after the fifth.
    assert_eq!(refused.header("retry-after"), Some("60"));
    assert_eq!(refused.header("ratelimit"), Some("\"global\";r=0;t=300"));
    assert_eq!(
        refused.header("ratelimit-policy"),
        Some("\"global\";q=5;w=300")
    );
    assert_eq!(refused.header("ratelimit-limit"), Some("5"));
    assert_eq!(refused.header("ratelimit-remaining"), Some("0"));
    assert_eq!(refused.header("ratelimit-reset"), Some("300"));
    // Unknown routes count too (scanners get no free budget).
    let unknown = get(&gw, "/v1/nope", &alice).await;
    assert_eq!(unknown.status, 429);

    // Another API key, and the peer address without one, have budgets of their own.
    let bob = get(&gw, CHEAP, &key("bob")).await;
    assert_eq!((bob.status, bob.remaining()), (200, 4));
    for left in (0..5).rev() {
        let r = get(&gw, CHEAP, &[]).await;
        assert_eq!((r.status, r.remaining()), (200, left));
    }
    assert_eq!(get(&gw, CHEAP, &[]).await.status, 429);

    // Probes are never limited, nor counted, whoever calls them.
    for path in ["/healthz", "/readyz"] {
        for headers in [&alice[..], &[]] {
            let r = get(&gw, path, headers).await;
            assert_eq!(r.status, 200, "{path}");
            assert_eq!(r.header("ratelimit"), None, "{path}");
        }
    }
    let r = get(&gw, CHEAP, &key("bob")).await;
    assert_eq!(r.remaining(), 3);

    // An invented or malformed key buys no budget of its own: it is charged to the address,
    // which is spent here.
    let long = "k".repeat(129);
    for bad in ["mallory", "", "has space", long.as_str()] {
        let r = get(&gw, CHEAP, &key(bad)).await;
        assert_eq!(r.status, 429, "{bad:?}");
    }
}

/// Failed credentials count against the caller's address like any request (docs/clients.md
/// "Who may do what"): a key guesser gets its 401s (or 400s) until the address's budget is spent,
/// then 429s — never an unlimited stream of answers.
async fn failed_credentials_are_counted(backend: Backend) {
    let gw = Gateway::with_settings(limited(backend)).await;
    for (n, bad) in ["guess-1", "guess-2", "guess-3", "", "guess-5"]
        .iter()
        .enumerate()
    {
        let r = get(&gw, CHEAP, &key(bad)).await;
        let expected = if bad.is_empty() { 400 } else { 401 };
        assert_eq!(r.status, expected, "{bad:?}: {:?}", r.body);
        assert_eq!(r.remaining(), 4 - n as i64, "each failure spends a unit");
    }
    for guess in 0..20 {
        let r = get(&gw, CHEAP, &key(&format!("guess-{guess}"))).await;
        assert_eq!(r.status, 429);
    }
    assert_eq!(
        get(&gw, CHEAP, &[]).await.status,
        429,
        "the address is spent"
    );
    assert_eq!(
        get(&gw, CHEAP, &key("alice")).await.status,
        200,
        "a real client is not"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_credentials_are_counted_memory() {
    failed_credentials_are_counted(Backend::Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_credentials_are_counted_redis() {
    failed_credentials_are_counted(Backend::Redis).await;
}

/// Sends `body` with `Transfer-Encoding: chunked` (no `Content-Length`) in chunks of 1,000
/// bytes over a raw socket, as alice; the response's status and head.
async fn post_chunked(gw: &Gateway, path: &str, body: &[u8]) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut sock = tokio::net::TcpStream::connect(gw.addr).await.unwrap();
    let mut request = format!(
        "POST {path} HTTP/1.1\r\nHost: gw\r\nx-api-key: alice\r\ncontent-type: application/json\r\n\
         transfer-encoding: chunked\r\nconnection: close\r\n\r\n"
    )
    .into_bytes();
    for chunk in body.chunks(1000) {
        request.extend_from_slice(format!("{:x}\r\n", chunk.len()).as_bytes());
        request.extend_from_slice(chunk);
        request.extend_from_slice(b"\r\n");
    }
    request.extend_from_slice(b"0\r\n\r\n");
    sock.write_all(&request).await.unwrap();
    let mut response = Vec::new();
    sock.read_to_end(&mut response).await.unwrap();
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text[9..12].parse().unwrap();
    (status, text)
}

/// Costs follow the bytes whatever the framing (docs/ratelimit.md "Route costs"): a chunked body is
/// priced by the bytes read, and one costing more than the burst is 413 on a route whose stored
/// bytes grow with the body — as with `Content-Length`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunked_bodies_cost_their_bytes() {
    let mut s = limited(Backend::Memory);
    s.global.max_burst = 20;
    let gw = Gateway::with_settings(s).await;
    // 1 + ~1,900 / 384: 5 units, where today's framing-blind price was 1.
    let visitors: Vec<String> = (0..100).map(|i| format!("visitor-{i:08}")).collect();
    let body = serde_json::to_vec(&serde_json::json!({ "visitors": visitors })).unwrap();
    let cost = 1 + body.len() / 384;
    assert!(cost >= 5, "{}", body.len());
    let (status, head) = post_chunked(&gw, "/v1/uv/home", &body).await;
    assert_eq!(status, 200, "{head}");
    let left = format!("ratelimit-remaining: {}\r\n", 21 - cost);
    assert!(head.to_ascii_lowercase().contains(&left), "{left}: {head}");
    // A 1,000-place geo batch with long names, chunked: 2 + ~160 KB / 432 units, far over
    // the burst of 20, is refused before any store work.
    let places: Vec<_> = (0..1000)
        .map(|i| serde_json::json!({"member": format!("{i:0>128}"), "lon": 13.36, "lat": 38.11}))
        .collect();
    let body = serde_json::to_vec(&serde_json::json!({ "places": places })).unwrap();
    let (status, head) = post_chunked(&gw, "/v1/geo/abuse", &body).await;
    assert_eq!(status, 413, "{head}");
    assert!(head.contains("payload_too_large"), "{head}");
    let (_, stored) = gw
        .get("/v1/geo/abuse/nearby?lon=13.36&lat=38.11&radius=10")
        .await;
    assert_eq!(
        stored["results"],
        serde_json::json!([]),
        "nothing was stored"
    );
    // A chunked body over the body limit is 413 too, whatever the route.
    let huge = vec![b' '; 1024 * 1024 + 1];
    let (status, head) = post_chunked(&gw, "/v1/uv/home", &huge).await;
    assert_eq!(status, 413, "{head}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_budget_memory() {
    over_budget(Backend::Memory).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_budget_redis() {
    over_budget(Backend::Redis).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_budget_cluster() {
    over_budget(Backend::Cluster).await;
}

async fn two_instances_share_one_budget(backend: Backend) {
    let settings = limited(backend);
    let a = Gateway::with_settings(settings.clone()).await;
    let b = Gateway::with_settings(settings).await;
    let carol = key("carol");
    let mut remaining = Vec::new();
    for i in 0..5 {
        let gw = if i % 2 == 0 { &a } else { &b };
        let r = get(gw, CHEAP, &carol).await;
        assert_eq!(r.status, 200);
        remaining.push(r.remaining());
    }
    assert_eq!(remaining, [4, 3, 2, 1, 0]);
    assert_eq!(get(&a, CHEAP, &carol).await.status, 429);
    assert_eq!(get(&b, CHEAP, &carol).await.status, 429);
    assert_eq!(get(&b, CHEAP, &key("dave")).await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_one_budget_redis() {
    two_instances_share_one_budget(Backend::Redis).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_share_one_budget_cluster() {
    two_instances_share_one_budget(Backend::Cluster).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_requests_get_exactly_the_budget() {
    let mut s = limited(Backend::Redis);
    s.store_timeout = Duration::from_secs(20);
    let gw = Gateway::with_settings(s).await;
    let erin = key("erin");
    let replies = futures::future::join_all((0..50).map(|_| get(&gw, CHEAP, &erin))).await;
    let ok = replies.iter().filter(|r| r.status == 200).count();
    let refused = replies.iter().filter(|r| r.status == 429).count();
    assert_eq!((ok, refused), (5, 45));
}

/// A client hammering while refused is answered by the worker itself
/// (src/policies/http/limiter/refusals.rs), with the store's own answer, and costs the store no
/// call; it is admitted again as soon as its budget has room, never sooner. One thread, as each
/// of the binary's workers (refusals are remembered per worker).
#[tokio::test]
async fn a_refused_client_costs_the_store_nothing_until_its_budget_refills() {
    let redis = RedisProcess::start(&[], false);
    let mut s = limited(Backend::Memory);
    s.store = StoreChoice::Redis(redis.url());
    // erin: burst 0, four a second, so one unit every 250 ms.
    s.clients.file = Some(common::clients_file(&[
        ("alice", "alice", None),
        ("erin", "erin", Some((0, 4, 1))),
    ]));
    let gw = Gateway::with_settings(s).await;
    let alice = key("alice");
    for _ in 0..5 {
        assert_eq!(get(&gw, CHEAP, &alice).await.status, 200);
    }
    let refused = get(&gw, CHEAP, &alice).await;
    assert_eq!(refused.status, 429);
    let runs = common::script_runs(&redis);
    for _ in 0..20 {
        let r = get(&gw, CHEAP, &alice).await;
        assert_eq!((r.status, &r.body["code"]), (429, &refused.body["code"]));
        for h in [
            "retry-after",
            "ratelimit",
            "ratelimit-policy",
            "ratelimit-limit",
            "ratelimit-remaining",
            "ratelimit-reset",
        ] {
            assert_eq!(r.header(h), refused.header(h), "{h}");
        }
    }
    assert_eq!(
        common::script_runs(&redis),
        runs,
        "a known refusal asked the store"
    );
    // Another client is still the store's to decide.
    let other = get(&gw, CHEAP, &[]).await;
    assert_eq!((other.status, other.remaining()), (200, 4));
    assert!(common::script_runs(&redis) > runs);

    // Hammering for two seconds: admitted once at the start and then once per 250 ms of
    // refill, as the store alone would admit (a remembered refusal held too long would let
    // erin in about once a second).
    let erin = key("erin");
    let (runs, started) = (common::script_runs(&redis), std::time::Instant::now());
    let (mut admitted, mut requests) = (0u64, 0u64);
    while started.elapsed() < Duration::from_secs(2) {
        let r = get(&gw, CHEAP, &erin).await;
        requests += 1;
        match r.status {
            200 => admitted += 1,
            429 => assert_eq!(r.remaining(), 0),
            other => panic!("{other}: {r:?}"),
        }
    }
    let elapsed_units = started.elapsed().as_millis() / 250;
    assert!(
        (6..=u64::try_from(elapsed_units).unwrap() + 1).contains(&admitted),
        "{admitted} admitted in {elapsed_units} refills"
    );
    // The store was asked around each refill, not on each of the requests.
    let asked = common::script_runs(&redis) - runs;
    assert!(
        asked <= 8 * admitted + 5,
        "{asked} store calls for {requests} requests, {admitted} admitted"
    );
}

/// A route the limiter charges 2 units: a UV range of 32 days (1 + days / 31).
const TWO_UNITS: &str = "/v1/uv/home?from=2026-01-01&to=2026-02-01";

/// Concurrent requests of one client, of two costs, land in the limiter's batches (a batch's
/// steps are decided in one script run, each reply derived from the clock and the TAT it
/// started from). Every reply must be the one its step got in some order of the steps: the
/// allowed requests spend the budget one after another (each `RateLimit-Remaining` is the
/// previous one less its own cost), a refused request costs more than was left, and the
/// stored TAT holds exactly what was spent. The tests run on one thread, as each of the
/// binary's workers does, so requests taken up in one turn batch (on two threads they rarely
/// do, and the test would not see a wrong replay of a batch).
async fn mixed_costs_spend_the_budget_exactly(backend: Backend) {
    let mut s = limited(backend);
    s.store_timeout = Duration::from_secs(20);
    let gw = Gateway::with_settings(s).await;
    let dave = key("dave");
    let requests: Vec<(&str, i64)> = (0..30)
        .map(|i| {
            if i % 2 == 0 {
                (CHEAP, 1)
            } else {
                (TWO_UNITS, 2)
            }
        })
        .collect();
    let replies =
        futures::future::join_all(requests.iter().map(|(path, _)| get(&gw, path, &dave))).await;
    let mut allowed = Vec::new();
    for (reply, (path, cost)) in replies.iter().zip(&requests) {
        match reply.status {
            200 => allowed.push((reply.remaining(), *cost)),
            429 => assert!(reply.remaining() < *cost, "{path} refused: {reply:?}"),
            other => panic!("{path}: {other} {reply:?}"),
        }
    }
    allowed.sort_unstable_by(|a, b| b.cmp(a));
    let mut left = 5;
    for &(remaining, cost) in &allowed {
        assert_eq!(remaining, left - cost, "allowed in order: {allowed:?}");
        left = remaining;
    }
    assert!(
        left <= 1,
        "a request fitting the budget was refused: {allowed:?}"
    );
    let after = get(&gw, CHEAP, &dave).await;
    if left == 1 {
        assert_eq!((after.status, after.remaining()), (200, 0));
    } else {
        assert_eq!(after.status, 429);
    }
}

#[tokio::test]
async fn mixed_costs_spend_the_budget_exactly_memory() {
    mixed_costs_spend_the_budget_exactly(Backend::Memory).await;
}

#[tokio::test]
async fn mixed_costs_spend_the_budget_exactly_redis() {
    mixed_costs_spend_the_budget_exactly(Backend::Redis).await;
}

#[tokio::test]
async fn mixed_costs_spend_the_budget_exactly_cluster() {
    mixed_costs_spend_the_budget_exactly(Backend::Cluster).await;
}

/// A busy client's limiter calls go to the store in batches (src/policies/http/limiter/
/// batch.rs). Requests whose clients give up while their batch is in flight — the leader's
/// among them — must neither wedge the client's bucket nor get through unlimited: Redis is
/// paused so every limiter call hangs, 40 requests are abandoned, and afterwards the client
/// is still served, and still refused exactly at its budget.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_requests_neither_wedge_nor_bypass_the_limiter() {
    let redis = RedisProcess::start(&[], false);
    let mut s = limited(Backend::Memory);
    s.store = StoreChoice::Redis(redis.url());
    s.store_timeout = Duration::from_secs(20);
    let gw = Gateway::with_settings(s).await;
    let bob = key("bob");
    assert_eq!(get(&gw, CHEAP, &bob).await.status, 200);
    redis
        .cli(&["CLIENT", "PAUSE", "1500", "ALL"])
        .expect("pause redis");
    let impatient = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let abandoned = futures::future::join_all((0..40).map(|_| {
        impatient
            .get(gw.url(CHEAP))
            .header("x-api-key", "bob")
            .send()
    }))
    .await;
    assert!(
        abandoned.iter().all(Result::is_err),
        "the pause did not hold the requests"
    );
    // Past the pause: the bucket answers again (a wedged bucket would hang here until the
    // client's timeout), and what the abandoned requests spent never lets more through.
    let patient = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .unwrap();
    let mut statuses = Vec::new();
    for _ in 0..6 {
        let r = patient
            .get(gw.url(CHEAP))
            .header("x-api-key", "bob")
            .send()
            .await
            .expect("the limiter answers after abandoned requests");
        statuses.push(r.status().as_u16());
    }
    let ok = statuses.iter().filter(|s| **s == 200).count();
    assert!(
        ok <= 4,
        "more than the budget's 4 remaining units were served: {statuses:?}"
    );
    assert_eq!(statuses.last(), Some(&429), "{statuses:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn forwarded_for_counts_only_from_trusted_proxies() {
    // Untrusted peer: X-Forwarded-For is ignored, so every "client" shares the peer's budget.
    let gw = Gateway::with_settings(limited(Backend::Memory)).await;
    for i in 0..5 {
        let hop = format!("203.0.113.{i}");
        let r = get(&gw, CHEAP, &[("x-forwarded-for", &hop)]).await;
        assert_eq!(r.status, 200);
    }
    let r = get(&gw, CHEAP, &[("x-forwarded-for", "203.0.113.99")]).await;
    assert_eq!(r.status, 429);

    // Trusted peer (the test connects from loopback): the right-most untrusted hop is the client.
    let mut s = limited(Backend::Memory);
    s.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
    let gw = Gateway::with_settings(s).await;
    for _ in 0..5 {
        let r = get(
            &gw,
            CHEAP,
            &[("x-forwarded-for", "192.0.2.66, 203.0.113.1")],
        )
        .await;
        assert_eq!(r.status, 200);
    }
    // A forged left-most hop does not buy a new budget...
    let r = get(
        &gw,
        CHEAP,
        &[("x-forwarded-for", "192.0.2.67, 203.0.113.1")],
    )
    .await;
    assert_eq!(r.status, 429);
    // ...but another client behind the proxy has its own.
    let r = get(&gw, CHEAP, &[("x-forwarded-for", "203.0.113.2")]).await;
    assert_eq!((r.status, r.remaining()), (200, 4));
    // And the proxy's own requests (no header) are a client of their own.
    let r = get(&gw, CHEAP, &[]).await;
    assert_eq!((r.status, r.remaining()), (200, 4));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switched_off_sends_no_headers() {
    let mut s = limited(Backend::Memory);
    s.global.enabled = false;
    let gw = Gateway::with_settings(s).await;
    for _ in 0..10 {
        let r = get(&gw, CHEAP, &[]).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.header("ratelimit"), None);
        assert_eq!(r.header("ratelimit-limit"), None);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn browsers_can_read_the_headers_of_a_refusal() {
    let mut s = limited(Backend::Memory);
    s.global.max_burst = 0;
    s.cors_origins = vec!["https://app.example".to_owned()];
    let gw = Gateway::with_settings(s).await;
    let origin = [("origin", "https://app.example")];
    assert_eq!(get(&gw, CHEAP, &origin).await.status, 200);
    let refused = get(&gw, CHEAP, &origin).await;
    assert_eq!(refused.status, 429);
    assert_eq!(
        refused.header("access-control-allow-origin"),
        Some("https://app.example")
    );
    let exposed = refused
        .header("access-control-expose-headers")
        .unwrap()
        .to_ascii_lowercase();
    for name in [
        "ratelimit",
        "ratelimit-policy",
        "ratelimit-reset",
        "retry-after",
    ] {
        assert!(exposed.split(',').any(|h| h.trim() == name), "{exposed}");
    }
    // Preflights are answered by CORS, outside the limiter: not refused, not counted.
    let preflight = gw
        .client
        .request(reqwest::Method::OPTIONS, gw.url(CHEAP))
        .header("origin", "https://app.example")
        .header("access-control-request-method", "GET")
        .send()
        .await
        .unwrap();
    assert!(preflight.status().is_success(), "{}", preflight.status());
    assert!(preflight.headers().get("ratelimit").is_none());
}

/// A gateway limited through a private Redis, which the test then stops.
async fn with_redis_stopped(fail: FailPolicy) -> (Gateway, RedisProcess) {
    let redis = RedisProcess::start(&[], false);
    let mut s = limited(Backend::Memory);
    s.store = StoreChoice::Redis(redis.url());
    s.store_timeout = Duration::from_millis(200);
    s.global.fail = fail;
    let gw = Gateway::with_settings(s).await;
    let r = get(&gw, "/openapi.json", &[]).await;
    assert_eq!((r.status, r.remaining()), (200, 4));
    let mut redis = redis;
    redis.stop();
    (gw, redis)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_open_serves_when_redis_is_down() {
    let (gw, _redis) = with_redis_stopped(FailPolicy::Open).await;
    for _ in 0..8 {
        // More requests than the budget: with the store gone nothing is counted.
        let r = get(&gw, "/openapi.json", &[]).await;
        assert_eq!(r.status, 200);
        assert_eq!(r.header("ratelimit"), None);
    }
    assert_eq!(get(&gw, "/healthz", &[]).await.status, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fail_closed_answers_503_when_redis_is_down() {
    let (gw, mut redis) = with_redis_stopped(FailPolicy::Closed).await;
    let r = get(&gw, "/openapi.json", &[]).await;
    assert_eq!(r.status, 503);
    assert_eq!(r.body["code"], "backend_unavailable");
    assert_eq!(get(&gw, "/healthz", &[]).await.status, 200);
    // Once Redis is back (empty: it kept nothing), the limiter serves again.
    redis.restart();
    // Paced: each look is a request the limiter decides on.
    let pace = Duration::from_millis(100);
    let back = until_every(Duration::from_secs(10), pace, || async {
        (get(&gw, "/openapi.json", &[]).await.status == 200).then_some(())
    })
    .await;
    assert!(
        back.is_some(),
        "the limiter serves again once Redis is back"
    );
}

/// Shadow mode (`GATEWAY_GLOBAL_LIMIT=shadow`): every decision made and its headers sent, the
/// would-be refusals counted, nothing refused.
#[tokio::test]
async fn shadow_mode_decides_counts_and_refuses_nothing() {
    let mut s = limited(Backend::Memory);
    s.global.shadow = true;
    let gw = Gateway::with_settings(s).await;
    let shadow_count = |metrics: &str| -> u64 {
        metrics
            .lines()
            .find(|l| l.starts_with("gateway_limiter_shadow_refusals_total{"))
            .and_then(|l| l.rsplit(' ').next())
            .map_or(0, |v| v.parse().unwrap())
    };
    let scrape = || async {
        gw.client
            .get(gw.url("/metrics"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap()
    };
    let before = shadow_count(&scrape().await);
    for i in 0..8 {
        let r = get(&gw, CHEAP, &[]).await;
        assert_eq!(r.status, 200, "request {i} served: {r:?}");
        assert_eq!(r.header("ratelimit-limit"), Some("5"));
        assert_eq!(r.remaining(), (4 - i).max(0), "request {i}");
    }
    // Requests 6, 7 and 8 would have been refused. Other tests in this process may add
    // their own, never fewer.
    assert!(shadow_count(&scrape().await) >= before + 3);
}

/// Route costs (docs/api.md "Global limiter"): a request whose store work grows with its input is
/// charged more units, before any store work, and never more than the whole budget.
#[tokio::test]
async fn expensive_requests_cost_more_units() {
    let mut s = limited(Backend::Memory);
    s.global.max_burst = 19; // a limit of 20
    let gw = Gateway::with_settings(s).await;
    let erin = key("erin");
    // A single-key read: 1 unit.
    assert_eq!(get(&gw, CHEAP, &erin).await.remaining(), 19);
    // A UV range over 93 days: 1 + 93 / 31 = 4 units.
    let range = get(&gw, "/v1/uv/home?from=2026-01-01&to=2026-04-03", &erin).await;
    assert_eq!((range.status, range.remaining()), (200, 15));
    // Check-in stats over 92 days: 1 + 92 / 8 = 12 units.
    let stats = get(
        &gw,
        "/v1/checkins/stats?from=2026-01-01&to=2026-04-02",
        &erin,
    )
    .await;
    assert_eq!((stats.status, stats.remaining()), (200, 3));
    // A union of 100 pages over a year would be 101 units: capped at the whole budget (20),
    // which no longer fits.
    let pages = (0..100)
        .map(|i| format!("p{i}"))
        .collect::<Vec<_>>()
        .join(",");
    let union = get(
        &gw,
        &format!("/v1/uv?pages={pages}&from=2026-01-01&to=2026-12-31"),
        &erin,
    )
    .await;
    assert_eq!(union.status, 429);
    // And it did not spend anything: the cheap read still fits.
    assert_eq!(get(&gw, CHEAP, &erin).await.remaining(), 2);
}

/// A merge is priced by the days in its body (1 + 12 per day), read before any store work and
/// handed on intact; one costing more than the client's burst is refused with 413.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merges_are_priced_by_their_days() {
    let mut s = common::settings(Backend::Memory);
    s.global.enabled = true;
    s.global.max_burst = 99;
    s.global.count_per_period = 1;
    s.global.period = 60;
    let gw = Gateway::with_settings(s).await;
    let merge = |to: &str| serde_json::json!({"sources": ["a", "b"], "into": "c", "from": "2026-01-01", "to": to});
    let resp = gw
        .client
        .post(gw.url("/v1/uv/merge"))
        .json(&merge("2026-01-02"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(
        resp.headers()["ratelimit-remaining"],
        "75",
        "100 - (1 + 2 × 12)"
    );
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["days"], 0, "the handler read the same body: {body}");
    let resp = gw
        .client
        .post(gw.url("/v1/uv/merge"))
        .json(&merge("2026-01-09"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 413);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["code"], "payload_too_large", "{body}");
    let again = get(&gw, "/v1/checkins/7/2026-01-01", &[]).await;
    assert_eq!(again.remaining(), 74, "a refused merge spent nothing");
}
