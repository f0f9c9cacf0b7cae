//! The sale page of docs/events.md "A sale page", taken from the document as written, in a real
//! browser: headless Chromium loads it from another origin (allowed by `GATEWAY_CORS_ORIGINS`)
//! while the gateway binary's voucher goes on sale and is bought out. The page must have shown
//! the sale pending, then on sale, the stock falling 2 → 1 → 0, and sold out, in that order.
//! Only a browser runs `EventSource` with its CORS checks and reconnect rules, so no HTTP
//! client can stand in for it. Needs `chromium` on PATH (./scripts/test installs it).

mod common;

use std::io::Read;
use std::process::{Child, Stdio};
use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use common::binary::Binary;
use common::poll;
use serde_json::json;

/// The page of docs/events.md: its one ```html block.
fn documented_page() -> String {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/events.md");
    let doc = std::fs::read_to_string(path).unwrap();
    let (_, rest) = doc
        .split_once("\n```html\n")
        .expect("docs/events.md has an ```html block");
    let (page, _) = rest.split_once("\n```").expect("the block is closed");
    page.to_owned()
}

/// Headless Chromium on `url`, dumping the page's DOM when it is done.
///
/// Done is when the page closed its stream: under `--virtual-time-budget` the page's clock
/// stands still while a request is open, and an EventSource is one for as long as it listens,
/// so Chromium waits in real time for every event the gateway sends, however slow the machine,
/// and runs out its budget (dumping the DOM) only once the page stopped listening at "sold
/// out". A plain `--dump-dom` would dump at the load event, before any sale event; the budget
/// alone, without the page closing its stream, would never run out.
fn browse(url: &str, profile: &std::path::Path) -> Child {
    let found = std::process::Command::new("chromium")
        .arg("--version")
        .output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "chromium is needed for this test (./scripts/test installs it)"
    );
    let mut cmd = common::process::tied("chromium");
    cmd.args([
        "--headless",
        // Root in containers (the test suite's usual home) has no user namespace sandbox.
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        &format!("--user-data-dir={}", profile.display()),
        "--virtual-time-budget=5000",
        "--dump-dom",
        url,
    ])
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    common::process::spawn(cmd).unwrap()
}

