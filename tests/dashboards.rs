//! The Grafana dashboard (deploy/grafana/dashboards/gateway.json) and the Prometheus alert rules
//! (deploy/prometheus/alerts.yml) query only metrics a running gateway exposes, and the rules
//! pass promtool. Its own test binary, since the metrics recorder is process-wide.
//! docs/operations.md "Dashboard and alerts".

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use chrono::{SecondsFormat, Utc};
use common::poll::eventually;
use common::postgres::Postgres;
use common::{settings, Backend, Gateway};
use serde_json::{json, Value};

const DASHBOARD: &str = "deploy/grafana/dashboards/gateway.json";
const ALERTS: &str = "deploy/prometheus/alerts.yml";
const ALERTS_TEST: &str = "deploy/prometheus/alerts_test.yml";

/// Metrics that only appear after an event the test does not stage (a dead letter, a shadow-mode
/// refusal, a failed store call). For these, the test settles for the gateway's source registering the exact name.
const ONLY_AFTER_EVENTS: &[&str] = &[
    "gateway_ledger_dead_lettered_total",
    "gateway_limiter_shadow_refusals_total",
    "gateway_store_errors_total",
    "gateway_replica_waits_total",
];

/// PromQL words that look like identifiers but name no metric: aggregations, set operators,
/// modifiers (and [`GROUPING`]). Functions need no list: they are always followed by `(`.
const KEYWORDS: &[&str] = &[
    "sum",
    "min",
    "max",
    "avg",
    "count",
    "group",
    "stddev",
    "stdvar",
    "topk",
    "bottomk",
    "quantile",
    "count_values",
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "inf",
    "nan",
];

/// Modifiers followed by a list of label names, none of them a metric.
const GROUPING: &[&str] = &[
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
];

/// The metric names a PromQL expression refers to. Hand-rolled rather than a PromQL parser
/// (no maintained Rust one): the expressions are ours, and a name this misses can only make
/// the check weaker, which the unit tests below guard against for the shapes we use.
fn metric_names(expr: &str) -> BTreeSet<String> {
    // Drop what can hold identifiers that are not metrics: string literals (label values,
    // Grafana variables), label matchers `{...}`, range and subquery durations `[...]`.
    let mut bare = String::new();
    let mut close = None;
    for c in expr.chars() {
        match close {
            Some(end) if c == end => {
                close = None;
                if end != '"' {
                    bare.push(end);
                }
            }
            Some(_) => {}
            None => match c {
                '"' => close = Some('"'),
                '{' => {
                    bare.push('{');
                    close = Some('}');
                }
                '[' => {
                    bare.push('[');
                    close = Some(']');
                }
                _ => bare.push(c),
            },
        }
    }
    let chars: Vec<char> = bare.chars().collect();
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut names = BTreeSet::new();
    let mut grouping = false; // inside the label list of `by (...)`, `on (...)`, ...
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == ')' {
            grouping = false;
        }
        if !ident(c) {
            i += 1;
            continue;
        }
        // A number (0.99, 1e3) or a `$variable` is skipped whole so its tail is not read as a
        // name.
        if c.is_ascii_digit() || (i > 0 && (chars[i - 1] == '.' || chars[i - 1] == '$')) {
            while i < chars.len() && (ident(chars[i]) || chars[i] == '.') {
                i += 1;
            }
            continue;
        }
        let start = i;
        while i < chars.len() && ident(chars[i]) {
            i += 1;
        }
        let word: String = chars[start..i].iter().collect();
        let next = chars[i..].iter().find(|c| !c.is_whitespace());
        if GROUPING.contains(&word.as_str()) {
            grouping = next == Some(&'(');
            // Step past the `(` so the `)` that ends the list is the next one.
            continue;
        }
        let is_call = next == Some(&'(');
        if !grouping && !is_call && !KEYWORDS.contains(&word.as_str()) {
            names.insert(word);
        }
    }
    names
}

/// Every `expr` of the dashboard's panels, found wherever panels nest (rows).
fn dashboard_exprs(dashboard: &Value) -> Vec<String> {
    match dashboard {
        Value::Object(map) => map
            .iter()
            .flat_map(|(k, v)| match (k.as_str(), v) {
                ("expr", Value::String(e)) => vec![e.clone()],
                _ => dashboard_exprs(v),
            })
            .collect(),
        Value::Array(items) => items.iter().flat_map(dashboard_exprs).collect(),
        _ => Vec::new(),
    }
}

