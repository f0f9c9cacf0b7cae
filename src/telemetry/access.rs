//! The access line, one per request, written straight into the log buffer.
//!
//! Formatted here rather than as a `tracing` event: through `tracing_subscriber::fmt` the line
//! went field by field through `Debug` visitors, styled writers and a fresh timestamp
//! formatter, which made it 27% of the instructions a `GET /healthz` costs (callgrind, issue
//! 19). The line reads exactly as the `fmt` layer would print it (text or flattened JSON), and
//! it obeys `RUST_LOG` as that event would (target `access`, level INFO). A terminal keeps the
//! coloured `fmt` line: colours are for people, and a person reads a terminal slowly.

use std::cell::RefCell;
use std::fmt::Write as _;
use std::io::Write as _;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::batched::Batched;

/// The fields of an access line.
#[derive(Debug)]
pub struct Line<'a> {
    pub method: &'a str,
    pub route: &'a str,
    pub status: u16,
    pub latency: Duration,
    pub request_id: &'a str,
    pub client: &'a str,
    pub limiter: &'a str,
    pub trace_id: &'a str,
}

#[derive(Debug)]
struct Writer {
    out: Batched,
    json: bool,
    /// Whether `RUST_LOG` lets `access` INFO lines through (read once: the filter is fixed).
    enabled: bool,
}

static WRITER: OnceLock<Writer> = OnceLock::new();

/// Sends access lines to `out` from now on.
pub(super) fn install(out: Batched, json: bool, enabled: bool) {
    let _ = WRITER.set(Writer { out, json, enabled });
}

/// Writes `line`; false when no writer is installed (a coloured terminal, or an embedding that
/// set up its own subscriber), where the caller logs the line as a `tracing` event instead.
pub fn write(line: &Line<'_>) -> bool {
    let Some(writer) = WRITER.get() else {
        return false;
    };
    if !writer.enabled {
        return true;
    }
    thread_local! {
        static BUF: RefCell<Vec<u8>> = const { RefCell::new(Vec::new()) };
    }
    BUF.with_borrow_mut(|buf| {
        buf.clear();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        if writer.json {
            json(buf, now, line);
        } else {
            text(buf, now, line);
        }
        writer.out.append(buf);
    });
    true
}

/// A field's value, as the `tracing` event recorded it.
enum Value<'a> {
    /// A `&str` field: quoted (`Debug`) in text.
    Str(&'a str),
    /// A `%` field: bare (`Display`) in text, a JSON string.
    Shown(&'a str),
    Int(u16),
    Millis(Duration),
}

fn fields<'a>(l: &Line<'a>) -> [(&'static str, Value<'a>); 8] {
    [
        ("method", Value::Str(l.method)),
        ("route", Value::Shown(l.route)),
        ("status", Value::Int(l.status)),
        ("latency_ms", Value::Millis(l.latency)),
        ("request_id", Value::Shown(l.request_id)),
        ("client", Value::Str(l.client)),
        ("limiter", Value::Str(l.limiter)),
        ("trace_id", Value::Str(l.trace_id)),
    ]
}

fn number(buf: &mut Vec<u8>, value: &Value<'_>) {
    match value {
        Value::Int(n) => buf.extend_from_slice(itoa::Buffer::new().format(*n).as_bytes()),
        Value::Millis(d) => millis(buf, *d),
        Value::Str(_) | Value::Shown(_) => {}
    }
}

/// `2026-11-24T02:38:23.954050Z  INFO request method="GET" route=/healthz status=200 …`, as
/// `fmt`'s default format prints the event.
fn text(buf: &mut Vec<u8>, now: Duration, l: &Line<'_>) {
    timestamp(buf, now);
    buf.extend_from_slice(b"  INFO request");
    for (name, value) in fields(l) {
        buf.push(b' ');
        buf.extend_from_slice(name.as_bytes());
        buf.push(b'=');
        match value {
            // Plain printable ASCII quotes as is; anything else as `Debug` escapes it.
            Value::Str(s)
                if s.bytes()
                    .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'\\') =>
            {
                buf.push(b'"');
                buf.extend_from_slice(s.as_bytes());
                buf.push(b'"');
            }
            Value::Str(s) => {
                let _ = write!(buf, "{s:?}");
            }
            Value::Shown(s) => buf.extend_from_slice(s.as_bytes()),
            _ => number(buf, &value),
        }
    }
    buf.push(b'\n');
}

