//! Dedup scenarios (docs/api.md "News dedup"). Each runs on memory, Redis (the Lua engine) and the
//! Cluster; with `GATEWAY_TEST_REDISBLOOM_URL` set, also on that server's native engine.

use serde_json::{json, Value};

use crate::common::{settings, Backend, Gateway};

crate::contract_tests!(
    never_a_false_negative_and_fp_rate_holds_past_capacity,
    reserve_is_201_then_200_then_409,
    filter_keeps_order_dedups_and_marks_seen,
    add_and_check_report_per_item,
    info_reports_the_filter,
    bad_inputs_are_problems,
    concurrent_adds_never_lose_an_item,
    big_layers_keep_every_item,
);

/// The engine a backend's filters report: on a server with a Bloom module loaded
/// (`GATEWAY_TEST_MODULE`), the native one.
fn engine(backend: Backend) -> &'static str {
    match backend {
        Backend::Memory => "memory",
        Backend::Redis | Backend::Cluster if crate::common::server_module().is_some() => {
            "redisbloom"
        }
        Backend::Redis | Backend::Cluster => "lua",
    }
}

fn items(prefix: &str, range: std::ops::Range<usize>) -> Vec<String> {
    range.map(|i| format!("{prefix}:{i}")).collect()
}

async fn add(gw: &Gateway, filter: &str, batch: &[String]) -> Vec<bool> {
    let (status, body) = gw
        .post(
            &format!("/v1/dedup/{filter}/items"),
            json!({ "items": batch }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let results = body["results"].as_array().expect("results");
    assert_eq!(results.len(), batch.len());
    results
        .iter()
        .zip(batch)
        .map(|(r, item)| {
            assert_eq!(r["item"], item.as_str());
            r["added"].as_bool().expect("added")
        })
        .collect()
}

async fn check(gw: &Gateway, filter: &str, batch: &[String]) -> Vec<bool> {
    let (status, body) = gw
        .post(
            &format!("/v1/dedup/{filter}/check"),
            json!({ "items": batch }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let results = body["results"].as_array().expect("results");
    assert_eq!(results.len(), batch.len());
    results
        .iter()
        .zip(batch)
        .map(|(r, item)| {
            assert_eq!(r["item"], item.as_str());
            r["seen"].as_bool().expect("seen")
        })
        .collect()
}

/// Share of 20,000 never-added items the filter claims to have seen.
async fn false_positive_rate(gw: &Gateway, filter: &str, round: &str) -> f64 {
    let mut hits = 0usize;
    for chunk in 0..20 {
        let batch = items(&format!("never-{round}"), chunk * 1000..(chunk + 1) * 1000);
        hits += check(gw, filter, &batch)
            .await
            .iter()
            .filter(|s| **s)
            .count();
    }
    hits as f64 / 20_000.0
}

async fn never_a_false_negative_and_fp_rate_holds_past_capacity(backend: Backend) {
    fp_scenario(&Gateway::start(backend).await, engine(backend)).await;
}

async fn fp_scenario(gw: &Gateway, engine: &str) {
    let (status, body) = gw
        .admin_put(
            "/v1/dedup/fp",
            json!({"capacity": 1000, "error_rate": 0.01}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let mut added = 0;
    let first = items("news", 0..1000);
    added += add(gw, "fp", &first).await.iter().filter(|a| **a).count();
    assert!(
        check(gw, "fp", &first).await.iter().all(|s| *s),
        "false negative at 1×"
    );
    let at_1x = false_positive_rate(gw, "fp", "a").await;
    let (_, info) = gw.get("/v1/dedup/fp").await;
    assert_eq!(info["layers"], 1, "{info}");
    let bits_per_item = info["bytes"].as_f64().unwrap() * 8.0 / 1000.0;

    for chunk in 1..10 {
        let batch = items("news", chunk * 1000..(chunk + 1) * 1000);
        added += add(gw, "fp", &batch).await.iter().filter(|a| **a).count();
    }
    for chunk in 0..10 {
        let batch = items("news", chunk * 1000..(chunk + 1) * 1000);
        let seen = check(gw, "fp", &batch).await;
        assert!(seen.iter().all(|s| *s), "false negative in chunk {chunk}");
    }
    let at_10x = false_positive_rate(gw, "fp", "b").await;
    let (_, info) = gw.get("/v1/dedup/fp").await;
    eprintln!(
        "dedup [{engine}]: FP rate {at_1x:.4} at 1x, {at_10x:.4} at 10x (requested 0.01); \
         {bits_per_item:.3} bits/item at 1x; at 10x {info}"
    );
    assert!(at_1x <= 0.015, "FP rate {at_1x} at 1× capacity");
    assert!(at_10x <= 0.015, "FP rate {at_10x} at 10× capacity");
    assert_eq!(info["items"], added, "{info}");
    assert!(added > 9_900, "only {added} of 10,000 were new");
    assert!(info["layers"].as_u64().unwrap() >= 4, "{info}");
    if engine != "redisbloom" {
        // Goal: within 1.1× of −ln p / ln² 2 = 9.585 bits per item at p = 0.01.
        assert!(bits_per_item <= 1.1 * 9.585, "{bits_per_item} bits/item");
        assert_eq!(info["layers"], 4, "1000 + 2000 + 4000 + 8000 hold 10,000");
    }
}

async fn reserve_is_201_then_200_then_409(backend: Backend) {
    reserve_scenario(&Gateway::start(backend).await).await;
}

async fn reserve_scenario(gw: &Gateway) {
    let params = json!({"capacity": 5000, "error_rate": 0.001});
    let (status, created) = gw.admin_put("/v1/dedup/res", params.clone()).await;
    assert_eq!(status, 201, "{created}");
    assert_eq!(created["capacity"], 5000);
    assert_eq!(created["error_rate"], 0.001);
    let (status, same) = gw.admin_put("/v1/dedup/res", params.clone()).await;
    assert_eq!(status, 200, "{same}");
    assert_eq!(same, created);
    for other in [
        json!({"capacity": 5001, "error_rate": 0.001}),
        json!({"capacity": 5000, "error_rate": 0.01}),
    ] {
        let (status, problem) = gw.admin_put("/v1/dedup/res", other).await;
        assert_eq!(status, 409, "{problem}");
        assert_eq!(problem["code"], "conflict");
        assert_eq!(problem["capacity"], 5000);
        assert_eq!(problem["error_rate"], 0.001);
    }
    let (status, problem) = gw.put("/v1/dedup/res2", params.clone()).await;
    assert_eq!(
        (status.as_u16(), &problem["code"]),
        (401, &json!("unauthorized"))
    );
    let (status, _) = gw.get("/v1/dedup/res2").await;
    assert_eq!(status, 404, "an unauthorized PUT creates nothing");

    // First use creates the filter with the configured defaults; reserving it is then
    // 200 with those and 409 with others.
    add(gw, "auto", &["x".to_owned()]).await;
    let (status, auto) = gw.get("/v1/dedup/auto").await;
    assert_eq!(status, 200);
    assert_eq!(
        (auto["capacity"].clone(), auto["error_rate"].clone()),
        (json!(300), json!(0.01))
    );
    let (status, _) = gw
        .admin_put(
            "/v1/dedup/auto",
            json!({"capacity": 300, "error_rate": 0.01}),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = gw
        .admin_put(
            "/v1/dedup/auto",
            json!({"capacity": 100, "error_rate": 0.01}),
        )
        .await;
    assert_eq!(status, 409);
    // A reserved filter keeps its own parameters when used.
    add(gw, "res", &["y".to_owned()]).await;
    let (_, after) = gw.get("/v1/dedup/res").await;
    assert_eq!(
        (after["capacity"].clone(), after["items"].clone()),
        (json!(5000), json!(1))
    );
}

async fn filter_keeps_order_dedups_and_marks_seen(backend: Backend) {
    filter_scenario(&Gateway::start(backend).await).await;
}

async fn filter_scenario(gw: &Gateway) {
    add(gw, "f", &["a".to_owned(), "b".to_owned()]).await;
    let candidates = json!(["c", "a", "d", "c", "b", "e", "d"]);
    let (status, body) = gw
        .post(
            "/v1/dedup/f/filter",
            json!({ "items": candidates, "mark_seen": false }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({"unseen": ["c", "d", "e"]}));
    let cde: Vec<String> = ["c", "d", "e"].map(str::to_owned).to_vec();
    assert_eq!(
        check(gw, "f", &cde).await,
        [false; 3],
        "not recorded with mark_seen false"
    );
    // mark_seen defaults to true (docs/api.md: "mark_seen"?: true).
    let (_, body) = gw
        .post("/v1/dedup/f/filter", json!({ "items": candidates }))
        .await;
    assert_eq!(body, json!({"unseen": ["c", "d", "e"]}));
    assert_eq!(check(gw, "f", &cde).await, [true; 3], "recorded by default");
    let (_, body) = gw
        .post(
            "/v1/dedup/f/filter",
            json!({ "items": candidates, "mark_seen": true }),
        )
        .await;
    assert_eq!(body, json!({"unseen": []}));
    let (_, info) = gw.get("/v1/dedup/f").await;
    assert_eq!(info["items"], 5, "a, b, c, d, e: {info}");

    // On a filter nobody wrote yet: everything unseen, and mark_seen creates it.
    let (_, body) = gw
        .post(
            "/v1/dedup/fresh/filter",
            json!({ "items": ["z", "y", "z"], "mark_seen": false }),
        )
        .await;
    assert_eq!(body["unseen"], json!(["z", "y"]));
    let (status, _) = gw.get("/v1/dedup/fresh").await;
    assert_eq!(status, 404, "reading creates nothing");
    let (_, body) = gw
        .post(
            "/v1/dedup/fresh/filter",
            json!({ "items": ["z", "y", "z"], "mark_seen": true }),
        )
        .await;
    assert_eq!(body["unseen"], json!(["z", "y"]));
    let (status, _) = gw.get("/v1/dedup/fresh").await;
    assert_eq!(status, 200);
}

async fn add_and_check_report_per_item(backend: Backend) {
    add_scenario(&Gateway::start(backend).await).await;
}

async fn add_scenario(gw: &Gateway) {
    let batch: Vec<String> = ["x", "x", "y", "é☃ with spaces", "x"]
        .map(str::to_owned)
        .to_vec();
    assert_eq!(add(gw, "a", &batch).await, [true, false, true, true, false]);
    assert_eq!(add(gw, "a", &batch).await, [false; 5]);
    let probe: Vec<String> = ["y", "nope", "é☃ with spaces"].map(str::to_owned).to_vec();
    assert_eq!(check(gw, "a", &probe).await, [true, false, true]);
    let long = "l".repeat(512);
    assert_eq!(add(gw, "a", std::slice::from_ref(&long)).await, [true]);
    assert_eq!(check(gw, "a", &[long]).await, [true]);
    // Filters are independent.
    assert_eq!(check(gw, "b", &probe).await, [false; 3]);
}

async fn info_reports_the_filter(backend: Backend) {
    info_scenario(&Gateway::start(backend).await, engine(backend)).await;
}

async fn info_scenario(gw: &Gateway, engine: &str) {
    let (status, created) = gw
        .admin_put(
            "/v1/dedup/news.eu",
            json!({"capacity": 1000, "error_rate": 0.01}),
        )
        .await;
    assert_eq!(status, 201);
    let (status, info) = gw.get("/v1/dedup/news.eu").await;
    assert_eq!(status, 200);
    assert_eq!(info, created);
    assert_eq!(info["filter"], "news.eu");
    assert_eq!(info["capacity"], 1000);
    assert_eq!(info["error_rate"], 0.01);
    assert_eq!(info["items"], 0);
    assert_eq!(info["layers"], 1);
    assert_eq!(info["engine"], engine);
    let bytes = info["bytes"].as_u64().unwrap();
    assert!(bytes >= 1000 * 9 / 8, "{info}");
    if engine != "redisbloom" {
        assert_eq!(bytes, 10_050u64.div_ceil(8), "the sizing in logic.rs");
    }
    add(gw, "news.eu", &items("n", 0..10)).await;
    let (_, info) = gw.get("/v1/dedup/news.eu").await;
    assert_eq!(info["items"], 10);
    let (status, ready) = gw.get("/readyz").await;
    assert_eq!(status, 200);
    assert_eq!(ready["bloom_engine"], engine);
    if engine == "memory" {
        assert!(ready.get("server").is_none(), "{ready}");
    } else {
        // The server is told apart from the Redis version it reports (Valkey says 7.2.4).
        let server = crate::common::server_binary();
        let name = if server.contains("valkey") {
            "valkey"
        } else {
            "redis"
        };
        assert_eq!(ready["server"]["name"], name, "{ready}");
        assert!(ready["server"]["version"].is_string(), "{ready}");
        let modules = ready["server"]["modules"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(
            modules.contains(&json!("bf")),
            engine == "redisbloom",
            "{ready}"
        );
    }
    // The same fact labels the metric dashboards group instances by.
    let metrics = gw.text("/metrics").await;
    let info = format!("bloom_engine=\"{engine}\"");
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("gateway_info{") && l.contains(&info)),
        "{metrics}"
    );
    let (status, problem) = gw.get("/v1/dedup/nothing-here").await;
    assert_eq!(
        (status.as_u16(), &problem["code"]),
        (404, &json!("not_found"))
    );
}

async fn bad_inputs_are_problems(backend: Backend) {
    bad_inputs_scenario(&Gateway::start(backend).await).await;
}

async fn bad_inputs_scenario(gw: &Gateway) {
    for body in [
        json!({"capacity": 1000, "error_rate": 0}),
        json!({"capacity": 1000, "error_rate": 1}),
        json!({"capacity": 1000, "error_rate": -0.1}),
        json!({"capacity": 1000, "error_rate": 1.5}),
        json!({"capacity": 1000, "error_rate": 1e-13}),
        json!({"capacity": 0, "error_rate": 0.01}),
        json!({"capacity": -5, "error_rate": 0.01}),
        json!({"capacity": 1_000_000_001u64, "error_rate": 0.5}),
        json!({"capacity": 100_000_000u64, "error_rate": 0.01}),
        json!({"capacity": 1.5, "error_rate": 0.01}),
        json!({"capacity": "1000", "error_rate": 0.01}),
        json!({"error_rate": 0.01}),
        json!({"capacity": 1000}),
        json!({"capacity": 1000, "error_rate": 0.01, "expansion": 4}),
        // Bodies are objects; an array in field order is not one.
        json!([1000, 0.01]),
    ] {
        let (status, problem) = gw.admin_put("/v1/dedup/bad", body.clone()).await;
        assert_eq!(status, 400, "{body} → {problem}");
        assert_eq!(problem["code"], "invalid_argument");
    }
    let (status, _) = gw.get("/v1/dedup/bad").await;
    assert_eq!(status, 404, "nothing was created");

    let too_many = items("i", 0..1001);
    let long = "x".repeat(513);
    for route in ["items", "check", "filter"] {
        // A batch over the cap is 413, as on every route that takes a batch (docs/api.md).
        let (status, problem) = gw
            .post(
                &format!("/v1/dedup/bad/{route}"),
                json!({ "items": too_many }),
            )
            .await;
        assert_eq!(
            (status.as_u16(), problem["code"].as_str()),
            (413, Some("payload_too_large")),
            "{route}: {problem}"
        );
        for body in [
            json!({"items": []}),
            json!({"items": ["ok", long]}),
            json!({"items": ["ok", ""]}),
            json!({"items": [1]}),
            json!({"items": "a"}),
            json!({"items": null}),
            json!({}),
            json!({"items": ["a"], "extra": 1}),
            json!(["a"]),
            json!([["a"]]),
        ] {
            let (status, problem) = gw
                .post(&format!("/v1/dedup/bad/{route}"), body.clone())
                .await;
            assert_eq!(status, 400, "{route}: {body} → {problem}");
            assert_eq!(problem["code"], "invalid_argument");
        }
    }
    let (status, _) = gw
        .post(
            "/v1/dedup/bad/filter",
            json!({"items": ["a"], "mark_seen": "yes"}),
        )
        .await;
    assert_eq!(status, 400);
    for name in ["a%20b", "a%7Bb%7D", &"n".repeat(129)] {
        let (status, problem) = gw
            .post(&format!("/v1/dedup/{name}/items"), json!({"items": ["a"]}))
            .await;
        assert_eq!(status, 400, "{name}: {problem}");
        let (status, _) = gw.get(&format!("/v1/dedup/{name}")).await;
        assert_eq!(status, 400, "{name}");
    }
    let (status, _) = gw.get("/v1/dedup/bad").await;
    assert_eq!(status, 404, "a refused batch creates nothing");

    // A body that is not JSON is 415, as on every route with a body, and the served document
    // says so; the reserve's body is capped like any other (413).
    let (_, doc) = gw.get("/openapi.json").await;
    let too_big = format!("{{\"capacity\": 1000{}}}", " ".repeat(1024 * 1024 + 1024));
    for (method, route, path) in [
        ("put", "/v1/dedup/{filter}", "/v1/dedup/bad"),
        ("post", "/v1/dedup/{filter}/items", "/v1/dedup/bad/items"),
        ("post", "/v1/dedup/{filter}/check", "/v1/dedup/bad/check"),
        ("post", "/v1/dedup/{filter}/filter", "/v1/dedup/bad/filter"),
    ] {
        let request = |content_type: &str, body: String| {
            let method = reqwest::Method::from_bytes(method.to_uppercase().as_bytes()).unwrap();
            gw.client
                .request(method, gw.url(path))
                .bearer_auth(crate::common::ADMIN_TOKEN)
                .header("content-type", content_type)
                .body(body)
        };
        let (status, problem) = gw
            .send(request("text/plain", r#"{"items": ["a"]}"#.to_owned()))
            .await;
        assert_eq!(
            (status.as_u16(), problem["code"].as_str()),
            (415, Some("unsupported_media_type")),
            "{method} {path}"
        );
        let (status, problem) = gw.send(request("application/json", too_big.clone())).await;
        assert_eq!(
            (status.as_u16(), problem["code"].as_str()),
            (413, Some("payload_too_large")),
            "{method} {path}"
        );
        let responses = &doc["paths"][route][method]["responses"];
        for status in ["413", "415"] {
            assert!(
                responses[status].is_object(),
                "{method} {route} documents {status}: {responses}"
            );
        }
    }
    let (status, _) = gw.get("/v1/dedup/bad").await;
    assert_eq!(status, 404, "a refused body creates nothing");
}

async fn concurrent_adds_never_lose_an_item(backend: Backend) {
    concurrency_scenario(&Gateway::start(backend).await).await;
}

/// 2,000 items added by 8 concurrent writers into a filter that grows through 5 layers while
/// they write: every one must be seen afterwards, and counted once.
async fn concurrency_scenario(gw: &Gateway) {
    let (status, _) = gw
        .admin_put(
            "/v1/dedup/conc",
            json!({"capacity": 100, "error_rate": 0.01}),
        )
        .await;
    assert_eq!(status, 201);
    let writers = (0..8).map(|w| async move {
        let mut added = 0;
        for round in 0..5 {
            let start = w * 250 + round * 50;
            let batch = items("c", start..start + 50);
            added += add(gw, "conc", &batch).await.iter().filter(|a| **a).count();
        }
        added
    });
    let added: usize = futures::future::join_all(writers).await.into_iter().sum();
    let all = items("c", 0..2000);
    for chunk in all.chunks(1000) {
        assert!(
            check(gw, "conc", chunk).await.iter().all(|s| *s),
            "false negative"
        );
    }
    let (_, info) = gw.get("/v1/dedup/conc").await;
    assert_eq!(info["items"], added, "{info}");
    assert!(added > 1_950, "{added}");
    assert!(info["layers"].as_u64().unwrap() >= 5, "{info}");
}

/// The memory backend and the Lua engine share sizing and hashing: the same writes give the
/// same false positives, item for item.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_and_lua_agree_bit_for_bit() {
    if engine(Backend::Redis) != "lua" {
        eprintln!(
            "SKIPPED dedup::memory_and_lua_agree_bit_for_bit: the test server has a Bloom \
             module, so new filters take the native engine, which is not the memory backend's"
        );
        return;
    }
    let memory = Gateway::start(Backend::Memory).await;
    let lua = Gateway::start(Backend::Redis).await;
    let mut answers = Vec::new();
    for gw in [&memory, &lua] {
        let (status, _) = gw
            .admin_put(
                "/v1/dedup/same",
                json!({"capacity": 300, "error_rate": 0.05}),
            )
            .await;
        assert_eq!(status, 201);
        let mut flags = Vec::new();
        for chunk in 0..2 {
            flags.extend(add(gw, "same", &items("s", chunk * 1000..(chunk + 1) * 1000)).await);
        }
        for chunk in 0..5 {
            flags.extend(
                check(
                    gw,
                    "same",
                    &items("probe", chunk * 1000..(chunk + 1) * 1000),
                )
                .await,
            );
        }
        let (_, info) = gw.get("/v1/dedup/same").await;
        answers.push((
            flags,
            info["items"].clone(),
            info["bytes"].clone(),
            info["layers"].clone(),
        ));
    }
    let false_positives = answers[0].0[2000..].iter().filter(|s| **s).count();
    assert!(
        false_positives > 0,
        "the comparison must cover some false positives"
    );
    assert_eq!(answers[0], answers[1]);
}

/// On Redis, a filter's metadata and every layer (the Lua engine's bitmaps, or the native
/// filter) carry the idle retention as their TTL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redis_filters_expire_when_idle() {
    for backend in [Backend::Redis, Backend::Cluster] {
        let mut s = settings(backend);
        s.dedup.retention_days = 2;
        let prefix = s.key_prefix.clone();
        let gw = Gateway::with_settings(s).await;
        let (status, _) = gw
            .admin_put("/v1/dedup/ttl", json!({"capacity": 10, "error_rate": 0.1}))
            .await;
        assert_eq!(status, 201);
        add(&gw, "ttl", &items("t", 0..40)).await;
        let (_, info) = gw.get("/v1/dedup/ttl").await;
        let layers = info["layers"].as_u64().unwrap();
        assert!(layers >= 2, "{info}");
        let cli = |key: String| {
            let out = match backend {
                Backend::Cluster => {
                    crate::common::shared_cluster().nodes[0].cli(&["-c", "ttl", &key])
                }
                _ => crate::common::shared_redis().cli(&["ttl", &key]),
            };
            out.expect("redis-cli")
                .trim()
                .parse::<i64>()
                .expect("a TTL")
        };
        let native = engine(backend) == "redisbloom";
        let mut keys = vec![format!("{prefix}bf:{{ttl}}")];
        if native {
            keys.push(format!("{prefix}bf:{{ttl}}:rb"));
        } else {
            keys.extend((0..layers).map(|i| format!("{prefix}bf:{{ttl}}:{i}")));
        }
        for key in keys {
            let ttl = cli(key.clone());
            assert!(
                ttl > 2 * 86_400 - 60 && ttl <= 2 * 86_400,
                "{key}: TTL {ttl}"
            );
        }
        if !native {
            assert_eq!(
                cli(format!("{prefix}bf:{{ttl}}:{layers}")),
                -2,
                "no layer past the last"
            );
        }
    }
}

/// The same scenarios on a RedisBloom-capable server, when the environment points at one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redisbloom_native_engine() {
    let Ok(url) = std::env::var("GATEWAY_TEST_REDISBLOOM_URL") else {
        eprintln!(
            "SKIPPED dedup::redisbloom_native_engine: set GATEWAY_TEST_REDISBLOOM_URL to a \
             Redis with RedisBloom (e.g. Redis 8) to run the dedup scenarios on BF.*"
        );
        return;
    };
    let start = || {
        let mut s = settings(Backend::Memory);
        s.store = redis_gateway::config::StoreChoice::Redis(url.clone());
        Gateway::with_settings(s)
    };
    let (_, ready): (_, Value) = start().await.get("/readyz").await;
    assert_eq!(ready["bloom_engine"], "redisbloom", "{ready}");
    fp_scenario(&start().await, "redisbloom").await;
    reserve_scenario(&start().await).await;
    filter_scenario(&start().await).await;
    add_scenario(&start().await).await;
    info_scenario(&start().await, "redisbloom").await;
    bad_inputs_scenario(&start().await).await;
    concurrency_scenario(&start().await).await;
}

/// A first layer bigger than one 2 MiB piece (Redis keeps it as piece keys under the filter's
/// hash tag, docs/performance.md "Redis time per request") still never forgets an item, on a
/// Cluster too.
async fn big_layers_keep_every_item(backend: Backend) {
    let gw = Gateway::start(backend).await;
    // 3 million items at 1%: a ~3.6 MiB first layer, two pieces.
    let (status, body) = gw
        .admin_put(
            "/v1/dedup/big",
            json!({"capacity": 3_000_000, "error_rate": 0.01}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let batch = items("big", 0..300);
    assert!(add(&gw, "big", &batch).await.iter().all(|a| *a), "all new");
    assert!(
        check(&gw, "big", &batch).await.iter().all(|s| *s),
        "all seen"
    );
    assert!(
        add(&gw, "big", &batch).await.iter().all(|a| !*a),
        "none new the second time"
    );
    let fresh = items("other", 0..300);
    let seen = check(&gw, "big", &fresh)
        .await
        .iter()
        .filter(|s| **s)
        .count();
    assert!(seen <= 12, "{seen} of 300 false positives at 1%");
}

/// A filter keeps the engine it was made with: one made by the Lua engine still answers for
/// every item after the server gains RedisBloom (`MODULE LOAD` while it runs), and grows on
/// Lua, while a filter made afterwards gets the native engine. Runs where RedisBloom is at
/// hand (`target/servers/redisbloom.so`, which ./scripts/servers fetches) on the default
/// server; the server matrix's rows load their own modules from the start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filter_keeps_its_engine_when_the_server_gains_a_module() {
    let module = crate::common::redisbloom_module();
    let Some(module) = module.filter(|_| {
        crate::common::server_module().is_none() && crate::common::server_binary() == "redis-server"
    }) else {
        eprintln!(
            "SKIPPED dedup::a_filter_keeps_its_engine_when_the_server_gains_a_module: needs \
             target/servers/redisbloom.so (./scripts/servers) and Debian's redis-server \
             without a module"
        );
        return;
    };
    let redis = crate::common::RedisProcess::start(&["--enable-module-command", "yes"], false);
    // One key prefix for both gateways: they share the filters.
    let mut shared = settings(Backend::Memory);
    shared.store = redis_gateway::config::StoreChoice::Redis(redis.url());
    let start = || Gateway::with_settings(shared.clone());
    let before = start().await;
    let old = items("old", 0..300);
    assert!(add(&before, "kept", &old).await.iter().all(|a| *a));
    let (_, info) = before.get("/v1/dedup/kept").await;
    assert_eq!(info["engine"], "lua", "{info}");

    let loaded = redis.cli(&["module", "load", module.to_str().unwrap()]);
    assert_eq!(loaded.as_deref().map(str::trim), Some("OK"));
    // A gateway started now finds the module; the filter made before keeps its engine.
    let after = start().await;
    let (_, ready) = after.get("/readyz").await;
    assert_eq!(ready["bloom_engine"], "redisbloom", "{ready}");
    assert!(
        ready["server"]["modules"]
            .as_array()
            .is_some_and(|m| m.contains(&json!("bf"))),
        "{ready}"
    );
    let seen = check(&after, "kept", &old).await;
    let (_, info) = after.get("/v1/dedup/kept").await;
    assert!(
        seen.iter().all(|s| *s),
        "{} of 300 seen; {info}",
        seen.iter().filter(|s| **s).count()
    );
    // Grown past its first layer on Lua: every item the filter took as new is counted (a
    // false positive among the new ones is taken as seen, at most a few at 1%).
    let new = add(&after, "kept", &items("new", 0..300)).await;
    let added = new.iter().filter(|a| **a).count();
    let (_, info) = after.get("/v1/dedup/kept").await;
    assert!(added >= 290, "{added} of 300 new; {info}");
    assert_eq!(
        (&info["engine"], &info["items"], &info["layers"]),
        (&json!("lua"), &json!(300 + added), &json!(2)),
        "{info}"
    );
    add(&after, "fresh", &items("f", 0..10)).await;
    let (_, info) = after.get("/v1/dedup/fresh").await;
    assert_eq!(info["engine"], "redisbloom", "{info}");
}

/// A filter made natively whose server no longer has a Bloom module (a backup restored onto a
/// server without it, a failover to a replica started without `--loadmodule`) answers a problem
/// that names the missing module on every route, never a wrong answer: not "unseen" for items
/// the filter holds, not an empty filter in its info, and it is not silently made anew on Lua.
/// The metadata is written as the native engine leaves it (its data key cannot exist without
/// the module).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_native_filter_without_its_module_is_a_clear_problem() {
    if crate::common::server_module().is_some() {
        eprintln!(
            "SKIPPED dedup::a_native_filter_without_its_module_is_a_clear_problem: the server \
             has a Bloom module (GATEWAY_TEST_MODULE)"
        );
        return;
    }
    let redis = crate::common::RedisProcess::start(&[], false);
    let mut s = settings(Backend::Memory);
    s.store = redis_gateway::config::StoreChoice::Redis(redis.url());
    let meta = format!("{}bf:{{gone}}", s.key_prefix);
    let gw = Gateway::with_settings(s).await;
    let written = redis.cli(&[
        "hset",
        &meta,
        "capacity",
        "1000",
        "error_rate",
        "0.01",
        "engine",
        "redisbloom",
    ]);
    assert_eq!(written.as_deref().map(str::trim), Some("3"));
    let batch = items("gone", 0..3);
    for (what, status, body) in [
        ("info", gw.get("/v1/dedup/gone").await),
        (
            "check",
            gw.post("/v1/dedup/gone/check", json!({"items": batch}))
                .await,
        ),
        (
            "add",
            gw.post("/v1/dedup/gone/items", json!({"items": batch}))
                .await,
        ),
        (
            "filter",
            gw.post("/v1/dedup/gone/filter", json!({"items": batch}))
                .await,
        ),
    ]
    .map(|(what, (status, body))| (what, status, body))
    {
        assert_eq!(status, 503, "{what}: {body}");
        assert!(
            body["detail"]
                .as_str()
                .is_some_and(|d| d.contains("module")),
            "{what}: {body}"
        );
    }
    let engine = redis.cli(&["hget", &meta, "engine"]);
    assert_eq!(
        engine.as_deref().map(str::trim),
        Some("redisbloom"),
        "left as it was"
    );
}
