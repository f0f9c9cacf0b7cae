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
}
