//! The examples in README.md and docs/*.md are tests (docs/design.md "Examples are tests"):
//! every fenced `sh` block that runs `curl` is run, in document order, in one bash process per
//! document, against a fresh release-shaped gateway (the real binary) on the embedded backend
//! and on a private `redis-server`; each command's output is compared with the `# {...}` lines
//! the text shows under it. A new example is therefore tested without anyone writing a test.
//!
//! Conventions (stated for authors in docs/design.md):
//! - a command's shown output is the run of comment lines right under it that start with
//!   `# {`, `# [` or a status (`# 201 {...}`, `# 204`), continued by `#   ` lines; text in
//!   parentheses after a value is commentary. A status is shown where it is not 200, so an
//!   output shown alone must come from a 200. A command with no shown output must answer
//!   below 400 on every `curl` it runs;
//! - `...` in an output stands for anything: a string `"..."`, an array element (any run of
//!   elements), a value, or an object's further members (`,...}`); the members in [`MASKED`]
//!   vary from run to run and match any value;
//! - `<!-- examples recorded on YYYY-MM-DD -->` declares the day the outputs were recorded:
//!   each date (and month) in an output is moved by the days (months) from that day to today;
//! - `<!-- example: env NAME=value -->` starts that document's gateway with the setting
//!   (paths under `docs/` are the repository's); `<!-- example: skip — why -->` right above a
//!   block keeps it from running, and is counted and reported;
//! - a page's outputs read as one run on its recorded day, and a `curl` whose output a pipe or
//!   `$(…)` takes passes `-s` ([`disagreements`]: checked on the text, skipped blocks too).

mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;

use chrono::{Datelike, Months, NaiveDate};
use common::binary::Binary;
use serde_json::Value;

/// Members whose values differ from run to run, whatever the example: generated ids and the
/// instants and durations that follow the clock (a lock's fencing token is the store's clock
/// in µs; a claim's receipt is a sequence shared by the queue's history).
const MASKED: [&str; 9] = [
    "order_id",
    "created_at",
    "run_at",
    "expires_at",
    "dead_lettered_at",
    "receipt",
    "token",
    "retry_after_ms",
    "reset_after_ms",
];

/// The admin token of the gateways started here, given to the examples as
/// `$GATEWAY_ADMIN_TOKEN`.
const ADMIN_TOKEN: &str = common::ADMIN_TOKEN;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// README.md, then docs/*.md in name order.
fn documents() -> Vec<PathBuf> {
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    docs.sort();
    docs.insert(0, root().join("README.md"));
    docs
}

// ----- reading a document --------------------------------------------------------------------

/// One command of an example: where it starts, its text, and the output shown under it.
#[derive(Debug, Clone)]
struct Example {
    line: usize,
    command: String,
    shown: Option<Shown>,
}

#[derive(Debug, Clone)]
struct Shown {
    line: usize,
    text: String,
}

#[derive(Debug, Default)]
struct Doc {
    name: String,
    recorded: Option<NaiveDate>,
    env: Vec<(String, String)>,
    examples: Vec<Example>,
    /// (line, reason) of each block marked not to run.
    skipped: Vec<(usize, String)>,
    /// The commands of those blocks: not run, but their outputs must still agree with the
    /// page's ([`disagreements`]).
    unrun: Vec<Example>,
    /// Problems with the text itself (output under no command, a marker that does not parse).
    errors: Vec<String>,
}

fn marker<'a>(line: &'a str, what: &str) -> Option<&'a str> {
    let inner = line
        .trim()
        .strip_prefix("<!--")?
        .strip_suffix("-->")?
        .trim();
    inner.strip_prefix(what).map(str::trim)
}

/// An output line: `# {`, `# [`, or `# NNN` (a status, alone or before a value).
fn output_start(line: &str) -> Option<&str> {
    let rest = line.strip_prefix("# ")?;
    let status = rest.len() >= 3
        && rest.as_bytes()[..3].iter().all(u8::is_ascii_digit)
        && rest[3..].chars().next().is_none_or(|c| c == ' ');
    (rest.starts_with('{') || rest.starts_with('[') || status).then_some(rest)
}

fn parse_doc(name: &str, text: &str) -> Doc {
    let mut doc = Doc {
        name: name.to_owned(),
        ..Doc::default()
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut skip_next: Option<(usize, String)> = None;
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(day) = marker(line, "examples recorded on") {
            match NaiveDate::parse_from_str(day, "%Y-%m-%d") {
                Ok(d) => doc.recorded = Some(d),
                Err(_) => doc
                    .errors
                    .push(format!("{name}:{}: bad date {day:?}", i + 1)),
            }
        } else if let Some(rest) = marker(line, "example: env") {
            match rest.split_once('=') {
                Some((k, v)) => doc.env.push((k.trim().to_owned(), v.trim().to_owned())),
                None => doc.errors.push(format!("{name}:{}: env NAME=value", i + 1)),
            }
        } else if let Some(rest) = marker(line, "example: skip") {
            let reason = rest.trim_start_matches(['—', '-', ':', ' ']).to_owned();
            if reason.is_empty() {
                doc.errors
                    .push(format!("{name}:{}: a skip must say why", i + 1));
            }
            skip_next = Some((i + 1, reason));
        } else if line.trim_start().starts_with("```") {
            let info = line.trim_start().trim_start_matches('`').trim();
            let indent = line.len() - line.trim_start().len();
            let start = i + 1;
            let mut end = start;
            while end < lines.len() && !lines[end].trim_start().starts_with("```") {
                end += 1;
            }
            let body: Vec<&str> = lines[start..end]
                .iter()
                .map(|l| l.get(indent..).unwrap_or(l.trim_start()))
                .collect();
            let runs = info == "sh" && body.iter().any(|l| calls_curl(l));
            if runs {
                let examples = read_block(name, &mut doc.errors, start + 1, &body);
                if let Some((at, reason)) = skip_next.take() {
                    doc.skipped.push((at, reason));
                    doc.unrun.extend(examples);
                } else {
                    doc.examples.extend(examples);
                }
            }
            skip_next = None;
            i = end + 1;
            continue;
        } else if !line.trim().is_empty() {
            skip_next = None;
        }
        i += 1;
    }
    doc
}

