//! Every operation of the OpenAPI document answers 2xx to the request Swagger UI's "Try it out"
//! sends by default: the examples a newcomer is handed work as they stand, on any day.
//!
//! The test reads the document as a fresh gateway serves it to Swagger UI (`/openapi.json`),
//! builds each operation's default request by Swagger UI's rules ([`Sampler::param`] for
//! parameters, [`Sampler::sample`] for bodies), sends it and wants a 2xx. It runs on the
//! embedded backend, on Redis, and on the embedded backend with its clock years ahead in a time
//! zone behind UTC, at an hour when UTC is already on the next day there: an example pinned to
//! a day, or one that leans on the date Swagger UI fills in (today in UTC), fails there.
//!
//! No operation is left out: the admin ones get the test gateway's admin token (Swagger UI's
//! "Authorize"), the dead-letter routes answer without PostgreSQL (empty; replay 0) and
//! `/v1/clients/me` answers an anonymous caller, so the default gateway takes every one.

#[path = "common/mod.rs"]
mod common;

use std::collections::HashMap;
use std::fmt;

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};

use common::{settings, Backend, Gateway, ADMIN_TOKEN};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_is_accepted_on_memory() {
    walk(&Gateway::start(Backend::Memory).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_is_accepted_on_redis() {
    walk(&Gateway::start(Backend::Redis).await).await;
}

/// Three years on, at 02:00 UTC, in Los Angeles (still the day before there).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_example_is_accepted_years_later_behind_utc() {
    let mut s = settings(Backend::Memory);
    s.tz = chrono_tz::America::Los_Angeles;
    let gw = Gateway::with_settings(s).await;
    let now = Utc::now();
    let later = (now.date_naive() + chrono::Days::new(3 * 365))
        .and_hms_opt(2, 0, 0)
        .expect("02:00 exists")
        .and_utc();
    gw.pass((later - now).to_std().expect("ahead")).await;
    walk(&gw).await;
}

/// Operations run by path; on each path writes (PUT, then POST) before reads (GET); deletes
/// last, deepest path first: so each finds what the examples before it made (a voucher before
/// its orders, a lock before its renewal). Where that order is not enough, these say "after":
const RUNS_AFTER: &[(&str, &str)] = &[
    // Claims the job of the enqueue example (`/claim` sorts before `/jobs`).
    ("queuesClaim", "queuesEnqueue"),
];

/// Values no example can know: a fencing token or a claim's receipt exists only once another
/// call answers, and a person pastes it from that answer. So does the test, into a field the
/// default request has (Swagger UI shows it, to be replaced). Each also runs after its source.
const CARRIED: &[Carried] = &[
    Carried {
        op: "locksRenew",
        into: Slot::Body("/token"),
        from: "locksAcquire",
        pointer: "/token",
    },
    Carried {
        op: "locksRelease",
        into: Slot::Query("token"),
        from: "locksAcquire",
        pointer: "/token",
    },
    Carried {
        op: "queuesAck",
        into: Slot::Body("/receipt"),
        from: "queuesClaim",
        pointer: "/jobs/0/receipt",
    },
];

/// Where Swagger UI shows a value no example can know, it says to paste it from the answer it
/// comes from: the operation's description and the field's own both say so, since the example
/// in the field only shows the form and sent as is is refused (409 `lock_lost`, 404 on an ack).
#[test]
fn carried_values_say_to_paste_them() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/openapi/openapi.json");
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let sampler = Sampler {
        doc: &doc,
        now: Utc::now(),
    };
    let ops = operations(&doc);
    let mut silent = Vec::new();
    for c in CARRIED {
        let op = ops.iter().find(|o| o.id == c.op).expect("an operation");
        let field = match c.into {
            Slot::Query(name) => op.spec["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| p["name"] == name)
                .map(|p| p["description"].clone()),
            Slot::Body(pointer) => {
                let body = &op.spec["requestBody"]["content"]["application/json"]["schema"];
                sampler.resolve(body)["properties"]
                    .get(pointer.trim_start_matches('/'))
                    .map(|f| sampler.resolve(f)["description"].clone())
            }
        };
        let says = |text: Option<&Value>| {
            text.and_then(Value::as_str)
                .is_some_and(|t| t.contains("paste"))
        };
        if !says(op.spec.get("description")) {
            silent.push(format!("{}: the operation's description", c.op));
        }
        if !says(field.as_ref()) {
            silent.push(format!("{}: {:?}'s description", c.op, c.into));
        }
    }
    assert!(
        silent.is_empty(),
        "these do not say to paste the value from the answer it comes from:\n{}",
        silent.join("\n")
    );
}

/// Operations that need another's example sent again just before them: the ack example
/// finished the enqueue example's job, which the cancel example then cancels.
const SEEDS: &[(&str, &str)] = &[("queuesCancel", "queuesEnqueue")];

#[derive(Debug)]
struct Carried {
    op: &'static str,
    into: Slot,
    from: &'static str,
    pointer: &'static str,
}

#[derive(Debug)]
enum Slot {
    Query(&'static str),
    Body(&'static str),
}

/// One operation of the document.
#[derive(Debug, Clone)]
struct Operation<'a> {
    id: String,
    method: String,
    path: String,
    spec: &'a Value,
}

/// What Swagger UI sends for an operation.
#[derive(Debug, Clone)]
struct Request {
    method: String,
    path: String,
    query: Vec<(String, String)>,
    headers: Vec<(String, String)>,
    admin: bool,
    body: Option<Value>,
}

impl fmt::Display for Request {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.method.to_uppercase(), self.path)?;
        for (i, (k, v)) in self.query.iter().enumerate() {
            write!(f, "{}{k}={v}", if i == 0 { '?' } else { '&' })?;
        }
        for (k, v) in &self.headers {
            write!(f, " -H '{k}: {v}'")?;
        }
        if self.admin {
            write!(f, " -H 'authorization: Bearer <admin token>'")?;
        }
        if let Some(body) = &self.body {
            write!(f, " -d '{body}'")?;
        }
        Ok(())
    }
}