/// Every `expr:` of a rules file: a one-line value, or a `|` block (the lines indented deeper
/// than the key). Hand-rolled to spare a YAML crate for one file whose shape we write;
/// `promtool check rules` below is the real parse, and a missed expression fails
/// `every_rule_has_an_expression`.
fn rule_exprs(yaml: &str) -> Vec<String> {
    let lines: Vec<&str> = yaml.lines().collect();
    let mut exprs = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        i += 1;
        let Some(value) = line.trim_start().strip_prefix("expr:") else {
            continue;
        };
        let value = value.trim();
        if value != "|" && value != ">" && value != "|-" && value != ">-" {
            exprs.push(value.to_owned());
            continue;
        }
        let indent = line.len() - line.trim_start().len();
        let mut block = String::new();
        while i < lines.len()
            && (lines[i].trim().is_empty() || lines[i].len() - lines[i].trim_start().len() > indent)
        {
            block.push_str(lines[i].trim());
            block.push('\n');
            i += 1;
        }
        exprs.push(block);
    }
    exprs
}

/// The names of the series in a Prometheus text exposition (histograms as their `_bucket`,
/// `_sum` and `_count`, as PromQL sees them).
fn exposed(text: &str) -> BTreeSet<String> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(|l| l.split(['{', ' ']).next().unwrap_or_default().to_owned())
        .collect()
}

/// The names `exprs` refer to that are not in `known`.
fn missing(exprs: &[String], known: &BTreeSet<String>) -> BTreeSet<String> {
    exprs
        .iter()
        .flat_map(|e| metric_names(e))
        .filter(|n| !known.contains(n))
        .collect()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Every `.rs` file under src/ as one text, to find where a metric name is registered.
fn source() -> String {
    fn walk(dir: &Path, out: &mut String) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push_str(&std::fs::read_to_string(&path).unwrap());
            }
        }
    }
    let mut out = String::new();
    walk(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut out);
    out
}

#[test]
fn extractor_finds_metric_names_and_only_those() {
    let names = |e: &str| metric_names(e).into_iter().collect::<Vec<_>>();
    assert_eq!(
        names(
            r#"histogram_quantile(0.99, sum by (route, le) (rate(gateway_http_request_duration_seconds_bucket{instance=~"$instance"}[$__rate_interval]))) > 0.005
               and sum by (route) (rate(gateway_http_request_duration_seconds_count[5m])) > 1"#
        ),
        [
            "gateway_http_request_duration_seconds_bucket",
            "gateway_http_request_duration_seconds_count"
        ]
    );
    assert_eq!(
        names(
            r#"increase(gateway_ledger_dead_lettered_total[15m]) > 0 or gateway_ledger_dead_letters > 0"#
        ),
        [
            "gateway_ledger_dead_lettered_total",
            "gateway_ledger_dead_letters"
        ]
    );
    assert_eq!(names("gateway_store_up == 0"), ["gateway_store_up"]);
    assert_eq!(
        names(
            r#"sum(rate(a_total{outcome="fail_open", client=~"x|y"}[5m] offset 1h)) / ignoring(outcome) group_left b"#
        ),
        ["a_total", "b"]
    );
}

#[test]
fn a_misspelt_metric_name_is_reported() {
    let known: BTreeSet<String> = exposed(
        "# TYPE gateway_http_requests_total counter\n\
         gateway_http_requests_total{route=\"/v1/uv/{page}\",method=\"POST\",status=\"200\"} 3\n\
         gateway_store_up 1\n",
    );
    let exprs = [
        r#"sum by (route) (rate(gateway_http_requests_totl{status=~"5.."}[5m]))"#.to_owned(),
        "gateway_store_up == 0".to_owned(),
    ];
    assert_eq!(
        missing(&exprs, &known).into_iter().collect::<Vec<_>>(),
        ["gateway_http_requests_totl"]
    );
}

#[test]
fn every_rule_has_an_expression() {
    let yaml = read(ALERTS);
    let exprs = rule_exprs(&yaml);
    let alerts = yaml.matches("- alert:").count();
    assert!(alerts >= 6, "{ALERTS}: {alerts} alerts");
    assert_eq!(exprs.len(), alerts, "{exprs:#?}");
    assert!(
        exprs.iter().all(|e| !metric_names(e).is_empty()),
        "an alert expression names no metric: {exprs:#?}"
    );
    // A multi-line expression is read whole.
    assert!(exprs
        .iter()
        .any(|e| e.contains("histogram_quantile") && e.contains("_count")));
}

