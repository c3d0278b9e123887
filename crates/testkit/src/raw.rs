//! Raw HTTP/1.1 over a stream, for the connection tests (testkit's and edge's own, which
//! include this file by path): one answer read by its `Content-Length`, a request sent and its
//! answer read, a connection the server closed, connections that fill a server's cap, and a
//! wait on the accept loop's counters. Only tokio is used here.

use std::net::SocketAddr;
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;

/// Only a bound on a wait that must end; never an assertion on how long it took.
pub const GENEROUS: Duration = Duration::from_secs(20);

/// `GET /ok` on a kept-alive connection.
pub const GET_OK: &[u8] = b"GET /ok HTTP/1.1\r\nhost: x\r\n\r\n";

/// Reads one response (head and a `Content-Length` body); returns its head, lowercased, and
/// its body.
pub async fn response(c: &mut (impl AsyncRead + Unpin)) -> (String, String) {
    let read = async {
        let mut buf = Vec::new();
        let mut byte = [0u8; 1];
        while !buf.ends_with(b"\r\n\r\n") {
            let n = c.read(&mut byte).await.unwrap();
            assert_eq!(
                n,
                1,
                "ended inside a head: {:?}",
                String::from_utf8_lossy(&buf)
            );
            buf.push(byte[0]);
        }
        let head = String::from_utf8(buf).unwrap().to_ascii_lowercase();
        let len: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .map(|v| v.trim().parse().unwrap())
            .unwrap_or(0);
        let mut body = vec![0u8; len];
        c.read_exact(&mut body).await.unwrap();
        (head, String::from_utf8(body).unwrap())
    };
    tokio::time::timeout(GENEROUS, read)
        .await
        .expect("an answer")
}

/// Sends `request` whole and reads its answer.
pub async fn ask(
    c: &mut (impl AsyncRead + AsyncWrite + Unpin),
    request: &[u8],
) -> (String, String) {
    c.write_all(request).await.unwrap();
    response(c).await
}

/// The server closed the connection (end of stream or a reset) without (another) answer.
pub async fn closed(c: &mut TcpStream) {
    let mut rest = Vec::new();
    let read = tokio::time::timeout(GENEROUS, c.read_to_end(&mut rest))
        .await
        .expect("the server closes the connection");
    if read.is_ok() {
        assert!(rest.is_empty(), "{:?}", String::from_utf8_lossy(&rest));
    }
}

/// Opens `idle` connections that never send anything (in the order opened), then one more
/// for the caller to use: how the tests push a server past its connection cap.
pub async fn idle_then_one_more(addr: SocketAddr, idle: usize) -> (Vec<TcpStream>, TcpStream) {
    let mut opened = Vec::with_capacity(idle);
    for _ in 0..idle {
        opened.push(TcpStream::connect(addr).await.unwrap());
    }
    let fresh = TcpStream::connect(addr).await.unwrap();
    (opened, fresh)
}

/// Waits (at most `GENEROUS`) until `f` holds.
pub async fn until(what: &str, f: impl Fn() -> bool) {
    let wait = async {
        while !f() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(GENEROUS, wait)
        .await
        .unwrap_or_else(|_| panic!("never: {what}"));
}
