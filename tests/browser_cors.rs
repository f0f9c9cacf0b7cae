//! CORS in a real browser (docs/configuration.md, `GATEWAY_CORS_ORIGINS`): headless Chromium
//! loads a page from an allowed origin that buys with an `Idempotency-Key`, repeats it and
//! reads the headers the API defines through `fetch()`; a page from another origin must not
//! read the answer. Only a browser enforces preflights and exposed headers, so no HTTP client
//! can stand in for it. Needs `chromium` on PATH (./scripts/test installs it).

mod common;

use std::process::Command;

use common::binary::Binary;
use serde_json::{json, Value};

/// The page's script: buys twice with one `Idempotency-Key` at the orders URL given as its
/// query string (the gateway starts after the page's origin is known) and writes what it could
/// read (or the error) as JSON into `#out`.
const PAGE: &str = r#"<!doctype html><html><body><pre id="out">pending</pre><script>
const url = decodeURIComponent(location.search.slice(1));
async function buy(requestId) {
  const r = await fetch(url, {
    method: "POST",
    headers: {"content-type": "application/json", "idempotency-key": "browser-1",
               "x-request-id": requestId},
    body: JSON.stringify({user_id: 7}),
  });
  const h = {};
  for (const name of ["idempotency-replayed", "ratelimit", "ratelimit-policy",
                      "ratelimit-limit", "ratelimit-remaining", "ratelimit-reset",
                      "x-request-id"]) {
    h[name] = r.headers.get(name);
  }
  return {status: r.status, headers: h, body: await r.json()};
}
(async () => {
  try {
    const first = await buy("page-first");
    const again = await buy("page-again");
    document.getElementById("out").textContent = JSON.stringify({first, again});
  } catch (e) {
    document.getElementById("out").textContent = JSON.stringify({error: String(e)});
  }
})();
</script></body></html>"#;

/// Loads `url` in headless Chromium and returns what the page wrote into `#out`.
fn browse(url: &str) -> Value {
    let profile = std::env::temp_dir().join(format!(
        "gateway-browser-{}-{}",
        std::process::id(),
        url.rsplit(':').next().unwrap()
    ));
    let out = Command::new("chromium")
        .args([
            "--headless",
            // Root in containers (the test suite's usual home) has no user namespace sandbox.
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            &format!("--user-data-dir={}", profile.display()),
            // Virtual time runs the page's fetches to their end before the DOM is dumped, and
            // stands still while a request is on the wire, so a slow machine does not cut it.
            "--virtual-time-budget=30000",
            "--dump-dom",
            url,
        ])
        .output()
        .expect("chromium is needed for this test (./scripts/test installs it)");
    let _ = std::fs::remove_dir_all(&profile);
    let dom = String::from_utf8_lossy(&out.stdout);
    let text = dom
        .split_once(r#"<pre id="out">"#)
        .and_then(|(_, rest)| rest.split_once("</pre>"))
        .map(|(text, _)| text)
        .unwrap_or_else(|| panic!("no #out in the page: {dom}"));
    let text = text
        .replace("&quot;", "\"")
        .replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&amp;", "&");
    serde_json::from_str(&text).unwrap_or_else(|_| panic!("page wrote {text:?}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_on_an_allowed_origin_buys_once_and_reads_every_header() {
    // The pages first: the allowed origin goes into the gateway's configuration.
    let allowed = common::pages::serve(PAGE.to_owned());
    let other = common::pages::serve(PAGE.to_owned());
    let gateway = Binary::start(&[("GATEWAY_CORS_ORIGINS", &allowed)]);
    gateway.wait_ready().await;
    let voucher = "browser";
    let client = reqwest::Client::new();
    let defined = client
        .put(gateway.url(&format!("/v1/seckill/vouchers/{voucher}")))
        .bearer_auth(common::ADMIN_TOKEN)
        .json(&json!({"stock": 5, "begin": "2020-01-01T00:00:00Z", "end": "2099-01-01T00:00:00Z"}))
        .send()
        .await
        .unwrap();
    assert!(defined.status().is_success(), "{}", defined.status());

    let orders = gateway.url(&format!("/v1/seckill/vouchers/{voucher}/orders"));
    let seen = browse(&format!("{allowed}/?{orders}"));
    let (first, again) = (&seen["first"], &seen["again"]);
    assert!(
        first["status"]
            .as_u64()
            .is_some_and(|s| (200..300).contains(&s)),
        "{seen}"
    );
    assert_eq!(again["status"], first["status"], "{seen}");
    assert_eq!(
        again["body"], first["body"],
        "the repeat is the first reply: {seen}"
    );
    assert_eq!(
        first["headers"]["idempotency-replayed"],
        Value::Null,
        "{seen}"
    );
    assert_eq!(again["headers"]["idempotency-replayed"], "true", "{seen}");
    for reply in [first, again] {
        for name in [
            "ratelimit",
            "ratelimit-policy",
            "ratelimit-limit",
            "ratelimit-remaining",
            "ratelimit-reset",
        ] {
            assert!(
                reply["headers"][name].is_string(),
                "{name} unreadable: {seen}"
            );
        }
    }
    assert_eq!(first["headers"]["x-request-id"], "page-first", "{seen}");
    assert_eq!(again["headers"]["x-request-id"], "page-again", "{seen}");

    // Another origin's page gets no answer it may read (the preflight is refused).
    let refused = browse(&format!("{other}/?{orders}"));
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|e| e.contains("TypeError")),
        "{refused}"
    );

    // One order: the repeat bought nothing more.
    let read = gateway
        .get_json(&format!("/v1/seckill/vouchers/{voucher}"))
        .await;
    assert_eq!(read["stock"], 4, "{read}");
}