async fn walk(gw: &Gateway) {
    let (status, doc) = gw.get("/openapi.json").await;
    assert_eq!(status, 200, "the document is served");
    let sampler = Sampler {
        doc: &doc,
        now: DateTime::from_timestamp_millis(gw.now_ms()).expect("a time"),
    };
    let ops = operations(&doc);
    let ids: Vec<&str> = ops.iter().map(|o| o.id.as_str()).collect();
    // The examples a newcomer once found refused are walked (so the walk is not vacuous), and every
    // name in the tables above is still an operation (a renamed one would skip its rule).
    let named = RUNS_AFTER
        .iter()
        .chain(SEEDS)
        .flat_map(|(a, b)| [*a, *b])
        .chain(CARRIED.iter().flat_map(|c| [c.op, c.from]))
        .chain([
            "uvRecord",
            "queuesEnqueue",
            "geoNearby",
            "seckillPutVoucher",
        ]);
    for name in named {
        assert!(
            ids.contains(&name),
            "{name} is not an operation of the document"
        );
    }
    let by_id: HashMap<&str, &Operation<'_>> = ops.iter().map(|o| (o.id.as_str(), o)).collect();

    let mut answers: HashMap<String, Value> = HashMap::new();
    let mut failures = Vec::new();
    for op in order(&ops) {
        for (_, seed) in SEEDS.iter().filter(|(o, _)| *o == op.id) {
            match sampler.request(by_id[seed]) {
                Ok(req) => {
                    if let Err(e) = send(gw, &req).await {
                        failures.push(format!("{seed} (sent again before {}): {e}", op.id));
                    }
                }
                Err(defects) => failures.push(format!("{seed}: {}", defects.join("; "))),
            }
        }
        let mut req = match sampler.request(&op) {
            Ok(req) => req,
            Err(defects) => {
                failures.push(format!("{}: {}", op.id, defects.join("; ")));
                continue;
            }
        };
        let carried: Result<Vec<()>, String> = CARRIED
            .iter()
            .filter(|c| c.op == op.id)
            .map(|c| carry(c, &answers, &mut req))
            .collect();
        if let Err(e) = carried {
            failures.push(format!("{}: {e} (request {req})", op.id));
            continue;
        }
        match send(gw, &req).await {
            Ok(answer) => {
                answers.insert(op.id.clone(), answer);
            }
            Err(e) => failures.push(format!("{}: {e}", op.id)),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} operations refused their Swagger UI default request:\n{}",
        failures.len(),
        ops.len(),
        failures.join("\n")
    );
}