fn promtool(args: &[&str]) {
    let out = Command::new("promtool")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "promtool not found ({e}): install Debian's `prometheus` package \
                 (./scripts/test installs it)"
            )
        });
    assert!(
        out.status.success(),
        "promtool {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn rules_pass_promtool() {
    promtool(&["check", "rules", ALERTS]);
    promtool(&["test", "rules", ALERTS_TEST]);
}

/// A gateway on Redis Cluster (for `gateway_redis_node_up`) with the ledger on PostgreSQL and
/// the global limiter on, after a sale, exposes every metric the dashboard and the rules query.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_queried_metric_is_exposed() {
    let pg = Postgres::start();
    let mut s = settings(Backend::Cluster);
    s.ledger.database_url = Some(pg.url("postgres"));
    s.store_timeout = Duration::from_secs(10);
    s.global.enabled = true;
    s.global.max_burst = 10_000;
    // Installed before the state is built, as the binary does (src/workers.rs `serve_all`), so
    // the Cluster's node gauges, set while it connects, are recorded.
    redis_gateway::telemetry::metrics();
    let gw = Gateway::with_settings(s).await;

    let at = |m: i64| {
        (Utc::now() + chrono::Duration::minutes(m)).to_rfc3339_opts(SecondsFormat::Millis, true)
    };
    let (status, body) = gw
        .admin_put(
            "/v1/seckill/vouchers/dash",
            json!({"stock": 5, "begin": at(-1), "end": at(60)}),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = gw
        .post("/v1/seckill/vouchers/dash/orders", json!({"user_id": 1}))
        .await;
    assert_eq!(status, 201, "{body}");
    gw.get("/nope").await;

    // The ledger's counters and gauges appear once it has written the order.
    let wrote = "the ledger writes the order";
    eventually(Duration::from_secs(90), wrote, || async {
        let (_, ready) = gw.get("/readyz").await;
        (ready["ledger"]["ingested"] == 1).then_some(())
    })
    .await;
    // The ledger's gauges are measured every second: wait for them rather than a fixed sleep.
    let text = eventually(Duration::from_secs(30), "the ledger's gauges", || async {
        let text = gw.text("/metrics").await;
        text.contains("gateway_ledger_lag").then_some(text)
    })
    .await;

    let mut known = exposed(&text);
    let src = source();
    for name in ONLY_AFTER_EVENTS {
        assert!(
            src.contains(&format!("\"{name}\"")),
            "{name} is not registered anywhere in src/"
        );
        known.insert((*name).to_owned());
    }

    let dashboard: Value = serde_json::from_str(&read(DASHBOARD)).expect("dashboard JSON");
    let panel_exprs = dashboard_exprs(&dashboard["panels"]);
    assert!(
        panel_exprs.len() >= 20,
        "{DASHBOARD}: {} queries",
        panel_exprs.len()
    );
    let rules = rule_exprs(&read(ALERTS));
    for (file, exprs) in [(DASHBOARD, &panel_exprs), (ALERTS, &rules)] {
        let absent = missing(exprs, &known);
        assert!(
            absent.is_empty(),
            "{file} queries metrics /metrics does not have: {absent:?}\n/metrics:\n{text}"
        );
    }
    // The dashboard's instance variable lists instances by gateway_info.
    assert!(known.contains("gateway_info"));
    // What Prometheus scrapes is well formed: every metric has its help text, counters are
    // typed counter (CPU seconds too), names keep Prometheus's conventions.
    check_metrics(&text);
}

/// `promtool check metrics` on a scrape: any finding (a lint, not only a parse error) fails.
fn check_metrics(text: &str) {
    use std::io::Write;
    let mut child = Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("promtool runs (./scripts/test installs it)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim().is_empty(),
        "promtool check metrics:\n{said}\n/metrics:\n{text}"
    );
}

/// The binary on a healthy Redis Cluster exposes `gateway_redis_node_up` for each master, which
/// GatewayRedisNodeDown and the dashboard need: the gauges are set while the Cluster connects,
/// so the binary must install its metrics recorder before building the state (nothing sets
/// them again until a topology refresh).
#[tokio::test]
async fn node_gauges_survive_start_up() {
    let url = common::shared_cluster().url();
    let gw = common::binary::Binary::start(&[("REDIS_URL", url.as_str())]);
    gw.wait_ready().await;
    let text = reqwest::get(gw.url("/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let up = text
        .lines()
        .filter(|l| l.starts_with("gateway_redis_node_up{") && l.ends_with(" 1"))
        .count();
    assert_eq!(up, 3, "one serving gauge per master:\n{text}");
}