/// How many voucher streams the gateway has opened (answered 200), from its metrics.
async fn streams_opened(gateway: &Binary) -> u64 {
    let text = reqwest::get(gateway.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    text.lines()
        .filter(|l| {
            l.starts_with("gateway_http_requests_total{")
                && l.contains(r#"route="/v1/seckill/vouchers/{voucher_id}/events""#)
                && l.contains(r#"status="200""#)
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum::<f64>() as u64
}

/// The text of the element `<tag id="id">` in `dom`, unescaped.
fn element(dom: &str, tag: &str, id: &str) -> String {
    let text = dom
        .split_once(&format!(r#"<{tag} id="{id}">"#))
        .and_then(|(_, rest)| rest.split_once(&format!("</{tag}>")))
        .map(|(text, _)| text)
        .unwrap_or_else(|| panic!("no #{id} in the page: {dom}"));
    text.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&")
}

/// An event stream read by the test itself, to pace the purchases by what the gateway sends.
struct Watcher {
    response: reqwest::Response,
    seen: String,
}

impl Watcher {
    async fn open(url: &str) -> Self {
        let response = reqwest::get(url).await.unwrap();
        assert_eq!(response.status(), 200);
        Self {
            response,
            seen: String::new(),
        }
    }

    /// Reads the stream until it has carried `needle` (since the last call), within 10 s.
    async fn until(&mut self, needle: &str) {
        let wait = async {
            while !self.seen.contains(needle) {
                let chunk = self
                    .response
                    .chunk()
                    .await
                    .unwrap()
                    .expect("the stream goes on");
                self.seen.push_str(&String::from_utf8_lossy(&chunk));
            }
        };
        tokio::time::timeout(Duration::from_secs(10), wait)
            .await
            .unwrap_or_else(|_| panic!("the stream did not send {needle}: {}", self.seen));
        self.seen.clear();
    }
}

fn rfc3339(at: chrono::DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Millis, true)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_documented_sale_page_shows_a_sale_begin_and_sell_out() {
    let page = common::pages::serve(documented_page());
    let gateway = Binary::start(&[("GATEWAY_CORS_ORIGINS", &page)]);
    gateway.wait_ready().await;
    let client = reqwest::Client::new();
    let voucher = "browser-sale";
    let end = Utc::now() + chrono::Duration::hours(2);
    let put = |begin: chrono::DateTime<Utc>| {
        client
            .put(gateway.url(&format!("/v1/seckill/vouchers/{voucher}")))
            .bearer_auth(common::ADMIN_TOKEN)
            .json(&json!({
                "stock": 2,
                "begin": rfc3339(begin),
                "end": rfc3339(end),
            }))
            .send()
    };
    // Pending until the page watches: how long Chromium takes to start is the machine's.
    let defined = put(Utc::now() + chrono::Duration::hours(1)).await.unwrap();
    assert_eq!(defined.status(), 201);

    let profile =
        std::env::temp_dir().join(format!("gw-test-{}-browser-events", std::process::id()));
    let url = format!(
        "{page}/sale.html?gw={}&v={voucher}",
        gateway.url("").trim_end_matches('/')
    );
    let mut chromium = browse(&url, &profile);
    let mut out = chromium.stdout.take().unwrap();
    // Read while it runs: a full pipe would block it.
    let dom = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = out.read_to_string(&mut text);
        text
    });

    poll::eventually(
        Duration::from_secs(20),
        "the page opens its stream",
        || async { (streams_opened(&gateway).await >= 1).then_some(()) },
    )
    .await;
    // The sale begins a moment after the page has seen it pending, by the gateway's clock.
    let replaced = put(Utc::now() + chrono::Duration::seconds(1))
        .await
        .unwrap();
    assert_eq!(replaced.status(), 200);
    let mut watcher =
        Watcher::open(&gateway.url(&format!("/v1/seckill/vouchers/{voucher}/events"))).await;
    watcher.until(r#""status":"active""#).await;

    let buy = |user: u64| {
        client
            .post(gateway.url(&format!("/v1/seckill/vouchers/{voucher}/orders")))
            .json(&json!({ "user_id": user }))
            .send()
    };
    assert_eq!(buy(1).await.unwrap().status(), 201);
    // The next purchase only once the stock of 1 went out: stock events are coalesced (one
    // per 100 ms), and a sell-out right behind would replace it.
    watcher.until(r#""stock":1"#).await;
    assert_eq!(buy(2).await.unwrap().status(), 201);
    let refused = buy(3).await.unwrap();
    assert_eq!(refused.status(), 409);
    let problem: serde_json::Value = refused.json().await.unwrap();
    assert_eq!(problem["code"], "sold_out", "{problem}");

    let ended = poll::until_blocking(Duration::from_secs(30), || {
        chromium.try_wait().unwrap().is_some()
    });
    if !ended {
        let _ = chromium.kill();
    }
    let _ = chromium.wait();
    let _ = std::fs::remove_dir_all(&profile);
    assert!(
        ended,
        "the page did not stop listening within 30 s of the sell-out"
    );
    let dom = dom.join().unwrap();

    let log = element(&dom, "pre", "log");
    let lines: Vec<&str> = log.lines().collect();
    let at = |line: &str| {
        lines
            .iter()
            .position(|l| *l == line)
            .unwrap_or_else(|| panic!("the page never showed {line:?}: {lines:?}"))
    };
    assert_eq!(lines.first(), Some(&"status pending"), "{lines:?}");
    assert!(at("status pending") < at("status active"), "{lines:?}");
    assert!(at("status active") < at("status sold_out"), "{lines:?}");
    assert_eq!(lines.last(), Some(&"stock 0"), "{lines:?}");
    // A stock comes again with other news (the voucher replaced, the sale begun): once each.
    let mut stock: Vec<u64> = lines
        .iter()
        .filter_map(|l| l.strip_prefix("stock ")?.parse().ok())
        .collect();
    stock.dedup();
    assert_eq!(
        stock,
        [2, 1, 0],
        "the stock as the page showed it: {lines:?}"
    );
    assert!(!lines.iter().any(|l| l.starts_with("error")), "{lines:?}");
    assert_eq!(element(&dom, "h1", "status"), "Sold out", "{dom}");
    assert_eq!(element(&dom, "b", "stock"), "0", "{dom}");
}