/// The document's operations, with their method and path.
fn operations(doc: &Value) -> Vec<Operation<'_>> {
    let mut ops = Vec::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        for (method, spec) in item.as_object().expect("a path item") {
            if !["get", "put", "post", "delete", "patch"].contains(&method.as_str()) {
                continue;
            }
            ops.push(Operation {
                id: spec["operationId"]
                    .as_str()
                    .expect("operationId")
                    .to_owned(),
                method: method.clone(),
                path: path.clone(),
                spec,
            });
        }
    }
    ops
}

/// The order of [`RUNS_AFTER`]'s comment, then each operation that must come after another
/// moved to just after it.
fn order<'a>(ops: &[Operation<'a>]) -> Vec<Operation<'a>> {
    let rank = |m: &str| {
        ["put", "post", "patch", "get", "delete"]
            .iter()
            .position(|x| *x == m)
    };
    let mut ordered = ops.to_vec();
    ordered.sort_by(|a, b| {
        let (da, db) = (a.method == "delete", b.method == "delete");
        da.cmp(&db).then_with(|| {
            if da {
                b.path.cmp(&a.path)
            } else {
                a.path
                    .cmp(&b.path)
                    .then(rank(&a.method).cmp(&rank(&b.method)))
            }
        })
    });
    let after: Vec<(&str, &str)> = RUNS_AFTER
        .iter()
        .copied()
        .chain(CARRIED.iter().map(|c| (c.op, c.from)))
        .collect();
    for (op, first) in after {
        let at = |o: &[Operation<'_>], id: &str| o.iter().position(|x| x.id == id).unwrap();
        let (i, j) = (at(&ordered, op), at(&ordered, first));
        if i < j {
            let moved = ordered.remove(i);
            ordered.insert(j, moved);
        }
    }
    ordered
}

/// Puts a value from an earlier answer into the request, where the request already has one.
fn carry(c: &Carried, answers: &HashMap<String, Value>, req: &mut Request) -> Result<(), String> {
    let value = answers
        .get(c.from)
        .and_then(|a| a.pointer(c.pointer))
        .ok_or_else(|| format!("no {} in the answer of {}", c.pointer, c.from))?
        .clone();
    match c.into {
        Slot::Query(name) => {
            let slot = req
                .query
                .iter_mut()
                .find(|(k, _)| k == name)
                .ok_or_else(|| format!("the default request has no query parameter {name}"))?;
            slot.1 = text(&value);
        }
        Slot::Body(pointer) => {
            let slot = req
                .body
                .as_mut()
                .and_then(|b| b.pointer_mut(pointer))
                .ok_or_else(|| format!("the default body has no {pointer}"))?;
            *slot = value;
        }
    }
    Ok(())
}

/// Sends a request as Swagger UI does; the answer's JSON (null when it is not JSON) on a 2xx.
async fn send(gw: &Gateway, req: &Request) -> Result<Value, String> {
    let method = reqwest::Method::from_bytes(req.method.to_uppercase().as_bytes()).unwrap();
    let mut builder = gw
        .client
        .request(method, gw.url(&req.path))
        .query(&req.query);
    for (k, v) in &req.headers {
        builder = builder.header(k, v);
    }
    if req.admin {
        builder = builder.bearer_auth(ADMIN_TOKEN);
    }
    if let Some(body) = &req.body {
        // The body editor's text: JSON.stringify(sample, null, 2).
        builder = builder
            .header("content-type", "application/json")
            .body(serde_json::to_string_pretty(body).unwrap());
    }
    let answer = builder
        .send()
        .await
        .map_err(|e| format!("{req} did not reach the gateway: {e}"))?;
    let status = answer.status();
    let streamed = answer
        .headers()
        .get("content-type")
        .is_some_and(|t| t.as_bytes().starts_with(b"text/event-stream"));
    if status.is_success() && streamed {
        // An event stream stays open by design: its first event is the answer.
        let mut answer = answer;
        let first = answer.chunk().await.ok().flatten();
        return first
            .map(|_| Value::Null)
            .ok_or_else(|| format!("{req}\n    answered {status} and sent no event"));
    }
    let text = answer.text().await.unwrap_or_default();
    if status.is_success() {
        Ok(serde_json::from_str(&text).unwrap_or(Value::Null))
    } else {
        Err(format!("{req}\n    answered {status}: {text}"))
    }
}

