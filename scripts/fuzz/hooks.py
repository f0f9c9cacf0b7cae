"""Schemathesis checks of our own: every error is problem+json with a documented `code`."""

import schemathesis

# docs/api.md "Conventions" plus the domain-specific 409 codes.
DOCUMENTED_CODES = {
    "invalid_argument", "unprocessable", "not_found", "method_not_allowed",
    "unsupported_media_type", "unauthorized", "conflict", "rate_limited",
    "payload_too_large", "backend_unavailable", "internal",
    "sold_out", "not_started", "ended", "already_ordered", "filter_full",
    "layer_full", "queue_full", "receipt_expired", "lock_held", "lock_lost", "forbidden",
}


def capped(body):
    """Long polls (queue claims, lock acquisitions) wait up to 20 s by design; a second is
    enough to exercise them without the run spending its time in waits it asked for."""
    if isinstance(body, dict) and isinstance(body.get("wait_ms"), int) and body["wait_ms"] > 1000:
        body["wait_ms"] = 1000
    return body


@schemathesis.hook
def map_body(ctx, body):
    return capped(body)


@schemathesis.hook
def before_call(ctx, case, **kwargs):
    """The coverage phase's boundary cases do not pass through `map_body`: its 10 s and 20 s
    claims were 160 of its 165 s."""
    case.body = capped(case.body)


@schemathesis.check
def problem_details(ctx, response, case):
    if response.status_code < 400:
        return None
    content_type = response.headers.get("content-type", [""])
    content_type = content_type[0] if isinstance(content_type, list) else content_type
    assert content_type.startswith("application/problem+json"), (
        f"{response.status_code} is not problem+json: {content_type!r}"
    )
    body = response.json()
    assert body.get("status") == response.status_code, f"status member mismatch: {body}"
    assert body.get("code") in DOCUMENTED_CODES, f"undocumented code: {body.get('code')!r}"
    return None