/// `{"timestamp":"…","level":"INFO","message":"request","method":"GET",…,"target":"access"}`,
/// as `fmt`'s JSON format with flattened fields prints the event.
fn json(buf: &mut Vec<u8>, now: Duration, l: &Line<'_>) {
    buf.extend_from_slice(b"{\"timestamp\":\"");
    timestamp(buf, now);
    buf.extend_from_slice(b"\",\"level\":\"INFO\",\"message\":\"request\"");
    for (name, value) in fields(l) {
        buf.extend_from_slice(b",\"");
        buf.extend_from_slice(name.as_bytes());
        buf.extend_from_slice(b"\":");
        match value {
            Value::Str(s) | Value::Shown(s) => {
                let _ = serde_json::to_writer(&mut *buf, s);
            }
            _ => number(buf, &value),
        }
    }
    buf.extend_from_slice(b",\"target\":\"access\"}\n");
}

/// RFC 3339 in UTC with microseconds, as `fmt`'s default timer writes it. The date and time
/// of day are formatted once per second per thread.
fn timestamp(buf: &mut Vec<u8>, now: Duration) {
    thread_local! {
        static SECOND: RefCell<(u64, String)> = const { RefCell::new((u64::MAX, String::new())) };
    }
    let secs = now.as_secs();
    SECOND.with_borrow_mut(|(cached, text)| {
        if *cached != secs {
            text.clear();
            let at = chrono::DateTime::from_timestamp(i64::try_from(secs).unwrap_or(0), 0)
                .unwrap_or_default();
            let _ = write!(text, "{}", at.format("%Y-%m-%dT%H:%M:%S"));
            *cached = secs;
        }
        buf.extend_from_slice(text.as_bytes());
    });
    let micros = now.subsec_micros();
    buf.push(b'.');
    pad(buf, micros, 6);
    buf.push(b'Z');
}

/// Milliseconds with microsecond precision (`0.412`).
fn millis(buf: &mut Vec<u8>, d: Duration) {
    let micros = d.as_micros();
    buf.extend_from_slice(itoa::Buffer::new().format(micros / 1000).as_bytes());
    buf.push(b'.');
    pad(buf, u32::try_from(micros % 1000).unwrap_or(0), 3);
}

fn pad(buf: &mut Vec<u8>, n: u32, width: usize) {
    let mut digits = itoa::Buffer::new();
    let digits = digits.format(n);
    buf.extend(std::iter::repeat_n(
        b'0',
        width.saturating_sub(digits.len()),
    ));
    buf.extend_from_slice(digits.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line() -> Line<'static> {
        Line {
            method: "POST",
            route: "/v1/checkins/{user_id}",
            status: 200,
            latency: Duration::from_micros(412),
            request_id: "req-abc",
            client: "ip:127.0.0.1",
            limiter: "allowed",
            trace_id: "-",
        }
    }

    // 2026-11-24T02:38:23.000050Z
    const AT: Duration = Duration::from_micros(1_795_487_903_000_050);

    #[test]
    fn text_lines_read_as_fmt_prints_them() {
        let mut buf = Vec::new();
        text(&mut buf, AT, &line());
        assert_eq!(
            String::from_utf8(buf).unwrap(),
            "2026-11-24T02:38:23.000050Z  INFO request method=\"POST\" \
             route=/v1/checkins/{user_id} status=200 latency_ms=0.412 request_id=req-abc \
             client=\"ip:127.0.0.1\" limiter=\"allowed\" trace_id=\"-\"\n"
        );
    }

    #[test]
    fn text_quotes_escape_what_debug_escapes() {
        let mut buf = Vec::new();
        let mut l = line();
        l.client = "web \"beta\" \\ é";
        text(&mut buf, AT, &l);
        let text = String::from_utf8(buf).unwrap();
        assert!(text.contains(r#" client="web \"beta\" \\ é" "#), "{text}");
    }

    #[test]
    fn json_lines_are_one_object_with_the_fields_on_top() {
        let mut buf = Vec::new();
        let mut l = line();
        l.client = "web \"beta\"";
        l.latency = Duration::from_micros(12_345_678);
        json(&mut buf, AT, &l);
        let text = String::from_utf8(buf).unwrap();
        assert!(text.ends_with("}\n"));
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["timestamp"], "2026-11-24T02:38:23.000050Z");
        assert_eq!(v["level"], "INFO");
        assert_eq!(v["message"], "request");
        assert_eq!(v["target"], "access");
        assert_eq!(v["route"], "/v1/checkins/{user_id}");
        assert_eq!(v["status"], 200);
        assert_eq!(v["latency_ms"], 12_345.678);
        assert_eq!(v["client"], "web \"beta\"");
    }
}