/// Swagger UI 5.32 (the copy utoipa-swagger-ui serves), reduced to the keywords this document
/// uses; a request schema with any other keyword fails the test rather than being guessed at.
/// When written, Swagger UI itself ("Try it out", "Execute" on every operation, in headless
/// Chromium) sent exactly the requests this builds.
struct Sampler<'a> {
    doc: &'a Value,
    /// The browser's clock, which fills `date` and `date-time` fields: the gateway's, here.
    now: DateTime<Utc>,
}

/// The schema keywords [`Sampler::sample`] models.
const MODELLED: &[&str] = &[
    "$ref",
    "type",
    "format",
    "description",
    "title",
    "properties",
    "required",
    "additionalProperties",
    "items",
    "oneOf",
    "anyOf",
    "enum",
    "example",
    "examples",
    "default",
    "minimum",
    "maximum",
    "deprecated",
    "readOnly",
    "writeOnly",
];

impl Sampler<'_> {
    /// An operation's default request, or what keeps Swagger UI from sending one.
    fn request(&self, op: &Operation<'_>) -> Result<Request, Vec<String>> {
        let mut req = Request {
            method: op.method.clone(),
            path: op.path.clone(),
            query: Vec::new(),
            headers: Vec::new(),
            admin: false,
            body: None,
        };
        let mut defects = Vec::new();
        let params = op.spec["parameters"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for p in &params {
            let p = self.resolve(p);
            let name = p["name"].as_str().expect("a parameter name");
            let place = p["in"].as_str().expect("a parameter place");
            let Some(value) = self.param(&p) else {
                if p["required"] == true {
                    defects.push(format!(
                        "required {place} parameter {name} has no example, so Swagger UI \
                         sends nothing until one is typed"
                    ));
                }
                continue;
            };
            match place {
                "path" => req.path = req.path.replace(&format!("{{{name}}}"), &encode(&value)),
                "query" => req.query.push((name.to_owned(), value)),
                "header" => req.headers.push((name.to_owned(), value)),
                other => panic!("{}: parameters in {other} are not modelled", op.id),
            }
        }
        if let Some(body) = op.spec.get("requestBody") {
            let media = &body["content"]["application/json"];
            assert!(
                media.is_object(),
                "{}: only JSON bodies are modelled",
                op.id
            );
            // The media type's example is taken as it is; else the schema's sample.
            req.body = Some(match media.get("example") {
                Some(example) => example.clone(),
                None => self.sample(&media["schema"]),
            });
        }
        for requirement in op.spec["security"].as_array().into_iter().flatten() {
            for scheme in requirement.as_object().expect("a requirement").keys() {
                assert_eq!(
                    scheme, "admin",
                    "{}: only the admin scheme is modelled",
                    op.id
                );
                req.admin = true;
            }
        }
        if defects.is_empty() {
            Ok(req)
        } else {
            Err(defects)
        }
    }

    /// The value Swagger UI fills a parameter with (its `ParameterRow`): the first of
    /// `examples`, the parameter's `example`, its schema's `example` (the schema merged with its
    /// first `oneOf`/`anyOf` alternative), the schema's `default`, the parameter's `default`;
    /// failing those, a required parameter's first `enum` value. Else nothing, and an optional
    /// parameter is not sent.
    fn param(&self, p: &Value) -> Option<String> {
        let schema = self.resolve(&p["schema"]);
        let schema = match first_alternative(&schema) {
            Some(alt) => merge(&schema, &self.resolve(alt)),
            None => schema,
        };
        let value = p["examples"]
            .as_object()
            .and_then(|e| e.values().next())
            .map(|e| e["value"].clone())
            .or_else(|| p.get("example").cloned())
            .or_else(|| schema.get("example").cloned())
            .or_else(|| schema.get("default").cloned())
            .or_else(|| p.get("default").cloned())
            .or_else(|| {
                (p["required"] == true)
                    .then(|| schema["enum"].get(0).cloned())
                    .flatten()
            })?;
        Some(text(&value))
    }

    /// The body Swagger UI composes from a schema (its json-schema-2020-12-samples plugin,
    /// `sampleFromSchemaGeneric`):
    /// 1. `$ref` is followed (Swagger UI resolves the document before it samples).
    /// 2. An author's value for the schema as a whole wins: the first of `examples`, else
    ///    `default`, else `example`. Nothing below is looked at then: so a body whose fields
    ///    exclude one another needs such a whole example, on the schema or the media type.
    /// 3. `oneOf`/`anyOf`: the first alternative, under the schema's own keywords (an
    ///    `Option<T>` body is `oneOf [T, null]`, so T); T's own whole example is used as in 2.
    /// 4. The type: a list (`["integer", "null"]`) gives its first type other than null
    ///    (`array` or `object` when listed); no type is inferred from `properties`/`required`/
    ///    `additionalProperties` (object), `items` (array), `format` (string), `minimum`/
    ///    `maximum` (integer), else it is "string" (an untyped field is sent as `"string"`).
    /// 5. Objects: every property, required or not, but `deprecated` and `readOnly` ones, each
    ///    sampled by these rules: an optional field with an example is sent.
    /// 6. Arrays: one item, sampled from `items`.
    /// 7. Scalars: the first `enum` value; else strings `"string"`, with `format: date` today
    ///    and `date-time` now (UTC, by the browser's clock); integers 0, numbers 0 (0.1 with
    ///    `format: double`/`float`), then moved into `minimum`/`maximum` as JavaScript's
    ///    `minimum || maximum || n` does (so a `minimum` of 0 with a `maximum` yields the
    ///    maximum); booleans true.
    fn sample(&self, schema: &Value) -> Value {
        let mut schema = self.resolve(schema);
        for key in schema.as_object().expect("a schema object").keys() {
            assert!(
                MODELLED.contains(&key.as_str()),
                "Swagger UI's rule for `{key}` is not modelled by this test: {schema}"
            );
        }
        if let Some(value) = author_value(&schema) {
            return value;
        }
        if let Some(alt) = first_alternative(&schema) {
            let alt = self.resolve(alt);
            schema = merge(&schema, &alt);
            if author_value(&alt).is_some() {
                return author_value(&schema).expect("merged in");
            }
        }
        match type_of(&schema).as_str() {
            "object" => {
                let mut out = Map::new();
                for (name, prop) in schema["properties"].as_object().into_iter().flatten() {
                    let prop_schema = self.resolve(prop);
                    if prop_schema["deprecated"] == true || prop_schema["readOnly"] == true {
                        continue;
                    }
                    out.insert(name.clone(), self.sample(prop));
                }
                assert!(
                    matches!(
                        schema.get("additionalProperties"),
                        None | Some(Value::Bool(false))
                    ),
                    "additionalProperties samples are not modelled: {schema}"
                );
                Value::Object(out)
            }
            "array" => Value::Array(vec![self.sample(&schema["items"])]),
            _ if schema["enum"].is_array() => schema["enum"][0].clone(),
            "string" => match schema["format"].as_str() {
                None => "string".into(),
                Some("date") => self.now.format("%Y-%m-%d").to_string().into(),
                Some("date-time") => self.now.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string().into(),
                Some(other) => panic!("string format {other} is not modelled"),
            },
            "integer" => {
                let n = within(0.0, &schema);
                Value::from(n as i64)
            }
            "number" => {
                let start = match schema["format"].as_str() {
                    Some("double" | "float") => 0.1,
                    _ => 0.0,
                };
                Value::from(within(start, &schema))
            }
            "boolean" => Value::Bool(true),
            "null" => Value::Null,
            other => panic!("type {other} is not modelled"),
        }
    }

    /// A schema with its `$ref` followed; keywords beside the `$ref` stay over the target's.
    fn resolve(&self, schema: &Value) -> Value {
        let Some(target) = schema.get("$ref").and_then(Value::as_str) else {
            return schema.clone();
        };
        let pointer = target.strip_prefix('#').expect("a local $ref");
        let mut resolved = self
            .resolve(self.doc.pointer(pointer).expect("the $ref resolves"))
            .as_object()
            .expect("a schema object")
            .clone();
        for (k, v) in schema.as_object().unwrap() {
            if k != "$ref" {
                resolved.insert(k.clone(), v.clone());
            }
        }
        Value::Object(resolved)
    }
}

