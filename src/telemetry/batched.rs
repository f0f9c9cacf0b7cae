//! The log writer: lines are appended to one in-memory buffer and written out by a flusher
//! thread every [`FLUSH_EVERY`] (sooner when a lot is pending), so a request's access line costs
//! a copy under a short lock — no system call and no thread wake-up on the request path.
//!
//! Written here rather than with `tracing_appender::non_blocking` because that sends each line
//! through a channel to its worker thread, which is woken (a `futex`) and writes (a `write`)
//! once per line: two of the five system calls a `GET /healthz` cost. Batching
//! makes both once per flush instead. Like the appender, it never stalls a request on a slow
//! stdout: past [`CAP`] bytes pending, lines are dropped and counted, and the count is logged.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use tracing_subscriber::fmt::MakeWriter;

/// How long a line may wait in the buffer: a log reader sees it within this.
pub const FLUSH_EVERY: Duration = Duration::from_millis(50);
/// Pending bytes that wake the flusher before its time, so bursts go out in big writes.
const EARLY: usize = 256 * 1024;
/// Pending bytes past which lines are dropped (the output cannot keep up).
pub const CAP: usize = 16 * 1024 * 1024;

#[derive(Debug, Default)]
struct Shared {
    pending: Mutex<Vec<u8>>,
    wake: Condvar,
    stop: AtomicBool,
    dropped: AtomicU64,
}

impl Shared {
    fn pending(&self) -> MutexGuard<'_, Vec<u8>> {
        // A panic while appending leaves whole lines behind it: keep logging.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The `MakeWriter` handed to `tracing_subscriber::fmt`.
#[derive(Debug, Clone)]
pub struct Batched {
    shared: Arc<Shared>,
}

/// Stops the flusher when dropped, after writing out every line still pending.
#[derive(Debug)]
#[must_use = "dropping it stops the log writer"]
pub struct FlushGuard {
    shared: Arc<Shared>,
    flusher: Option<JoinHandle<()>>,
}

/// A writer that batches lines for `out`, flushed by its own thread.
pub fn batched<W: Write + Send + 'static>(out: W) -> (Batched, FlushGuard) {
    let shared = Arc::new(Shared::default());
    let flusher = {
        let shared = shared.clone();
        std::thread::Builder::new()
            .name("log-writer".into())
            .spawn(move || flush_loop(&shared, out))
            .expect("spawn the log writer thread")
    };
    (
        Batched {
            shared: shared.clone(),
        },
        FlushGuard {
            shared,
            flusher: Some(flusher),
        },
    )
}

fn flush_loop<W: Write>(shared: &Shared, mut out: W) {
    let mut chunk = Vec::new();
    loop {
        let stopping = {
            let pending = shared.pending();
            let (mut pending, _) = shared
                .wake
                .wait_timeout_while(pending, FLUSH_EVERY, |p| {
                    p.len() < EARLY && !shared.stop.load(Ordering::Acquire)
                })
                .unwrap_or_else(PoisonError::into_inner);
            // Swap rather than copy: the request path appends to last round's allocation.
            std::mem::swap(&mut *pending, &mut chunk);
            shared.stop.load(Ordering::Acquire)
        };
        let dropped = shared.dropped.swap(0, Ordering::Relaxed);
        if dropped > 0 {
            let _ = writeln!(
                chunk,
                "log writer: dropped {dropped} lines (the output could not keep up)"
            );
        }
        if !chunk.is_empty() {
            // Nowhere to report a failed log write but the log itself: the lines are lost.
            let _ = out.write_all(&chunk).and_then(|()| out.flush());
            chunk.clear();
            // Do not keep a burst's allocation for ever.
            chunk.shrink_to(EARLY * 2);
        }
        if stopping && shared.pending().is_empty() {
            return;
        }
    }
}

impl Drop for FlushGuard {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Release);
        self.shared.wake.notify_one();
        if let Some(flusher) = self.flusher.take() {
            let _ = flusher.join();
        }
    }
}

impl Batched {
    /// Appends one whole line (or counts it dropped past [`CAP`]).
    pub fn append(&self, line: &[u8]) {
        let mut pending = self.shared.pending();
        let before = pending.len();
        if before + line.len() > CAP {
            drop(pending);
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
        } else {
            pending.extend_from_slice(line);
            let crossed = before < EARLY && pending.len() >= EARLY;
            drop(pending);
            if crossed {
                self.shared.wake.notify_one();
            }
        }
    }
}

impl Write for Batched {
    fn write(&mut self, line: &[u8]) -> std::io::Result<usize> {
        self.append(line);
        // The line is taken (or counted as dropped) whole: `fmt` writes each event once.
        Ok(line.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> MakeWriter<'a> for Batched {
    type Writer = Batched;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An output the test can read back.
    #[derive(Clone, Default)]
    struct Sink(Arc<Mutex<Vec<u8>>>);

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_line_arrives_in_order_from_many_threads_and_at_shutdown() {
        let sink = Sink::default();
        let (writer, guard) = batched(sink.clone());
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let mut w = writer.make_writer();
                std::thread::spawn(move || {
                    for i in 0..5_000 {
                        w.write_all(format!("t{t} {i}\n").as_bytes()).unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        drop(guard);
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        for t in 0..4 {
            let mine: Vec<usize> = text
                .lines()
                .filter_map(|l| l.strip_prefix(&format!("t{t} ")))
                .map(|n| n.parse().unwrap())
                .collect();
            assert_eq!(mine, (0..5_000).collect::<Vec<_>>(), "thread {t}");
        }
    }

    #[test]
    fn lines_show_up_without_a_shutdown() {
        let sink = Sink::default();
        let (writer, _guard) = batched(sink.clone());
        writer.make_writer().write_all(b"hello\n").unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while sink.0.lock().unwrap().as_slice() != b"hello\n" {
            assert!(
                std::time::Instant::now() < deadline,
                "the line never arrived"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }

    /// An output that blocks until released: a stdout nobody reads.
    struct Stuck(Arc<(Mutex<bool>, Condvar)>, Sink);

    impl Write for Stuck {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let (lock, cv) = &*self.0;
            let _open = cv.wait_while(lock.lock().unwrap(), |open| !*open).unwrap();
            self.1.write(buf)
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_stuck_output_drops_and_counts_lines_instead_of_blocking_writers() {
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let sink = Sink::default();
        let (writer, guard) = batched(Stuck(gate.clone(), sink.clone()));
        let mut w = writer.make_writer();
        // The flusher takes the first line and blocks in the output with it.
        w.write_all(b"first\n").unwrap();
        std::thread::sleep(FLUSH_EVERY * 4);
        let mut line = vec![b'x'; 1023];
        line.push(b'\n');
        let lines = CAP / 1024 + 100;
        for _ in 0..lines {
            w.write_all(&line).unwrap();
        }
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        drop(guard);
        let text = String::from_utf8(sink.0.lock().unwrap().clone()).unwrap();
        let kept = text.lines().filter(|l| l.starts_with('x')).count();
        assert!(kept < lines, "nothing was dropped");
        let note = text
            .lines()
            .find(|l| l.starts_with("log writer: dropped"))
            .expect("the drop is reported");
        let dropped: usize = note.split(' ').nth(3).unwrap().parse().unwrap();
        assert_eq!(dropped, lines - kept, "{note}; kept {kept} of {lines}");
    }
}