/// Whether a line of a block runs `curl` (not merely names it in a comment).
fn calls_curl(line: &str) -> bool {
    let code = line.split(" #").next().unwrap_or_default();
    !code.trim_start().starts_with('#')
        && code
            .split(|c: char| c.is_whitespace() || matches!(c, '(' | ';' | '|' | '&'))
            .any(|w| w == "curl")
}

/// The commands of one block (`first` is the line number of its first line).
fn read_block(name: &str, errors: &mut Vec<String>, first: usize, body: &[&str]) -> Vec<Example> {
    let mut examples = Vec::new();
    let mut i = 0;
    while i < body.len() {
        let line = body[i];
        if line.trim().is_empty() || line.starts_with('#') {
            if output_start(line).is_some() {
                errors.push(format!("{name}:{}: an output under no command", first + i));
            }
            i += 1;
            continue;
        }
        let at = first + i;
        let mut command = String::new();
        loop {
            command.push_str(body[i]);
            command.push('\n');
            i += 1;
            if !body[i - 1].trim_end().ends_with('\\') || i >= body.len() {
                break;
            }
        }
        let mut shown: Option<Shown> = None;
        while i < body.len() {
            let l = body[i];
            let cont = shown.is_some() && l.starts_with("#   ");
            match output_start(l) {
                Some(rest) if !cont => {
                    let s = shown.get_or_insert(Shown {
                        line: first + i,
                        text: String::new(),
                    });
                    s.text.push_str(rest);
                    s.text.push('\n');
                }
                _ if cont => {
                    let s = shown.as_mut().unwrap();
                    s.text.push_str(l[1..].trim());
                    s.text.push('\n');
                }
                _ => break,
            }
            i += 1;
        }
        examples.push(Example {
            line: at,
            command,
            shown,
        });
    }
    examples
}

// ----- outputs as patterns -------------------------------------------------------------------

/// A shown value: JSON where `...` stands for anything.
#[derive(Debug, Clone, PartialEq)]
enum Pat {
    /// A bare `...`: any value; in an array, any run of elements.
    Etc,
    /// The string `"..."`: any value.
    AnyString,
    Json(Value),
    Array(Vec<Pat>),
    /// Members, and whether others may follow (`,...}`).
    Object(Vec<(String, Pat)>, bool),
}

/// What a command's shown output expects: the statuses of its last calls, and its values.
#[derive(Debug, Default, PartialEq)]
struct Expected {
    statuses: Vec<u16>,
    values: Vec<Pat>,
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.at < self.s.len() && self.s[self.at].is_ascii_whitespace() {
            self.at += 1;
        }
    }
    fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.at).copied()
    }
    fn eat(&mut self, b: u8) -> Result<(), String> {
        if self.peek() == Some(b) {
            self.at += 1;
            Ok(())
        } else {
            Err(format!("expected {:?} at {:?}", b as char, self.rest()))
        }
    }
    fn rest(&self) -> String {
        String::from_utf8_lossy(&self.s[self.at..self.s.len().min(self.at + 30)]).into_owned()
    }
    fn etc(&mut self) -> bool {
        self.ws();
        if self.s[self.at..].starts_with(b"...") {
            self.at += 3;
            true
        } else {
            false
        }
    }
    fn value(&mut self) -> Result<Pat, String> {
        if self.etc() {
            return Ok(Pat::Etc);
        }
        match self.peek() {
            Some(b'{') => {
                self.at += 1;
                let mut members = Vec::new();
                let mut open = false;
                if self.peek() == Some(b'}') {
                    self.at += 1;
                    return Ok(Pat::Object(members, open));
                }
                loop {
                    if self.etc() {
                        open = true;
                    } else {
                        let Pat::Json(Value::String(k)) = self.scalar()? else {
                            return Err(format!("a member name at {:?}", self.rest()));
                        };
                        self.eat(b':')?;
                        members.push((k, self.value()?));
                    }
                    match self.peek() {
                        Some(b',') => self.at += 1,
                        Some(b'}') => {
                            self.at += 1;
                            return Ok(Pat::Object(members, open));
                        }
                        _ => return Err(format!("',' or '}}' at {:?}", self.rest())),
                    }
                }
            }
            Some(b'[') => {
                self.at += 1;
                let mut items = Vec::new();
                if self.peek() == Some(b']') {
                    self.at += 1;
                    return Ok(Pat::Array(items));
                }
                loop {
                    items.push(self.value()?);
                    match self.peek() {
                        Some(b',') => self.at += 1,
                        Some(b']') => {
                            self.at += 1;
                            return Ok(Pat::Array(items));
                        }
                        _ => return Err(format!("',' or ']' at {:?}", self.rest())),
                    }
                }
            }
            _ => self.scalar(),
        }
    }
    /// A JSON string, number, `true`, `false` or `null`, read by serde_json.
    fn scalar(&mut self) -> Result<Pat, String> {
        self.ws();
        let mut stream =
            serde_json::Deserializer::from_slice(&self.s[self.at..]).into_iter::<Value>();
        match stream.next() {
            Some(Ok(v)) if !v.is_object() && !v.is_array() => {
                self.at += stream.byte_offset();
                Ok(match v {
                    Value::String(s) if s == "..." || s == "…" => Pat::AnyString,
                    v => Pat::Json(v),
                })
            }
            _ => Err(format!("a JSON value at {:?}", self.rest())),
        }
    }
}

