//! Limit policies (docs/policies.md) end to end, on memory, Redis and the 3-master Cluster:
//! a per-user purchase rule over two instances, an operation cap shared by many clients, a
//! header-keyed rule, shadow counting, reloads, and exactness under 200 concurrent requests
//! (admitted = what GCRA allows, and refused requests spend nothing of the other budgets).

#[path = "common/mod.rs"]
mod common;

use std::path::PathBuf;
use std::time::Duration;

use redis_gateway::settings::Settings;
use serde_json::{json, Value};

use common::{Backend, Gateway};

/// A policies file of `text` in a scratch directory of its own.
fn policies_file(text: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gw-policies-{}", common::unique_prefix()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("policies.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Settings with the global limiter on (burst `burst`, one unit a minute, so nothing refills
/// during a test), API clients alice..erin (key = name), and `policies`.
fn with_policies(backend: Backend, burst: u64, policies: &str) -> Settings {
    let mut s = common::settings(backend);
    let names = ["alice", "bob", "carol", "dave", "erin"];
    let clients: Vec<_> = names.iter().map(|n| (*n, *n, None)).collect();
    s.clients.file = Some(common::clients_file(&clients));
    s.global.enabled = true;
    s.global.max_burst = burst;
    s.global.count_per_period = 1;
    s.global.period = 60;
    s.policies.file = Some(policies_file(policies));
    s
}

/// Two gateways on one store (the same one twice on the memory backend, whose store is one per
/// gateway).
async fn two_instances(backend: Backend, settings: Settings) -> (Gateway, Option<Gateway>) {
    let a = Gateway::with_settings(settings.clone()).await;
    let b = match backend {
        Backend::Memory => None,
        _ => Some(Gateway::with_settings(settings).await),
    };
    (a, b)
}

#[derive(Debug)]
struct Reply {
    status: u16,
    headers: reqwest::header::HeaderMap,
    body: Value,
}

impl Reply {
    fn header(&self, name: &str) -> &str {
        self.headers.get(name).map_or("", |v| v.to_str().unwrap())
    }
}

async fn send(req: reqwest::RequestBuilder) -> Reply {
    let resp = req.send().await.expect("the gateway answers");
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let body = resp.json().await.unwrap_or(Value::Null);
    Reply {
        status,
        headers,
        body,
    }
}

fn at(offset: chrono::Duration) -> String {
    (chrono::Utc::now() + offset).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

const BUY_PER_USER: &str = r#"
[[policy]]
name = "buy-per-user"
operations = ["seckillBuy"]
by = "user"
burst = 0
count = 1
period = 60
"#;

async fn per_user_purchase_over_two_instances(backend: Backend) {
    let (a, second) = two_instances(backend, with_policies(backend, 100, BUY_PER_USER)).await;
    let b = second.as_ref().unwrap_or(&a);
    let (status, _) = a
        .admin_put(
            "/v1/seckill/vouchers/v1",
            json!({"stock": 100, "begin": at(chrono::Duration::minutes(-1)),
                   "end": at(chrono::Duration::hours(1)), "per_user_limit": 5}),
        )
        .await;
    assert_eq!(status, 201);
    let buy = |gw: &Gateway, user: u32| {
        gw.client
            .post(gw.url("/v1/seckill/vouchers/v1/orders"))
            .header("x-api-key", "alice")
            .json(&json!({ "user_id": user }))
    };
    let first = send(buy(&a, 1)).await;
    assert_eq!(first.status, 201, "{:?}", first.body);
    assert_eq!(
        first.header("ratelimit-policy"),
        "\"global\";q=101;w=6060, \"buy-per-user\";q=1;w=60"
    );
    // The limit closest to refusing is the user's: nothing left of it.
    assert_eq!(first.header("ratelimit"), "\"buy-per-user\";r=0;t=60");
    // The same user on the other instance: refused by the policy, which the problem names.
    let again = send(buy(b, 1)).await;
    assert_eq!(again.status, 429, "{:?}", again.body);
    assert_eq!(again.body["code"], "rate_limited");
    assert_eq!(again.body["policy"], "buy-per-user");
    assert_eq!(again.header("retry-after"), "60");
    assert_eq!(again.header("ratelimit-remaining"), "0");
    // Another user is not concerned, on either instance.
    assert_eq!(send(buy(b, 2)).await.status, 201);
    // The refused purchase spent nothing of alice's global budget: two spent, 99 left.
    let read = send(
        a.client
            .get(a.url("/v1/checkins/7/2026-01-01"))
            .header("x-api-key", "alice"),
    )
    .await;
    assert_eq!(read.status, 200);
    assert_eq!(read.header("ratelimit-policy"), "\"global\";q=101;w=6060");
    assert_eq!(read.header("ratelimit-remaining"), "98");
}

async fn an_operation_cap_is_shared_by_every_client(backend: Backend) {
    let policies = r#"
[[policy]]
name = "uv-cap"
operations = ["uvRecord"]
by = "operation"
burst = 4
count = 1
period = 60
"#;
    let gw = Gateway::with_settings(with_policies(backend, 100, policies)).await;
    let mut statuses = Vec::new();
    for key in ["alice", "bob", "carol", "dave", "erin", "alice", "bob"] {
        let r = send(
            gw.client
                .post(gw.url("/v1/uv/home"))
                .header("x-api-key", key)
                .json(&json!({"visitor": "v1"})),
        )
        .await;
        if r.status == 429 {
            assert_eq!(r.body["policy"], "uv-cap");
        }
        statuses.push(r.status);
    }
    assert_eq!(statuses, [200, 200, 200, 200, 200, 429, 429]);
    // Other operations are not capped.
    let read = send(
        gw.client
            .get(gw.url("/v1/uv/home"))
            .header("x-api-key", "carol"),
    )
    .await;
    assert_eq!(read.status, 200);
}

async fn a_header_keyed_rule_counts_each_value(backend: Backend) {
    let policies = r#"
[[policy]]
name = "per-tenant"
operations = ["checkinDay", "checkinMonth"]
by = "header:X-Tenant"
burst = 1
count = 1
period = 60
"#;
    let gw = Gateway::with_settings(with_policies(backend, 100, policies)).await;
    let read = |tenant: Option<&str>| {
        let req = gw.client.get(gw.url("/v1/checkins/7/2026-01-01"));
        match tenant {
            Some(t) => req.header("x-tenant", t),
            None => req,
        }
    };
    let mut statuses = Vec::new();
    for tenant in ["acme", "acme", "acme", "globex", "globex"] {
        statuses.push(send(read(Some(tenant))).await.status);
    }
    assert_eq!(statuses, [200, 200, 429, 200, 200]);
    // The caller and the OpenAPI document say which policies apply where.
    let (_, me) = gw.get("/v1/clients/me").await;
    assert_eq!(me["policies"][0]["name"], "per-tenant");
    assert_eq!(me["policies"][0]["by"], "header:x-tenant");
    let (_, document) = gw.get("/openapi.json").await;
    let paths = &document["paths"];
    assert_eq!(
        paths["/v1/checkins/{user_id}/{date}"]["get"]["x-ratelimit-policies"],
        json!(["per-tenant"])
    );
    assert!(paths["/v1/checkins/{user_id}"]["post"]
        .get("x-ratelimit-policies")
        .is_none());
    // Without the header the policy does not count the request.
    for _ in 0..3 {
        let r = send(read(None)).await;
        assert_eq!(r.status, 200);
        assert!(!r.header("ratelimit-policy").contains("per-tenant"));
    }
}

async fn shadow_counts_without_refusing(backend: Backend) {
    // Metrics are the process's: a name per backend keeps the scenarios' counts apart.
    let name = format!("trial-{backend:?}");
    let policies = r#"
[[policy]]
name = "NAME"
operations = ["*"]
by = "client"
burst = 0
count = 1
period = 60
mode = "shadow"
"#
    .replace("NAME", &name);
    let gw = Gateway::with_settings(with_policies(backend, 100, &policies)).await;
    for _ in 0..3 {
        let r = send(
            gw.client
                .get(gw.url("/v1/checkins/7/2026-01-01"))
                .header("x-api-key", "bob"),
        )
        .await;
        assert_eq!(r.status, 200);
    }
    let metrics = gw.text("/metrics").await;
    let count = |outcome: &str| -> u64 {
        metrics
            .lines()
            .filter(|l| l.starts_with("gateway_limiter_decisions_total{"))
            .filter(|l| {
                l.contains(&format!("policy=\"{name}\""))
                    && l.contains(&format!("outcome=\"{outcome}\""))
            })
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum()
    };
    assert_eq!(
        (count("allowed"), count("would_limit")),
        (1, 2),
        "{metrics}"
    );
}

/// 200 concurrent requests of one client for one user, under a user policy of 10 and a global
/// budget of 50: the policy admits exactly 10, and the 190 it refuses spend nothing of the
/// client's global budget, which then admits exactly 40 more. On a Cluster the two buckets
/// live in different slots: a request charged globally and then refused by the user's slot
/// is given back, so the global budget ends exact, but while a refund is in flight a
/// concurrent request may be refused by it: admitted is at most 10 there (docs/policies.md
/// "On a Cluster").
async fn exact_under_200_concurrent_requests(backend: Backend) {
    let policies = r#"
[[policy]]
name = "reads-per-user"
operations = ["checkinDay"]
by = "user"
burst = 9
count = 1
period = 60
"#;
    let mut settings = with_policies(backend, 49, policies);
    settings.store_timeout = Duration::from_secs(20);
    let gw = Gateway::with_settings(settings).await;
    let url = gw.url("/v1/checkins/7/2026-01-01");
    let requests = (0..200).map(|_| {
        let req = gw.client.get(&url).header("x-api-key", "dave");
        async move { send(req).await }
    });
    let replies = futures::future::join_all(requests).await;
    let admitted = replies.iter().filter(|r| r.status == 200).count();
    let refused: Vec<_> = replies.iter().filter(|r| r.status != 200).collect();
    assert!(refused.iter().all(|r| r.status == 429));
    if backend == Backend::Cluster {
        assert!((1..=10).contains(&admitted), "{admitted}");
    } else {
        assert_eq!(admitted, 10);
        assert!(refused.iter().all(|r| r.body["policy"] == "reads-per-user"));
    }
    // What is left of dave's global budget on a route no policy covers: 50 − admitted.
    let mut more = 0;
    loop {
        let r = send(
            gw.client
                .get(gw.url("/v1/uv/home"))
                .header("x-api-key", "dave"),
        )
        .await;
        if r.status != 200 {
            assert_eq!((r.status, &r.body["policy"]), (429, &json!("global")));
            break;
        }
        more += 1;
        assert!(more <= 50, "the global budget never ran out");
    }
    assert_eq!(more, 50 - admitted);
}

/// Overrides and denies set on one instance apply on another (at its next poll), expire on
/// time, and never lock out the admin token; bad input is refused.
async fn overrides_and_denies_reach_every_instance(backend: Backend) {
    let (a, second) = two_instances(backend, with_policies(backend, 100, BUY_PER_USER)).await;
    let b = second.as_ref().unwrap_or(&a);
    let read = |gw: &Gateway, key: &str| {
        gw.client
            .get(gw.url("/v1/checkins/7/2026-01-01"))
            .header("x-api-key", key)
    };
    assert_eq!(send(read(b, "bob")).await.status, 200);
    let (status, set) = a
        .admin_put(
            "/v1/admin/policies/global/overrides/bob",
            json!({"deny": true}),
        )
        .await;
    assert_eq!(status, 201, "{set}");
    assert_eq!(
        (
            set["policy"].as_str(),
            set["identity"].as_str(),
            set["deny"].as_bool()
        ),
        (Some("global"), Some("bob"), Some(true))
    );
    // Seen by the other instance at its next poll of the store (every 250 ms). Not timed: the
    // bound only catches an instance that never picks the deny up, 40 polls on, far beyond
    // what a slow machine takes. Asked at the poll's pace, so that bob's global budget (100)
    // outlasts the bound.
    let poll = Duration::from_millis(250);
    let denied = common::poll::until_every(Duration::from_secs(10), poll, || async {
        let r = send(read(b, "bob")).await;
        (r.status != 200).then_some(r)
    })
    .await
    .expect("the other instance never applied the deny");
    assert_eq!(denied.status, 403, "{:?}", denied.body);
    assert_eq!(denied.body["code"], "forbidden");
    let metrics = b.text("/metrics").await;
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("gateway_limiter_decisions_total{")
                && l.contains("policy=\"global\"")
                && l.contains("outcome=\"denied\"")),
        "{metrics}"
    );
    // Others are not denied, and the admin token is never locked out.
    assert_eq!(send(read(b, "carol")).await.status, 200);
    let admin = read(b, "bob").bearer_auth(common::ADMIN_TOKEN);
    assert_eq!(send(admin).await.status, 200);
    // Another budget for one user of a policy.
    let (status, _) = a
        .admin_put(
            "/v1/admin/policies/buy-per-user/overrides/1",
            json!({"burst": 2, "count": 1, "period": 60}),
        )
        .await;
    assert_eq!(status, 201);
    let (status, again) = a
        .admin_put(
            "/v1/admin/policies/buy-per-user/overrides/1",
            json!({"burst": 1, "count": 1, "period": 60}),
        )
        .await;
    assert_eq!((status.as_u16(), &again["burst"]), (200, &json!(1)));
    let (_, listed) = a.admin_get("/v1/admin/policies?limit=1").await;
    assert_eq!(listed["policies"][0]["name"], "global");
    assert_eq!(listed["policies"][0]["source"], "settings");
    assert_eq!(listed["policies"][0]["overrides"][0]["identity"], "bob");
    let (_, rest) = a
        .admin_get(&format!(
            "/v1/admin/policies?after={}",
            listed["next"].as_str().unwrap()
        ))
        .await;
    assert_eq!(rest["policies"][0]["name"], "buy-per-user");
    assert_eq!(rest["policies"][0]["overrides"][0]["burst"], 1);
    // The last page says so as every listing does: `next` is there, and null.
    assert_eq!(rest.get("next"), Some(&Value::Null), "{rest}");
    // Bad input.
    for (path, body, want) in [
        (
            "/v1/admin/policies/nope/overrides/1",
            json!({"deny": true}),
            404,
        ),
        (
            "/v1/admin/policies/buy-per-user/overrides/x",
            json!({"deny": true}),
            400,
        ),
        (
            "/v1/admin/policies/global/overrides/bob",
            json!({"deny": true, "burst": 1}),
            400,
        ),
        (
            "/v1/admin/policies/global/overrides/bob",
            json!({"burst": 0, "count": 0, "period": 1}),
            400,
        ),
    ] {
        assert_eq!(a.admin_put(path, body).await.0.as_u16(), want, "{path}");
    }
    // An expiry: the deny set again for 2 s, which the other instance has once its listing
    // (its own copy) shows the expiry; not timed either, the bound only catches a hang.
    let (status, _) = a
        .admin_put(
            "/v1/admin/policies/global/overrides/bob",
            json!({"deny": true, "ttl_s": 2}),
        )
        .await;
    assert_eq!(status, 200);
    let applied = "the other instance applies the expiry";
    common::poll::eventually(Duration::from_secs(10), applied, || async {
        let (_, listed) = b.admin_get("/v1/admin/policies?limit=1").await;
        listed["policies"][0]["overrides"][0]["expires_at"]
            .is_string()
            .then_some(())
    })
    .await;
    // It ends on time, 2 s after it was set: each lookup checks the expiry against the clock
    // (docs/policies.md), so the first request past it is let through, with no poll to wait for.
    a.pass(Duration::from_millis(2_100)).await;
    let after = send(read(b, "bob")).await;
    assert_eq!(after.status, 200, "still denied: {:?}", after.body);
    // Deleting: 204, then 404.
    let delete = |gw: &Gateway| {
        gw.client
            .delete(gw.url("/v1/admin/policies/buy-per-user/overrides/1"))
            .bearer_auth(common::ADMIN_TOKEN)
    };
    assert_eq!(a.send(delete(&a)).await.0.as_u16(), 204);
    assert_eq!(a.send(delete(&a)).await.0.as_u16(), 404);
}

contract_tests!(
    overrides_and_denies_reach_every_instance,
    per_user_purchase_over_two_instances,
    an_operation_cap_is_shared_by_every_client,
    a_header_keyed_rule_counts_each_value,
    shadow_counts_without_refusing,
    exact_under_200_concurrent_requests,
);

/// A changed file is picked up without a restart; a bad edit is refused and the policies in
/// force stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reload_is_picked_up_and_a_bad_reload_refused() {
    let rule = |count: u64| {
        format!(
            "[[policy]]\nname = \"tight\"\noperations = [\"checkinDay\"]\nby = \"client\"\n\
             burst = 0\ncount = {count}\nperiod = 60\n"
        )
    };
    let settings = with_policies(Backend::Memory, 100, &rule(1));
    let file = settings.policies.file.clone().unwrap();
    let gw = Gateway::with_settings(settings).await;
    let policy_of = || async {
        send(
            gw.client
                .get(gw.url("/v1/checkins/7/2026-01-01"))
                .header("x-api-key", "erin"),
        )
        .await
        .header("ratelimit-policy")
        .to_owned()
    };
    assert!(policy_of().await.ends_with("\"tight\";q=1;w=60"));
    std::fs::write(&file, rule(30) + "# longer now\n").unwrap();
    common::poll::eventually(
        Duration::from_secs(10),
        "the longer window applies",
        || async {
            policy_of()
                .await
                .ends_with("\"tight\";q=1;w=2")
                .then_some(())
        },
    )
    .await;
    // An unknown operation: refused, the policies in force stay.
    std::fs::write(&file, rule(30).replace("checkinDay", "noSuchOperation")).unwrap();
    // Real time: two looks of the gateway's own file watcher (every second), which leaves no
    // trace of a refused file but its log.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    assert!(policy_of().await.ends_with("\"tight\";q=1;w=2"));
}

/// A file naming an unknown operation, or a bad rule, refuses to start, naming the rule.
#[tokio::test]
async fn a_bad_file_refuses_to_start() {
    for (text, want) in [
        (
            "[[policy]]\nname = \"x\"\noperations = [\"nope\"]\nby = \"user\"\nburst = 0\ncount = 1\nperiod = 1\n",
            "policy #1 (\"x\"): no operation \"nope\"",
        ),
        (
            "[[policy]]\nname = \"global\"\noperations = [\"*\"]\nby = \"user\"\nburst = 0\ncount = 1\nperiod = 1\n",
            "global layer's own name",
        ),
    ] {
        let settings = with_policies(Backend::Memory, 100, text);
        let err = redis_gateway::build_state(settings).await.unwrap_err();
        let err = err.to_string();
        assert!(
            err.starts_with("invalid configuration: GATEWAY_POLICIES_FILE (--policies-file): "),
            "{err}"
        );
        assert!(err.contains(want), "{err}");
    }
}
