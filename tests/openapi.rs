//! The committed OpenAPI document must be exactly what the code generates.
//! Regenerate with `cargo run -- openapi > openapi/openapi.json`.

#[test]
fn committed_document_matches_the_code() {
    let generated = redis_gateway::openapi::document_json();
    let committed =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/openapi/openapi.json"))
            .expect("openapi/openapi.json is committed");
    assert!(
        committed == generated,
        "openapi/openapi.json is stale: run `cargo run -- openapi > openapi/openapi.json`"
    );
}

#[test]
fn document_is_openapi_3_1_with_problem_errors() {
    let doc: serde_json::Value =
        serde_json::from_str(&redis_gateway::openapi::document_json()).unwrap();
    assert!(doc["openapi"].as_str().unwrap().starts_with("3.1"));
    assert!(doc["components"]["schemas"]["Problem"].is_object());
    assert!(doc["paths"]["/v1/checkins/{user_id}"]["post"].is_object());
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            let limited = &op["responses"]["429"];
            if path.starts_with("/v1/") {
                assert!(
                    limited["headers"]["Retry-After"].is_object(),
                    "{method} {path} declares the global limiter's 429"
                );
            } else {
                assert!(limited.is_null(), "{method} {path} is never limited");
            }
        }
    }
}

/// Client generators key their functions on operationIds: each must exist, be unique (OpenAPI
/// requires it; two `check`s broke generated clients) and name its domain.
#[test]
fn operation_ids_are_unique_and_descriptive() {
    let doc: serde_json::Value =
        serde_json::from_str(&redis_gateway::openapi::document_json()).unwrap();
    let mut seen = std::collections::HashMap::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            let id = op["operationId"]
                .as_str()
                .unwrap_or_else(|| panic!("{method} {path} has no operationId"));
            if let Some(other) = seen.insert(id.to_owned(), format!("{method} {path}")) {
                panic!("operationId {id} on both {other} and {method} {path}");
            }
            let tag = op["tags"][0].as_str().unwrap();
            if tag != "ops" {
                let domain = if tag == "checkins" { "check" } else { tag };
                assert!(
                    id.to_lowercase().starts_with(domain),
                    "{id} ({method} {path}) names its domain {tag}"
                );
            }
        }
    }
}

/// Every limited operation states what it costs the global limiter (docs/api.md "Global limiter").
#[test]
fn every_api_operation_declares_its_limiter_cost() {
    let doc: serde_json::Value =
        serde_json::from_str(&redis_gateway::openapi::document_json()).unwrap();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            let cost = &op["x-ratelimit-cost"];
            if path.starts_with("/v1/") {
                assert!(cost.is_string(), "{method} {path}");
            } else {
                assert!(cost.is_null(), "{method} {path} is never limited");
            }
        }
    }
    assert_eq!(
        doc["paths"]["/v1/uv"]["get"]["x-ratelimit-cost"],
        "1 + pages × days / 366"
    );
}

/// Liveness, readiness and metrics are operations of the document too (docs/operations.md).
#[test]
fn ops_routes_are_documented() {
    let doc: serde_json::Value =
        serde_json::from_str(&redis_gateway::openapi::document_json()).unwrap();
    for path in ["/healthz", "/readyz", "/metrics"] {
        let op = &doc["paths"][path]["get"];
        assert_eq!(op["tags"][0], "ops", "{path}");
    }
}

/// utoipa names components by type name alone: two domains with a `CheckReply` would silently
/// share one schema in the document. Schema types must be unique across the crate.
#[test]
fn schema_type_names_are_unique() {
    let mut seen = std::collections::HashMap::new();
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/src");
    let mut dirs = vec![std::path::PathBuf::from(src)];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let mut derives_schema = false;
            for line in text.lines() {
                let line = line.trim();
                if line.starts_with("#[derive(") {
                    derives_schema = line.contains("ToSchema");
                    continue;
                }
                if !derives_schema || line.starts_with("#[") || line.starts_with("///") {
                    continue;
                }
                let mut words = line
                    .split_whitespace()
                    .skip_while(|w| *w != "struct" && *w != "enum");
                if let (Some(_), Some(word)) = (words.next(), words.next()) {
                    let name = word
                        .split(['<', '{', '(', ';'])
                        .next()
                        .unwrap_or(word)
                        .to_owned();
                    if let Some(other) = seen.insert(name.clone(), path.display().to_string()) {
                        panic!(
                            "schema type {name} is defined in {other} and {}",
                            path.display()
                        );
                    }
                }
                derives_schema = false;
            }
        }
    }
    assert!(seen.contains_key("Problem"), "the scan finds schema types");
}