fn parse_expected(text: &str) -> Result<Expected, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        at: 0,
    };
    let mut out = Expected::default();
    while let Some(b) = p.peek() {
        match b {
            b'{' | b'[' => out.values.push(p.value()?),
            b'(' => {
                let mut depth = 0;
                while p.at < p.s.len() {
                    match p.s[p.at] {
                        b'(' => depth += 1,
                        b')' => depth -= 1,
                        _ => {}
                    }
                    p.at += 1;
                    if depth == 0 {
                        break;
                    }
                }
            }
            b'0'..=b'9' => {
                let digits = &p.s[p.at..(p.at + 3).min(p.s.len())];
                let status = std::str::from_utf8(digits)
                    .ok()
                    .and_then(|d| d.parse().ok())
                    .filter(|_| digits.len() == 3)
                    .ok_or_else(|| format!("a status at {:?}", p.rest()))?;
                out.statuses.push(status);
                p.at += 3;
            }
            _ => return Err(format!("unexpected text {:?}", p.rest())),
        }
    }
    Ok(out)
}

fn matches(pat: &Pat, v: &Value) -> bool {
    match pat {
        Pat::Etc | Pat::AnyString => true,
        Pat::Json(Value::Number(n)) => v.as_f64().is_some_and(|x| Some(x) == n.as_f64()),
        Pat::Json(j) => j == v,
        Pat::Array(items) => v.as_array().is_some_and(|a| run_matches(items, a)),
        Pat::Object(members, open) => {
            let Some(o) = v.as_object() else {
                return false;
            };
            let named = members.iter().all(|(k, p)| {
                o.get(k)
                    .is_some_and(|x| MASKED.contains(&k.as_str()) || matches(p, x))
            });
            named && (*open || o.len() == members.len())
        }
    }
}

fn run_matches(pats: &[Pat], vals: &[Value]) -> bool {
    match pats.split_first() {
        None => vals.is_empty(),
        Some((Pat::Etc, rest)) => (0..=vals.len()).any(|i| run_matches(rest, &vals[i..])),
        Some((p, rest)) => vals
            .split_first()
            .is_some_and(|(v, vs)| matches(p, v) && run_matches(rest, vs)),
    }
}

/// Moves every `YYYY-MM-DD` in `text` by `days`, and every `YYYY-MM` standing alone by the
/// months between the two days.
fn move_dates(text: &str, recorded: NaiveDate, today: NaiveDate) -> String {
    let days = today - recorded;
    let months = (today.year() * 12 + today.month0() as i32)
        - (recorded.year() * 12 + recorded.month0() as i32);
    let b = text.as_bytes();
    let digits = |from: usize, n: usize| {
        b.get(from..from + n)
            .is_some_and(|s| s.iter().all(u8::is_ascii_digit))
    };
    let mut out = String::new();
    let mut i = 0;
    while i < text.len() {
        let starts = (i == 0 || !b[i - 1].is_ascii_digit())
            && digits(i, 4)
            && b.get(i + 4) == Some(&b'-')
            && digits(i + 5, 2);
        if starts {
            let day = (b.get(i + 7) == Some(&b'-') && digits(i + 8, 2))
                .then(|| NaiveDate::parse_from_str(&text[i..i + 10], "%Y-%m-%d").ok())
                .flatten();
            if let Some(d) = day {
                out.push_str(&(d + days).format("%Y-%m-%d").to_string());
                i += 10;
                continue;
            }
            let month = NaiveDate::parse_from_str(&format!("{}-01", &text[i..i + 7]), "%Y-%m-%d");
            if let Ok(m) = month {
                let moved = if months >= 0 {
                    m + Months::new(months as u32)
                } else {
                    m - Months::new(months.unsigned_abs())
                };
                out.push_str(&moved.format("%Y-%m").to_string());
                i += 7;
                continue;
            }
        }
        let c = text[i..].chars().next().unwrap();
        out.push(c);
        i += c.len_utf8();
    }
    out
}

// ----- what a page's outputs say of each other -----------------------------------------------

/// Why a page's examples contradict themselves, whatever the gateway answers: ids, tokens and
/// instants are masked when the examples run, so only the text can be held to one run, and
/// curl's progress meter goes to the terminal, where the run does not look.
fn disagreements(doc: &Doc) -> Vec<String> {
    let mut all: Vec<&Example> = doc.examples.iter().chain(&doc.unrun).collect();
    all.sort_by_key(|e| e.line);
    let mut out = Vec::new();
    for e in &all {
        for call in loud_curls(&e.command) {
            out.push(format!(
                "{}:{}: `{call}`: its output goes into a pipe or `$(…)`, so it needs `curl -s` \
                 (else curl draws its progress meter on the reader's terminal)",
                doc.name, e.line
            ));
        }
    }
    out.extend(times_disagree(doc, &all));
    out
}

