//! Script calls are auto-pipelined like other commands (the patched fred in `vendor/fred`,
//! vendor/README.md): calls queued on one connection together reach Redis in a few writes,
//! not one write each, and every caller still gets its own answer.
//!
//! Redis's `total_reads_processed` counts the reads it made from its clients' sockets, so
//! it tells how many writes the calls arrived in. Upstream fred 10.1.0 flushed after every
//! `EVALSHA`: 100 queued calls were 100 writes and Redis read them in ~100 pieces.

mod common;

use fred::prelude::*;
use futures::future::join_all;

async fn reads_processed(client: &Client) -> u64 {
    let info: String = client
        .info(Some(fred::types::InfoKind::Stats))
        .await
        .unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("total_reads_processed:"))
        .expect("INFO stats has total_reads_processed")
        .trim()
        .parse()
        .unwrap()
}

// Current-thread: every call below is queued before fred's connection task writes any.
#[tokio::test(flavor = "current_thread")]
async fn queued_script_calls_share_writes() {
    const CALLS: usize = 100;
    let (_redis, client, sha) = common::fred_on_private_redis("return tonumber(ARGV[1]) * 2").await;

    let before = reads_processed(&client).await;
    let answers: Vec<i64> =
        join_all((0..CALLS).map(|i| client.evalsha::<i64, _, _, _>(&sha, Vec::<String>::new(), i)))
            .await
            .into_iter()
            .map(Result::unwrap)
            .collect();
    let reads = reads_processed(&client).await - before;

    let expected: Vec<i64> = (0..CALLS as i64).map(|i| i * 2).collect();
    assert_eq!(answers, expected, "each caller gets its own call's answer");
    // One read for the INFO itself, a few for the calls (Redis reads 16 KiB at a time).
    assert!(
        reads <= 5,
        "{CALLS} queued EVALSHAs took {reads} reads: are script calls flushed one by one again?"
    );
}
