//! Commands reach Redis byte for byte through the patched RESP2 encoder (`vendor/redis-protocol`,
//! vendor/README.md), and replies come back whole through the decoder (the release's since its
//! patch was dropped): the lengths of strings and arrays around each power of ten,
//! integers of every sign and width, empty, null and large values, against a real Redis.

mod common;

use fred::prelude::*;
use fred::types::Value;

#[tokio::test]
async fn arguments_of_every_length_and_sign_arrive_unchanged() {
    // Each argument comes back as Redis saw it, after the counts of keys and arguments.
    let (_redis, client, sha) = common::fred_on_private_redis(
        "local out = { #KEYS, #ARGV } for _, a in ipairs(ARGV) do out[#out + 1] = a end return out",
    )
    .await;

    let lengths = [0, 1, 9, 10, 11, 99, 100, 101, 999, 1000, 10_000, 100_000];
    let strings: Vec<String> = lengths
        .iter()
        .map(|&n| (0..n).map(|i| char::from(b'a' + (i % 26) as u8)).collect())
        .collect();
    let integers = [
        0,
        1,
        9,
        10,
        -1,
        -9,
        -10,
        -99,
        100,
        i64::from(i32::MAX),
        // Past 2^53 a float logarithm miscounts 10^k - 1 (it rounds to 10^k): the release sized
        // these with one digit too many and sent the spare byte, a NUL before the next command.
        9_999_999_999_999_999,
        999_999_999_999_999_999,
        i64::MAX,
        i64::MIN,
    ];
    let mut args: Vec<Value> = strings.iter().map(|s| Value::from(s.as_str())).collect();
    args.extend(integers.iter().map(|&i| Value::Integer(i)));
    // Past 100 arguments, so the array's own length has three digits.
    args.extend((0..100).map(|i| Value::from(format!("item-{i}"))));
    let keys: Vec<String> = (0..11).map(|i| format!("{{k}}:{i}")).collect();

    let echoed: Vec<String> = client
        .evalsha(&sha, keys.clone(), args.clone())
        .await
        .unwrap();

    let mut expected = vec![keys.len().to_string(), args.len().to_string()];
    expected.extend(strings.iter().cloned());
    expected.extend(integers.iter().map(i64::to_string));
    expected.extend((0..100).map(|i| format!("item-{i}")));
    assert_eq!(echoed.len(), expected.len());
    for (i, (got, want)) in echoed.iter().zip(&expected).enumerate() {
        assert_eq!(got, want, "argument {i} changed on the way to Redis");
    }
    // Nothing was left over on the connection for the next command (a stray NUL would leave
    // Redis waiting for the end of an inline command, and this reply would never come).
    let next: Vec<String> = tokio::time::timeout(
        std::time::Duration::from_secs(10),
        client.evalsha(&sha, Vec::<String>::new(), vec!["next"]),
    )
    .await
    .expect("the next command is answered")
    .unwrap();
    assert_eq!(next, ["0", "1", "next"]);
}

#[tokio::test]
async fn replies_of_every_sign_width_and_length_decode_unchanged() {
    let (_redis, client, sha) = common::fred_on_private_redis(
        "return { 0, -1, 9, 10, -10, 99, -100, 123456789, -987654321, '', 'x' }",
    )
    .await;
    let small: Vec<Value> = client
        .evalsha(&sha, Vec::<String>::new(), Vec::<String>::new())
        .await
        .unwrap();
    let mut want: Vec<Value> = [0, -1, 9, 10, -10, 99, -100, 123_456_789, -987_654_321]
        .into_iter()
        .map(Value::Integer)
        .collect();
    want.extend([Value::from(""), Value::from("x")]);
    assert_eq!(small, want);

    // The widest integers Redis keeps, as integer replies.
    for extreme in [i64::MAX, i64::MIN] {
        let _: () = client.set("n", extreme, None, None, false).await.unwrap();
        let n: Value = client.incr_by("n", 0).await.unwrap();
        assert_eq!(n, Value::Integer(extreme));
    }
    // A missing key is a null bulk string, and a long value keeps every byte.
    let missing: Value = client.get("missing").await.unwrap();
    assert_eq!(missing, Value::Null);
    let long = "ab".repeat(50_000);
    let _: () = client
        .set("long", long.as_str(), None, None, false)
        .await
        .unwrap();
    let back: String = client.get("long").await.unwrap();
    assert_eq!(back, long);
}