/// Each `curl` call of `command` (on one line) whose output a pipe or a `$(…)` takes and that
/// does not pass `-s` (`--silent`).
fn loud_curls(command: &str) -> Vec<String> {
    let code = command
        .lines()
        .map(|l| l.split(" #").next().unwrap_or_default())
        .collect::<Vec<_>>()
        .join("\n")
        .replace("\\\n", " ");
    let b = code.as_bytes();
    let mut loud = Vec::new();
    for i in 0..b.len() {
        let starts = b[i..].starts_with(b"curl")
            && (i == 0 || matches!(b[i - 1], b' ' | b'\t' | b'\n' | b'(' | b';' | b'|' | b'&'))
            && b.get(i + 4).is_none_or(u8::is_ascii_whitespace);
        if !starts {
            continue;
        }
        let captured = code[..i].trim_end().ends_with("$(");
        let (end, piped) = call_end(b, i);
        let call = &code[i..end];
        let silent = call.split_whitespace().any(|w| {
            w == "--silent"
                || (w.len() > 1
                    && w.starts_with('-')
                    && w[1..].bytes().all(|c| c.is_ascii_alphabetic())
                    && w.contains('s'))
        });
        if (captured || piped) && !silent {
            loud.push(call.split_whitespace().collect::<Vec<_>>().join(" "));
        }
    }
    loud
}

/// Where the shell command starting at `from` ends, and whether a pipe takes its output: at
/// the first `|`, `;`, `&`, newline or `)` outside quotes and `$(…)`.
fn call_end(b: &[u8], from: usize) -> (usize, bool) {
    let (mut single, mut double, mut depth) = (false, false, 0usize);
    let mut i = from;
    while i < b.len() {
        let c = b[i];
        if single {
            single = c != b'\'';
            i += 1;
            continue;
        }
        match c {
            b'\\' => i += 1,
            b'\'' if !double => single = true,
            b'"' => double = !double,
            b'$' if b.get(i + 1) == Some(&b'(') => {
                depth += 1;
                i += 1;
            }
            b')' if depth > 0 => depth -= 1,
            // A redirection (`2>&1`), not a list.
            b'&' if i > 0 && b[i - 1] == b'>' => {}
            b'|' | b';' | b'&' | b'\n' | b')' if !double && depth == 0 => {
                return (i, c == b'|' && b.get(i + 1) != Some(&b'|'));
            }
            _ => {}
        }
        i += 1;
    }
    (b.len(), false)
}

/// The ms of an order id, `<voucher_id>/<ms>-<seq>`: the id is its stream entry's, whose time
/// the order's `created_at` is.
fn order_ms(id: &str) -> Option<i64> {
    let (_, entry) = id.rsplit_once('/')?;
    let (ms, seq) = entry.split_once('-')?;
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
    (digits(ms) && digits(seq))
        .then(|| ms.parse().ok())
        .flatten()
}

/// The number a command sends under `key` in its JSON body, quoted or escaped as it is.
fn sent_number(command: &str, key: &str) -> Option<i64> {
    let (_, rest) = command
        .split_once(&format!("{key}\\\""))
        .or_else(|| command.split_once(&format!("\"{key}\"")))?;
    let rest = rest.trim_start_matches(['\\', '"', ':', ' ']);
    let end = rest
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    rest[..end].parse().ok()
}

fn objects<'a>(p: &'a Pat, out: &mut Vec<&'a [(String, Pat)]>) {
    match p {
        Pat::Object(members, _) => {
            out.push(members);
            for (_, v) in members {
                objects(v, out);
            }
        }
        Pat::Array(items) => items.iter().for_each(|i| objects(i, out)),
        _ => {}
    }
}

fn member<'a>(members: &'a [(String, Pat)], name: &str) -> Option<&'a Value> {
    members.iter().find_map(|(k, p)| match p {
        Pat::Json(v) if k == name => Some(v),
        _ => None,
    })
}

fn at_ms(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map_or_else(|| ms.to_string(), |t| t.format("%FT%T%.3fZ").to_string())
}