/// The `admin` security scheme is declared on exactly the admin routes of docs/api.md.
#[test]
fn security_is_declared_on_exactly_the_admin_routes() {
    let doc: serde_json::Value =
        serde_json::from_str(&redis_gateway::openapi::document_json()).unwrap();
    let mut secured = Vec::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            if op.get("security").is_some() {
                assert_eq!(
                    op["security"],
                    serde_json::json!([{"admin": []}]),
                    "{method} {path}"
                );
                secured.push(format!("{} {path}", method.to_uppercase()));
            }
        }
    }
    secured.sort();
    assert_eq!(
        secured,
        [
            "DELETE /v1/admin/policies/{policy}/overrides/{identity}",
            "GET /v1/admin/keys",
            "GET /v1/admin/keys/big",
            "GET /v1/admin/policies",
            "GET /v1/seckill/vouchers/{voucher_id}/dead-letters",
            "POST /v1/seckill/vouchers/{voucher_id}/dead-letters/replay",
            "POST /v1/seckill/vouchers/{voucher_id}/restock",
            "PUT /v1/admin/policies/{policy}/overrides/{identity}",
            "PUT /v1/dedup/{filter}",
            "PUT /v1/seckill/vouchers/{voucher_id}",
        ]
    );
    assert_eq!(
        doc["components"]["securitySchemes"]["admin"]["scheme"],
        "bearer"
    );
}

/// A user id is 0..=4294967295 everywhere it appears: `int32` (utoipa's spelling of a `u32`)
/// made a generated client in a typed language overflow above 2^31.
#[test]
fn every_user_id_is_an_int64_within_u32() {
    fn walk(v: &serde_json::Value, at: &str, found: &mut Vec<(String, serde_json::Value)>) {
        match v {
            serde_json::Value::Object(o) => {
                for (k, child) in o {
                    let here = format!("{at}/{k}");
                    if k == "user_id" && child.is_object() {
                        found.push((here.clone(), child.clone()));
                    }
                    if k == "name" && child == "user_id" {
                        found.push((at.to_owned(), o["schema"].clone()));
                    }
                    walk(child, &here, found);
                }
            }
            serde_json::Value::Array(a) => {
                for (i, child) in a.iter().enumerate() {
                    walk(child, &format!("{at}/{i}"), found);
                }
            }
            _ => {}
        }
    }
    let doc: serde_json::Value =
        serde_json::from_str(&redis_gateway::openapi::document_json()).unwrap();
    let mut found = Vec::new();
    walk(&doc, "", &mut found);
    // Four path parameters, five schema properties (docs/api.md).
    assert!(found.len() >= 9, "{found:?}");
    for (at, schema) in found {
        assert_eq!(schema["type"], "integer", "{at}");
        assert_eq!(schema["format"], "int64", "{at}");
        assert_eq!(schema["minimum"], 0, "{at}");
        assert_eq!(schema["maximum"], 4_294_967_295_u64, "{at}");
    }
}

/// Every operation that takes an `Idempotency-Key` declares the `Idempotency-Replayed` header
/// its replays carry, on each of its successes; no other operation does.
#[test]
fn keyed_operations_declare_the_replay_header() {
    let doc: serde_json::Value =
        serde_json::from_str(&redis_gateway::openapi::document_json()).unwrap();
    let mut keyed = Vec::new();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            let takes_key = op["parameters"].as_array().is_some_and(|ps| {
                ps.iter()
                    .any(|p| p["name"] == "Idempotency-Key" && p["in"] == "header")
            });
            for (status, response) in op["responses"].as_object().unwrap() {
                let declared = response["headers"]["Idempotency-Replayed"].is_object();
                assert_eq!(
                    declared,
                    takes_key && status.starts_with('2'),
                    "{method} {path} {status}"
                );
            }
            if takes_key {
                keyed.push(format!("{method} {path}"));
            }
        }
    }
    // The routes docs/api.md names as taking a key, at least.
    for route in [
        "post /v1/seckill/vouchers/{voucher_id}/orders",
        "post /v1/seckill/vouchers/{voucher_id}/restock",
        "post /v1/uv/{page}",
        "post /v1/queues/{queue}/jobs",
        "post /v1/ratelimit/check",
    ] {
        assert!(keyed.contains(&route.to_owned()), "{route}: {keyed:?}");
    }
}

