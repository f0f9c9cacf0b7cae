//! A web page's origin for the browser tests: a tiny HTTP server on a free port of 127.0.0.1
//! that answers every request with one page (tests/browser_cors.rs, tests/browser_events.rs).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;

/// Serves `page` to every request on a free port of 127.0.0.1, for as long as the test runs;
/// its origin.
pub fn serve(page: String) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let origin = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            // The head only: the browser sends GETs without bodies.
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/html; charset=utf-8\r\n\
                 content-length: {}\r\nconnection: close\r\n\r\n{page}",
                page.len()
            );
        }
    });
    origin
}