/// The instants a page's outputs carry, held to one run on the day the page says it was
/// recorded: an order id's time is its `created_at`; a lock's token (the store's clock in µs
/// when no earlier token of the name is ahead of it) is at or before the start of the lease
/// it holds (`expires_at` less the `ttl_ms` sent); and the instants of the calls — an order's,
/// a lease's start, an enqueue's (`run_at` less the `delay_ms` sent) — follow each other down
/// the page, and none is before a job shown claimed was due. Queue receipts and job ids carry
/// no time.
fn times_disagree(doc: &Doc, examples: &[&Example]) -> Vec<String> {
    let mut out = Vec::new();
    // An id shown again (a listing, a replay, a renewal's token) says nothing new of the time.
    let mut seen = std::collections::HashSet::new();
    // The latest instant the page's calls have passed, what showed it, and where.
    let mut latest: Option<(i64, String, usize)> = None;
    for e in examples {
        let Some(shown) = &e.shown else { continue };
        // An output that does not parse is reported by the run.
        let Ok(expected) = parse_expected(&shown.text) else {
            continue;
        };
        let at = format!("{}:{}", doc.name, shown.line);
        let ttl = sent_number(&e.command, "ttl_ms");
        let delay = sent_number(&e.command, "delay_ms");
        let mut objs = Vec::new();
        for v in &expected.values {
            objects(v, &mut objs);
        }
        for m in objs {
            let instant = |name| {
                member(m, name)
                    .and_then(Value::as_str)
                    .and_then(|s| chrono::DateTime::parse_from_rfc3339(s).ok())
                    .map(|t| t.timestamp_millis())
            };
            // (instant, whether the call happened then rather than at or after it, what).
            let mut calls: Vec<(i64, bool, String)> = Vec::new();
            if let Some((id, ms)) = member(m, "order_id")
                .and_then(Value::as_str)
                .and_then(|id| Some((id, order_ms(id)?)))
            {
                if let Some(created) = instant("created_at").filter(|c| *c != ms) {
                    out.push(format!(
                        "{at}: order {id} was made at {} (its id's time), but its created_at \
                         is {}",
                        at_ms(ms),
                        at_ms(created)
                    ));
                }
                if seen.insert(id.to_owned()) {
                    calls.push((ms, true, format!("order {id}")));
                }
            }
            let expires = instant("expires_at");
            if let Some(token) = member(m, "token").and_then(Value::as_i64) {
                let ms = token / 1000;
                let began = expires.map(|x| x - ttl.unwrap_or(0));
                if let Some(b) = began.filter(|b| ms > *b) {
                    out.push(format!(
                        "{at}: token {token} is the clock at {}, after the lease it holds \
                         began ({}: expires_at less the ttl_ms sent)",
                        at_ms(ms),
                        at_ms(b)
                    ));
                }
                if seen.insert(format!("token {token}")) {
                    calls.push((ms, false, format!("token {token}")));
                }
            }
            if let (Some(x), Some(ttl)) = (expires, ttl) {
                calls.push((
                    x - ttl,
                    true,
                    "a lease's start (expires_at less ttl_ms)".into(),
                ));
            }
            if let Some(run_at) = instant("run_at") {
                if let Some(delay) = delay {
                    calls.push((
                        run_at - delay,
                        true,
                        "an enqueue (run_at less delay_ms)".into(),
                    ));
                } else if member(m, "receipt").is_some() {
                    calls.push((run_at, false, "a claimed job's due time".into()));
                }
            }
            for (t, exact, what) in calls {
                let day = chrono::DateTime::from_timestamp_millis(t).map(|d| d.date_naive());
                if let Some(recorded) = doc.recorded.filter(|r| day != Some(*r)) {
                    out.push(format!(
                        "{at}: {what} is at {}, but the page's examples were recorded on \
                         {recorded}",
                        at_ms(t)
                    ));
                }
                match &latest {
                    Some((l, lwhat, lline)) if exact && t < *l => out.push(format!(
                        "{at}: {what} is at {}, before {lwhat} at line {lline} ({}): one run's \
                         calls follow each other down the page",
                        at_ms(t),
                        at_ms(*l)
                    )),
                    Some((l, ..)) if *l >= t => {}
                    _ => latest = Some((t, what, shown.line)),
                }
            }
        }
    }
    out
}

// ----- running a document --------------------------------------------------------------------

/// What one command did: its stdout, its calls' HTTP statuses, and curl's own complaints.
#[derive(Debug, Default, Clone)]
struct Ran {
    stdout: String,
    statuses: Vec<u16>,
    stderr: String,
}

const END: &str = "@@example-end";
const STATUS: &str = "@@example-status";

/// The bash script of a document: its commands in order, each followed by a marker on both
/// streams; every `curl` reports its status on stderr.
fn script(doc: &Doc, base: &str) -> String {
    let mut s = String::new();
    writeln!(s, "export GATEWAY_ADMIN_TOKEN={ADMIN_TOKEN}").unwrap();
    writeln!(
        s,
        "curl() {{ command curl -sS -w '%{{stderr}}{STATUS} %{{http_code}}\\n' \"$@\"; }}"
    )
    .unwrap();
    for (n, e) in doc.examples.iter().enumerate() {
        s.push_str(&e.command.replace("localhost:8080", base));
        writeln!(s, "printf '\\n{END} {n}\\n'; printf '\\n{END} {n}\\n' >&2").unwrap();
    }
    s
}

fn split(out: &str, count: usize) -> Vec<String> {
    let mut parts = vec![String::new(); count];
    let mut n = 0;
    for line in out.lines() {
        if let Some(k) = line.strip_prefix(END).map(str::trim) {
            n = k.parse::<usize>().unwrap() + 1;
            continue;
        }
        if n < count {
            parts[n].push_str(line);
            parts[n].push('\n');
        }
    }
    parts
}

fn run(doc: &Doc, base: &str) -> Vec<Ran> {
    // A bound on the whole document, so an example that hangs fails instead of the suite.
    let out = std::process::Command::new("timeout")
        .args(["300", "bash", "-c"])
        .arg(script(doc, base))
        .current_dir(root())
        .output()
        .expect("bash runs");
    let n = doc.examples.len();
    let stdout = split(&String::from_utf8_lossy(&out.stdout), n);
    let stderr = split(&String::from_utf8_lossy(&out.stderr), n);
    stdout
        .into_iter()
        .zip(stderr)
        .map(|(stdout, err)| {
            let mut ran = Ran {
                stdout,
                ..Ran::default()
            };
            for line in err.lines() {
                match line.strip_prefix(STATUS) {
                    Some(code) => ran.statuses.push(code.trim().parse().unwrap_or(0)),
                    None if !line.trim().is_empty() => {
                        ran.stderr.push_str(line);
                        ran.stderr.push('\n');
                    }
                    None => {}
                }
            }
            ran
        })
        .collect()
}