/// Swagger UI's author value: `examples[0]`, else `default`, else `example`.
fn author_value(schema: &Value) -> Option<Value> {
    schema["examples"]
        .get(0)
        .or_else(|| schema.get("default"))
        .or_else(|| schema.get("example"))
        .cloned()
}

fn first_alternative(schema: &Value) -> Option<&Value> {
    schema["oneOf"].get(0).or_else(|| schema["anyOf"].get(0))
}

/// Swagger UI's merge of an alternative into a schema: the schema's keywords win, `properties`
/// and `required` are joined.
fn merge(schema: &Value, alt: &Value) -> Value {
    let mut out = alt.as_object().cloned().unwrap_or_default();
    for (k, v) in schema.as_object().expect("a schema object") {
        match (k.as_str(), out.get_mut(k)) {
            ("properties", Some(Value::Object(mine))) => {
                for (name, prop) in v.as_object().unwrap() {
                    mine.insert(name.clone(), prop.clone());
                }
            }
            ("required", Some(Value::Array(mine))) => {
                for name in v.as_array().unwrap() {
                    if !mine.contains(name) {
                        mine.push(name.clone());
                    }
                }
            }
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    Value::Object(out)
}

/// Rule 4 of [`Sampler::sample`].
fn type_of(schema: &Value) -> String {
    match &schema["type"] {
        Value::String(t) => return t.clone(),
        Value::Array(types) => {
            let types: Vec<&str> = types.iter().filter_map(Value::as_str).collect();
            for t in ["array", "object"] {
                if types.contains(&t) {
                    return t.to_owned();
                }
            }
            if let Some(t) = types.iter().find(|t| **t != "null").or(types.first()) {
                return (*t).to_owned();
            }
        }
        _ => {}
    }
    let has = |keys: &[&str]| keys.iter().any(|k| schema.get(*k).is_some());
    if has(&["properties", "required", "additionalProperties"]) {
        "object"
    } else if has(&["items"]) {
        "array"
    } else if has(&["format"]) {
        "string"
    } else if has(&["minimum", "maximum"]) {
        "integer"
    } else {
        "string"
    }
    .to_owned()
}

/// Swagger UI's `applyNumberConstraints`: `(min > max && n) || min || max || n`, with
/// JavaScript's truthiness (0 is false) and a missing bound compared as 0.
fn within(n: f64, schema: &Value) -> f64 {
    let min = schema["minimum"].as_f64();
    let max = schema["maximum"].as_f64();
    let truthy = |x: Option<f64>| x.filter(|v| *v != 0.0 && !v.is_nan());
    if min.unwrap_or(0.0) > max.unwrap_or(0.0) && n != 0.0 {
        return n;
    }
    truthy(min).or(truthy(max)).unwrap_or(n)
}

/// A value as a parameter's text (JavaScript's `String(value)` for scalars).
fn text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `encodeURIComponent`, as Swagger UI encodes path parameters.
fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' => (b as char).to_string(),
            b'-' | b'_' | b'.' | b'!' | b'~' | b'*' | b'\'' | b'(' | b')' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}