/// Every instant the API answers (`*_at`, RFC 3339) is declared `format: date-time`, so
/// generated clients parse it as one.
#[test]
fn every_instant_is_a_date_time() {
    let doc: serde_json::Value =
        serde_json::from_str(&redis_gateway::openapi::document_json()).unwrap();
    let mut seen = 0;
    for (name, schema) in doc["components"]["schemas"].as_object().unwrap() {
        let Some(properties) = schema["properties"].as_object() else {
            continue;
        };
        for (field, property) in properties {
            if !field.ends_with("_at") || property["type"] == "integer" {
                continue;
            }
            seen += 1;
            assert_eq!(
                property["format"], "date-time",
                "{name}.{field}: {property}"
            );
        }
    }
    assert!(seen >= 8, "{seen} instants");
}

/// Every operation that takes a body can refuse it as too large (413) or not JSON (415)
/// (docs/api.md "Requests and replies"); the document must say so wherever a body is taken.
#[test]
fn every_body_documents_413_and_415() {
    let doc: serde_json::Value =
        serde_json::from_str(&redis_gateway::openapi::document_json()).unwrap();
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            if op.get("requestBody").is_none() {
                continue;
            }
            for status in ["400", "413", "415"] {
                assert!(
                    op["responses"][status].is_object(),
                    "{method} {path} takes a body but does not document {status}"
                );
            }
        }
    }
}

/// An optional body field may be sent as `null`, which the gateway reads as the field left out
/// (docs/api.md "Requests and replies"): the document says so of every one, as utoipa writes an
/// `Option` (`"type": [..., "null"]`, or `oneOf` with `{"type": "null"}`).
#[test]
fn every_optional_body_field_may_be_null() {
    let doc: serde_json::Value =
        serde_json::from_str(&redis_gateway::openapi::document_json()).unwrap();
    let schemas = &doc["components"]["schemas"];
    let named = |reference: &serde_json::Value| {
        let name = reference.as_str()?.strip_prefix("#/components/schemas/")?;
        Some(name.to_owned())
    };
    let mut bodies = Vec::new();
    for ops in doc["paths"].as_object().unwrap().values() {
        for op in ops.as_object().unwrap().values() {
            let schema = &op["requestBody"]["content"]["application/json"]["schema"];
            // A body that may be left out is `oneOf [null, T]`.
            let alternatives = schema["oneOf"].as_array().cloned().unwrap_or_default();
            bodies.extend(
                std::iter::once(schema)
                    .chain(&alternatives)
                    .filter_map(|s| named(&s["$ref"])),
            );
        }
    }
    bodies.sort();
    bodies.dedup();
    assert!(bodies.len() >= 15, "{bodies:?}");
    let nullable = |property: &serde_json::Value| {
        property["type"]
            .as_array()
            .is_some_and(|types| types.contains(&"null".into()))
            || property["oneOf"]
                .as_array()
                .is_some_and(|one| one.contains(&serde_json::json!({"type": "null"})))
    };
    let mut optional = 0;
    for body in &bodies {
        let schema = &schemas[body.as_str()];
        let required = schema["required"].as_array().cloned().unwrap_or_default();
        for (field, property) in schema["properties"].as_object().unwrap() {
            if required.contains(&field.as_str().into()) {
                continue;
            }
            optional += 1;
            assert!(nullable(property), "{body}.{field}: {property}");
        }
    }
    assert!(optional >= 20, "{optional} optional fields");
}

/// The headers the error responses carry are declared where they are sent: `WWW-Authenticate`
/// on every 401, `Retry-After` on every 503 and on an acquisition's `409 lock_held`.
#[test]
fn error_responses_declare_their_headers() {
    let doc: serde_json::Value =
        serde_json::from_str(&redis_gateway::openapi::document_json()).unwrap();
    let mut seen = (0, 0);
    for (path, ops) in doc["paths"].as_object().unwrap() {
        for (method, op) in ops.as_object().unwrap() {
            let responses = &op["responses"];
            if let Some(unauthorized) = responses.get("401") {
                seen.0 += 1;
                assert!(
                    unauthorized["headers"]["WWW-Authenticate"].is_object(),
                    "{method} {path} 401"
                );
            }
            if let Some(unavailable) = responses.get("503") {
                seen.1 += 1;
                assert!(
                    unavailable["headers"]["Retry-After"].is_object(),
                    "{method} {path} 503"
                );
            }
        }
    }
    assert!(seen.0 >= 40 && seen.1 >= 40, "{seen:?}");
    let held = &doc["paths"]["/v1/locks/{name}"]["post"]["responses"]["409"];
    assert_eq!(
        held["headers"]["Retry-After"]["schema"]["type"], "integer",
        "{held}"
    );
}