/// Why `ran` does not show what `e` says it shows, if it does not.
fn mismatch(
    e: &Example,
    ran: &Ran,
    recorded: Option<NaiveDate>,
    today: NaiveDate,
) -> Option<String> {
    let Some(shown) = &e.shown else {
        if ran.statuses.iter().any(|s| *s >= 400 || *s == 0) {
            return Some(format!(
                "shows no output, so it must succeed: statuses {:?}",
                ran.statuses
            ));
        }
        return (!ran.stderr.is_empty()).then(|| format!("stderr: {}", ran.stderr));
    };
    let text = match recorded {
        Some(r) => move_dates(&shown.text, r, today),
        None => shown.text.clone(),
    };
    let expected = match parse_expected(&text) {
        Ok(x) => x,
        Err(why) => return Some(format!("the shown output does not parse: {why}")),
    };
    let actual: Result<Vec<Value>, _> = serde_json::Deserializer::from_str(&ran.stdout)
        .into_iter::<Value>()
        .collect();
    let Ok(actual) = actual else {
        return Some(format!("the output is not JSON: {}", ran.stdout.trim()));
    };
    let tail = ran
        .statuses
        .len()
        .checked_sub(expected.statuses.len())
        .map(|k| &ran.statuses[k..]);
    // The documents show a status before an output exactly where it is not 200 (README's
    // tour says so), so a reader takes an output shown alone for a 200. A command that calls
    // nothing (`echo "$LOCK"`) shows what an earlier call answered, which that call checked.
    let bare = expected.statuses.is_empty();
    let statuses_ok = if bare {
        ran.statuses.iter().all(|s| (1..400).contains(s))
            && ran.statuses.last().is_none_or(|s| *s == 200)
    } else {
        tail == Some(expected.statuses.as_slice())
    };
    let values_ok = expected.values.len() == actual.len()
        && expected
            .values
            .iter()
            .zip(&actual)
            .all(|(p, v)| matches(p, v));
    (!(statuses_ok && values_ok)).then(|| {
        format!(
            "{}expected (dates moved to today): {}\n    actual: statuses {:?}, output {}{}",
            if bare && !statuses_ok {
                "shows no status, so it must answer 200 (a status is shown where it is not); "
            } else {
                ""
            },
            text.trim(),
            ran.statuses,
            ran.stdout.trim(),
            if ran.stderr.is_empty() {
                String::new()
            } else {
                format!("\n    stderr: {}", ran.stderr.trim())
            }
        )
    })
}

