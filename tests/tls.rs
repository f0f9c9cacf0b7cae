//! HTTPS (docs/operations.md "TLS") through the real binary, with certificates the test
//! makes: HTTP/1.1 and HTTP/2 chosen by ALPN, plain HTTP and silence on the TLS port closed,
//! answers not read closed at the write timeout, the certificate reloaded when its files change
//! (a bad pair kept out), and a one-line refusal to start for each way the files can be wrong.

mod common;

use std::collections::HashSet;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::http::Request;
use common::binary::Binary;
use common::poll::{eventually, until};
use common::{server_ends, ESTABLISHED};
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// A self-signed certificate for `localhost`: its PEM and its key's PEM.
fn certificate() -> (String, String) {
    let made = rcgen::generate_simple_self_signed(vec!["localhost".to_owned()]).unwrap();
    (made.cert.pem(), made.signing_key.serialize_pem())
}

/// A fresh directory for one test's files.
fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("gateway-tls-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Writes `text` to `path` whole: to a neighbour, then renamed over it, as deployment tools do.
fn put(path: &PathBuf, text: &str) {
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// A gateway serving HTTPS with a new certificate; it, the certificate's PEM and the files.
fn https(name: &str, env: &[(&str, &str)]) -> (Binary, String, PathBuf, PathBuf) {
    let dir = dir(name);
    let (cert, key) = certificate();
    let (cert_file, key_file) = (dir.join("cert.pem"), dir.join("key.pem"));
    put(&cert_file, &cert);
    put(&key_file, &key);
    let mut all = vec![
        ("GATEWAY_TLS_CERT_FILE", cert_file.to_str().unwrap()),
        ("GATEWAY_TLS_KEY_FILE", key_file.to_str().unwrap()),
    ];
    all.extend_from_slice(env);
    let gw = Binary::start(&all);
    gw.line(|l| l.contains("serving on"));
    (gw, cert, cert_file, key_file)
}

/// A TLS connection to `addr` trusting the certificates `trusted` (PEM), offering `alpn`.
async fn connect(addr: SocketAddr, trusted: &[&str], alpn: &[&[u8]]) -> TlsStream<TcpStream> {
    let mut roots = rustls::RootCertStore::empty();
    for pem in trusted {
        roots.add(CertificateDer::from(der(pem))).unwrap();
    }
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    config.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    let tcp = TcpStream::connect(addr).await.unwrap();
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("localhost").unwrap(), tcp)
        .await
        .unwrap()
}

/// `GET /healthz` over HTTP/1.1 on `tls`: the whole answer.
async fn get_http1(mut tls: TlsStream<TcpStream>) -> String {
    tls.write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut got = Vec::new();
    let _ = tls.read_to_end(&mut got).await;
    String::from_utf8_lossy(&got).into_owned()
}

#[tokio::test]
async fn https_serves_http1_and_h2_by_alpn() {
    let (gw, cert, _, _) = https("alpn", &[]);
    let tls = connect(gw.addr(), &[&cert], &[b"http/1.1"]).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"http/1.1"[..]));
    let answer = get_http1(tls).await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    assert!(answer.ends_with(r#"{"status":"ok"}"#), "{answer}");

    // A client that names no protocol gets HTTP/1.1.
    let answer = get_http1(connect(gw.addr(), &[&cert], &[]).await).await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");

    let tls = connect(gw.addr(), &[&cert], &[b"h2", b"http/1.1"]).await;
    assert_eq!(tls.get_ref().1.alpn_protocol(), Some(&b"h2"[..]));
    let (mut client, conn) = h2::client::handshake(tls).await.unwrap();
    tokio::spawn(conn);
    let req = Request::post("https://localhost/v1/uv/secure")
        .header("content-type", "application/json")
        .body(())
        .unwrap();
    let (answer, mut body) = client.send_request(req, false).unwrap();
    body.send_data(r#"{"visitor":"v"}"#.into(), true).unwrap();
    let (head, mut body) = answer.await.unwrap().into_parts();
    assert_eq!(head.status, 200);
    let mut got = Vec::new();
    while let Some(chunk) = body.data().await {
        got.extend_from_slice(&chunk.unwrap());
    }
    let got: serde_json::Value = serde_json::from_slice(&got).unwrap();
    assert_eq!(got["pv"], 1, "{got}");
}

/// Waits until the server has closed its end of each connection from `ports` (a hang guard of
/// ten write timeouts fails the test if it does not).
async fn closed_by_the_server(addr: SocketAddr, ports: &HashSet<u16>, write: Duration) {
    let mut ends = Vec::new();
    let closed = until(write * 10, || {
        ends = server_ends(addr, ports);
        let closed = ends.iter().all(|&(state, _)| state != ESTABLISHED);
        async move { closed.then_some(()) }
    })
    .await;
    assert!(
        closed.is_some(),
        "still open {:?} after the client stopped reading: {ends:?}",
        write * 10
    );
}

/// Over TLS too, a connection whose answers are not read is closed the write timeout later:
/// HTTP/1.1 asking for a 1.5 MB answer and never reading it, HTTP/2 (ALPN `h2`) with a window
/// of 0 that stays 0.
#[tokio::test]
async fn https_connections_whose_answers_are_not_read_are_closed() {
    let write = Duration::from_secs(1);
    let (gw, cert, _, _) = https("unread", &[("GATEWAY_WRITE_TIMEOUT_MS", "1000")]);
    let mut http1 = connect(gw.addr(), &[&cert], &[b"http/1.1"]).await;
    http1
        .write_all(b"GET /swagger-ui/swagger-ui-bundle.js HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    let h2 = connect(gw.addr(), &[&cert], &[b"h2"]).await;
    let ports: HashSet<u16> = [http1.get_ref().0.local_addr(), h2.get_ref().0.local_addr()]
        .into_iter()
        .map(|a| a.unwrap().port())
        .collect();
    let (client, conn) = h2::client::Builder::new()
        .initial_window_size(0)
        .handshake::<_, axum::body::Bytes>(h2)
        .await
        .unwrap();
    let conn = tokio::spawn(conn);
    let mut client = client.ready().await.unwrap();
    let (answer, _) = client
        .send_request(
            Request::get("https://localhost/healthz").body(()).unwrap(),
            true,
        )
        .unwrap();
    let answer = answer.await.unwrap();
    assert_eq!(answer.status(), 200);
    closed_by_the_server(gw.addr(), &ports, write).await;
    let ended = tokio::time::timeout(Duration::from_secs(10), conn).await;
    assert!(ended.is_ok(), "the HTTP/2 client does not see the close");
    drop(answer);
}

/// Plain HTTP to the TLS port is closed at once, not left hanging; a client that never
/// finishes its handshake is closed at the header timeout.
#[tokio::test]
async fn plain_http_and_silence_on_the_tls_port_are_closed() {
    let (gw, cert, _, _) = https("plain", &[("GATEWAY_HEADER_TIMEOUT_MS", "3000")]);
    // "At once" told by order, not timed: a silent connection made first, whose header timeout
    // is therefore due first, must still be open when the plain one is closed.
    let mut silent = TcpStream::connect(gw.addr()).await.unwrap();
    // Half a ClientHello's record header.
    silent.write_all(&[0x16, 0x03, 0x01]).await.unwrap();
    // A connection made after it is served, so it has been accepted: its deadline runs.
    let answer = get_http1(connect(gw.addr(), &[&cert], &[]).await).await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
    let mut plain = TcpStream::connect(gw.addr()).await.unwrap();
    plain
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n")
        .await
        .unwrap();
    tokio::select! {
        biased;
        () = closed(&mut silent) => {
            panic!("plain HTTP left open until the header timeout: the silent connection made before it was closed first")
        }
        () = closed(&mut plain) => {}
    }
    // The bound, ten times the header timeout, only catches a connection never closed.
    tokio::time::timeout(Duration::from_secs(30), closed(&mut silent))
        .await
        .expect("an unfinished handshake is closed");

    let answer = get_http1(connect(gw.addr(), &[&cert], &[]).await).await;
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer}");
}

/// Once the server has closed `sock` (whatever it sent before).
async fn closed(sock: &mut TcpStream) {
    let mut buf = [0u8; 4096];
    while let Ok(1..) = sock.read(&mut buf).await {}
}

/// The certificate a new connection is served.
async fn served(addr: SocketAddr, trusted: &[&str]) -> Vec<u8> {
    let tls = connect(addr, trusted, &[]).await;
    tls.get_ref().1.peer_certificates().unwrap()[0].to_vec()
}

fn der(pem: &str) -> Vec<u8> {
    use rustls::pki_types::pem::PemObject;
    CertificateDer::from_pem_slice(pem.as_bytes())
        .unwrap()
        .to_vec()
}

/// New files are served to new connections within a few seconds; files that cannot be used
/// (a key that does not match) are logged and the certificate served so far is kept.
#[tokio::test]
async fn a_changed_certificate_is_reloaded_and_a_bad_one_is_not() {
    let (gw, first, cert_file, key_file) = https("reload", &[]);
    let (second, second_key) = certificate();
    let trusted = [first.as_str(), second.as_str()];
    assert_eq!(served(gw.addr(), &trusted).await, der(&first));

    put(&key_file, &second_key);
    put(&cert_file, &second);
    // The files are looked at every 2 s; the bound, fifteen times that, only catches a
    // certificate never reloaded.
    let reloaded = "the new certificate is served";
    eventually(Duration::from_secs(30), reloaded, || async {
        (served(gw.addr(), &trusted).await == der(&second)).then_some(())
    })
    .await;

    // A key of another certificate: refused, the second certificate still served.
    let (_, stray_key) = certificate();
    put(&key_file, &stray_key);
    let warning = gw.line(|l| l.contains("cannot be used"));
    assert!(warning.contains("does not match"), "{warning}");
    assert_eq!(served(gw.addr(), &trusted).await, der(&second));
}

/// Runs the binary with `env` and expects a one-line refusal to start; that line.
fn refused(env: &[(&str, &str)]) -> String {
    let exit = Binary::run(env, &[]);
    assert!(!exit.status.success(), "started with {env:?}");
    let lines: Vec<&str> = exit.stderr.lines().collect();
    assert_eq!(lines.len(), 1, "{}", exit.stderr);
    assert!(
        lines[0].starts_with("error: invalid configuration: "),
        "{}",
        lines[0]
    );
    lines[0].to_owned()
}

#[test]
fn each_bad_tls_setting_is_a_one_line_refusal() {
    let dir = dir("refusals");
    let (cert, key) = certificate();
    let (_, other_key) = certificate();
    let file = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_owned()
    };
    let (cert_file, key_file) = (file("cert.pem", &cert), file("key.pem", &key));
    let (garbage, other_key) = (
        file("garbage.pem", "hello\n"),
        file("other.pem", &other_key),
    );
    let missing = dir.join("missing.pem").to_str().unwrap().to_owned();
    let tls = |cert: &str, key: &str| {
        refused(&[
            ("GATEWAY_TLS_CERT_FILE", cert),
            ("GATEWAY_TLS_KEY_FILE", key),
        ])
    };

    let err = refused(&[("GATEWAY_TLS_CERT_FILE", &cert_file)]);
    assert!(
        err.contains("GATEWAY_TLS_KEY_FILE") && err.contains("both"),
        "{err}"
    );
    let err = refused(&[("GATEWAY_TLS_KEY_FILE", &key_file)]);
    assert!(
        err.contains("GATEWAY_TLS_CERT_FILE") && err.contains("both"),
        "{err}"
    );

    let err = tls(&missing, &key_file);
    assert!(
        err.contains(&format!(
            "GATEWAY_TLS_CERT_FILE (--tls-cert-file): cannot read {missing}: "
        )),
        "{err}"
    );
    assert!(err.contains("No such file"), "{err}");
    let err = tls(&cert_file, &missing);
    assert!(
        err.contains(&format!(
            "GATEWAY_TLS_KEY_FILE (--tls-key-file): cannot read {missing}: "
        )),
        "{err}"
    );

    let err = tls(&garbage, &key_file);
    assert!(
        err.contains("GATEWAY_TLS_CERT_FILE") && err.contains("no certificate"),
        "{err}"
    );
    // A certificate where the key should be: no key in it.
    let err = tls(&cert_file, &cert_file);
    assert!(
        err.contains("GATEWAY_TLS_KEY_FILE") && err.contains("no private key"),
        "{err}"
    );
    let err = tls(&cert_file, &other_key);
    assert!(err.contains("does not match the certificate"), "{err}");

    // The good pair starts (and is stopped at once).
    let (mut cmd, port) = common::binary::command(&[
        ("GATEWAY_TLS_CERT_FILE", &cert_file),
        ("GATEWAY_TLS_KEY_FILE", &key_file),
    ]);
    cmd.stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    let mut child = common::process::spawn(cmd).unwrap();
    // Refused, it exits; accepted, it listens: whichever comes first.
    let listening = common::poll::until_blocking(Duration::from_secs(20), || {
        child.try_wait().unwrap().is_some()
            || std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    assert!(
        listening && child.try_wait().unwrap().is_none(),
        "the good pair is refused"
    );
    let _ = child.kill();
    let _ = child.wait();
}