async fn run_documents(redis: Option<String>) {
    let today = chrono::Utc::now().date_naive();
    let mut failures = Vec::new();
    let mut skipped = Vec::new();
    let mut ran_count = 0;
    for path in documents() {
        let name = path.strip_prefix(root()).unwrap().display().to_string();
        let doc = parse_doc(&name, &std::fs::read_to_string(&path).unwrap());
        failures.extend(doc.errors.iter().cloned());
        skipped.extend(
            doc.skipped
                .iter()
                .map(|(l, why)| format!("{name}:{l}: {why}")),
        );
        if doc.examples.is_empty() {
            continue;
        }
        let dated = |text: &str| {
            let day = NaiveDate::from_ymd_opt(2000, 1, 1).unwrap();
            move_dates(text, day, day + chrono::Days::new(1)) != text
        };
        let shows_dates = doc
            .examples
            .iter()
            .any(|e| e.shown.as_ref().is_some_and(|s| dated(&s.text)));
        if doc.recorded.is_none() && shows_dates {
            failures.push(format!(
                "{name}: shows dates but declares no <!-- examples recorded on YYYY-MM-DD -->"
            ));
        }
        let mut env: Vec<(String, String)> = doc
            .env
            .iter()
            .map(|(k, v)| {
                let v = if v.starts_with("docs/") {
                    root().join(v).display().to_string()
                } else {
                    v.clone()
                };
                (k.clone(), v)
            })
            .collect();
        if let Some(url) = &redis {
            env.push(("REDIS_URL".into(), url.clone()));
            env.push(("GATEWAY_KEY_PREFIX".into(), common::unique_prefix()));
        }
        let env_refs: Vec<(&str, &str)> =
            env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let gw = Binary::start(&env_refs);
        gw.wait_ready().await;
        let base = gw.url("").trim_start_matches("http://").to_owned();
        let results = run(&doc, &base);
        drop(gw);
        for (e, ran) in doc.examples.iter().zip(&results) {
            ran_count += 1;
            if let Some(why) = mismatch(e, ran, doc.recorded, today) {
                failures.push(format!(
                    "{name}:{}: {}\n    {why}",
                    e.shown.as_ref().map_or(e.line, |s| s.line),
                    e.command.trim()
                ));
            }
        }
    }
    let mut by_doc: BTreeMap<&str, usize> = BTreeMap::new();
    for s in &skipped {
        *by_doc.entry(s.split(':').next().unwrap()).or_default() += 1;
    }
    eprintln!(
        "{ran_count} example commands run, {} blocks skipped:\n{}",
        skipped.len(),
        skipped.join("\n")
    );
    assert!(
        ran_count > 50,
        "the scan must find the examples: {ran_count}"
    );
    assert!(
        failures.is_empty(),
        "{} examples do not show what they do:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// Every page's examples read as one run, and their pipes and captures as a reader's terminal
/// shows them; no gateway needed.
#[test]
fn examples_agree_with_themselves() {
    let mut problems = Vec::new();
    for path in documents() {
        let name = path.strip_prefix(root()).unwrap().display().to_string();
        let doc = parse_doc(&name, &std::fs::read_to_string(&path).unwrap());
        problems.extend(disagreements(&doc));
    }
    assert!(
        problems.is_empty(),
        "{} examples contradict their pages:\n{}",
        problems.len(),
        problems.join("\n")
    );
}

#[tokio::test]
async fn examples_run_as_shown_on_the_embedded_backend() {
    run_documents(None).await;
}

#[tokio::test]
async fn examples_run_as_shown_on_redis() {
    run_documents(Some(common::shared_redis().url())).await;
}

/// The comparison can fail, and says where: a wrong value, a missing member, an extra element,
/// a status, an output under no command; masks and `...` hold only where they are written.
#[test]
fn the_comparison_can_fail() {
    let pat = |s: &str| parse_expected(s).unwrap();
    let v = |s: &str| serde_json::from_str::<Value>(s).unwrap();
    let one = |p: &Expected, x: &Value| p.values.len() == 1 && matches(&p.values[0], x);
    let shown = pat(r#"{"a":1,"b":[1,...],"c":"...","order_id":"x",...} (commentary)"#);
    assert!(one(
        &shown,
        &v(r#"{"a":1,"b":[1,2,3],"c":{"d":1},"order_id":"y","e":0}"#)
    ));
    assert!(one(&shown, &v(r#"{"a":1,"b":[1],"c":0,"order_id":7}"#)));
    assert!(!one(&shown, &v(r#"{"a":2,"b":[1],"c":0,"order_id":7}"#)));
    assert!(!one(&shown, &v(r#"{"a":1,"b":[2],"c":0,"order_id":7}"#)));
    assert!(!one(&shown, &v(r#"{"a":1,"b":[1],"order_id":7}"#)));
    let closed = pat(r#"{"a":1.50,"b":[...,3]}"#);
    assert!(one(&closed, &v(r#"{"a":1.5,"b":[1,2,3]}"#)));
    assert!(!one(&closed, &v(r#"{"a":1.5,"b":[1,2,3],"c":0}"#)));
    assert!(!one(&closed, &v(r#"{"a":1.5,"b":[3,4]}"#)));
    assert_eq!(pat("409 {\"a\":1}").statuses, vec![409]);
    assert_eq!(pat("204").values, vec![]);
    assert!(parse_expected("{\"a\":1} and then").is_err());

    assert!(calls_curl("X=$(curl -X POST x)"));
    assert!(calls_curl("for i in 1 2; do curl -s x; done"));
    assert!(!calls_curl("./scripts/test   # installs curl, jq"));
    assert!(!calls_curl("# curl x"));

    let recorded = NaiveDate::from_ymd_opt(2026, 11, 21).unwrap();
    let today = NaiveDate::from_ymd_opt(2027, 1, 3).unwrap();
    assert_eq!(
        move_dates(
            r#""2026-11-20","2026-11","2026-11-21T12:00:00Z",12026-11"#,
            recorded,
            today
        ),
        r#""2027-01-02","2027-01","2027-01-03T12:00:00Z",12026-11"#
    );

    let doc = parse_doc(
        "d.md",
        "<!-- examples recorded on 2026-11-21 -->\n\
         ```sh\n# {\"orphan\":1}\ncurl -X POST x \\\n  -d '{}'\n# 201 {\"a\":\n#   1}\n\
         curl y\n```\n<!-- example: skip — needs a certificate -->\n```sh\ncurl z\n```\n",
    );
    assert_eq!(doc.errors.len(), 1, "{:?}", doc.errors);
    assert!(doc.errors[0].starts_with("d.md:3: "), "{:?}", doc.errors);
    assert_eq!(doc.examples.len(), 2);
    assert_eq!(doc.examples[0].line, 4);
    assert_eq!(
        doc.examples[0].shown.as_ref().unwrap().text,
        "201 {\"a\":\n1}\n"
    );
    assert!(doc.examples[1].shown.is_none());
    assert_eq!(doc.skipped, vec![(10, "needs a certificate".to_owned())]);

    let e = &doc.examples[0];
    let ran = |statuses: Vec<u16>, out: &str| Ran {
        stdout: out.into(),
        statuses,
        stderr: String::new(),
    };
    assert!(mismatch(e, &ran(vec![201], r#"{"a":1}"#), None, today).is_none());
    assert!(mismatch(e, &ran(vec![200], r#"{"a":1}"#), None, today).is_some());
    assert!(mismatch(e, &ran(vec![201], r#"{"a":2}"#), None, today).is_some());
    let quiet = &doc.examples[1];
    assert!(mismatch(quiet, &ran(vec![204], ""), None, today).is_none());
    assert!(mismatch(quiet, &ran(vec![200, 409], ""), None, today).is_some());

    // An output shown without a status is a 200's: a 201 must say so.
    let bare = parse_doc(
        "b.md",
        "```sh\ncurl -X PUT x\n# {\"a\":1}\necho \"$A\"\n# {\"a\":1}\n```\n",
    );
    let (put, echo) = (&bare.examples[0], &bare.examples[1]);
    assert!(mismatch(put, &ran(vec![200], r#"{"a":1}"#), None, today).is_none());
    let created = mismatch(put, &ran(vec![201], r#"{"a":1}"#), None, today);
    assert!(created.is_some_and(|m| m.starts_with("shows no status, so it must answer 200")));
    assert!(mismatch(echo, &ran(vec![], r#"{"a":1}"#), None, today).is_none());
}

/// The agreement checks catch what a reader caught: ids from another day than the dates beside
/// them, a page whose calls go back in time, and captured or piped output without `curl -s`.
#[test]
fn the_agreement_checks_can_fail() {
    let problems = |text: &str| {
        let doc = parse_doc(
            "d.md",
            &format!("<!-- examples recorded on 2026-11-26 -->\n{text}"),
        );
        assert!(doc.errors.is_empty(), "{:?}", doc.errors);
        disagreements(&doc)
    };
    let block = |lines: &[&str]| format!("```sh\n{}\n```\n", lines.join("\n"));

    // An order id made a year before its created_at, as README's tour once showed.
    let order = |id: &str, created: &str| {
        block(&[
            "curl -X POST localhost:8080/v1/seckill/vouchers/v1/orders -d '{\"user_id\":42}'",
            &format!(
                "# 201 {{\"order_id\":\"{id}\",\"voucher_id\":\"v1\",\"user_id\":42,\"created_at\":\"{created}\"}}"
            ),
        ])
    };
    let old = problems(&order("v1/1764126600123-0", "2026-11-26T03:10:00.123Z"));
    assert_eq!(old.len(), 2, "{old:?}");
    assert!(
        old[0].contains("its created_at is 2026-11-26T03:10:00.123Z"),
        "{old:?}"
    );
    assert!(old[1].contains("recorded on 2026-11-26"), "{old:?}");
    assert!(problems(&order("v1/1795662600123-0", "2026-11-26T03:10:00.123Z")).is_empty());

    // A token from three days before its lease, as README's tour once showed, and one from
    // the lease's own millisecond.
    let lock = |token: u64, expires: &str| {
        block(&[
            "curl -X POST localhost:8080/v1/locks/a -d '{\"owner\":\"w\",\"ttl_ms\":30000}'",
            &format!(
                "# {{\"name\":\"a\",\"owner\":\"w\",\"token\":{token},\"expires_at\":\"{expires}\"}}"
            ),
        ])
    };
    let old = problems(&lock(1_795_402_391_446_693, "2026-11-26T03:10:30.000Z"));
    assert_eq!(old.len(), 1, "{old:?}");
    assert!(
        old[0].contains("token 1795402391446693 is at 2026-11-23T"),
        "{old:?}"
    );
    assert!(problems(&lock(1_795_662_600_000_417, "2026-11-26T03:10:30.000Z")).is_empty());
    let late = problems(&lock(1_795_662_600_001_000, "2026-11-26T03:10:30.000Z"));
    assert!(
        late[0].contains("after the lease it holds began"),
        "{late:?}"
    );

    // An enqueue after a claim that waited for a job, shown as if it came first.
    let enqueue = |id: &str, run_at: &str, delay: u64| {
        [
            format!("curl -X POST localhost:8080/v1/queues/q/jobs -d '{{\"id\":\"{id}\",\"delay_ms\":{delay}}}'"),
            format!("# 201 {{\"id\":\"{id}\",\"queue\":\"q\",\"run_at\":\"{run_at}\"}}"),
        ]
    };
    let claim = [
        "curl -s -X POST localhost:8080/v1/queues/q/claim -d '{\"wait_ms\":20000}'".to_owned(),
        "# {\"jobs\":[{\"id\":\"a\",\"run_at\":\"2026-11-26T02:50:05.123Z\",\"receipt\":\"1.1\"}]}"
            .to_owned(),
    ];
    let page = |reminder: &str| {
        let lines: Vec<String> = enqueue("a", "2026-11-26T02:50:05.123Z", 2000)
            .into_iter()
            .chain(claim.clone())
            .chain(enqueue("b", reminder, 3_600_000))
            .collect();
        problems(&block(
            &lines.iter().map(String::as_str).collect::<Vec<_>>(),
        ))
    };
    let old = page("2026-11-26T03:50:03.123Z");
    assert_eq!(old.len(), 1, "{old:?}");
    assert!(
        old[0].contains("before a claimed job's due time at line 6"),
        "{old:?}"
    );
    assert!(page("2026-11-26T03:50:05.200Z").is_empty());

    // Skipped blocks are held to their page too.
    let skipped = format!(
        "{}<!-- example: skip — needs a ledger -->\n{}",
        order("v1/1795662600123-0", "2026-11-26T03:10:00.123Z"),
        block(&[
            "curl localhost:8080/v1/seckill/vouchers/v1/dead-letters",
            "# {\"dead_letters\":[{\"order_id\":\"v1/1763856000000-3\",\"created_at\":\"...\"}]}",
        ])
    );
    let old = problems(&skipped);
    assert_eq!(old.len(), 2, "{old:?}");
    assert!(
        old[0].starts_with("d.md:9: order v1/1763856000000-3 is at 2025-11-23"),
        "{old:?}"
    );

    // What a pipe or `$(…)` takes must come without the progress meter.
    let loud = |c: &str| loud_curls(c);
    assert_eq!(
        loud("LOCK=$(curl -X POST x -H 'a: b' \\\n  -d '{}')"),
        vec!["curl -X POST x -H 'a: b' -d '{}'"]
    );
    assert_eq!(
        loud("curl -X POST x \\\n  -d '{\"a\":1}' | jq .token").len(),
        1
    );
    assert_eq!(loud("X=\"$(curl x)\"").len(), 1);
    assert!(loud("LOCK=$(curl -s -X POST x -d '{}')").is_empty());
    assert!(loud("curl -sS x | jq .").is_empty());
    assert!(loud("curl --silent x | jq .").is_empty());
    assert!(loud("curl -X PUT x -d \"{\\\"end\\\":\\\"$(date -d '+1 hour')\\\"}\"").is_empty());
    assert!(loud("curl x || echo failed").is_empty());
    assert!(loud("curl x; echo done | cat").is_empty());
    assert!(loud("echo \"$LOCK\" | jq .token").is_empty());
}
