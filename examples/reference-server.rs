//! A ceiling for `scripts/bench`: the least a thread-per-connection HTTP/1.1 server on `std`
//! can do per request on this machine. It answers every request with a fixed JSON body of the
//! same bytes as `GET /api/health` on an unlocked vault, in one `write_all`, from a thread per
//! connection, like the service's own HTTP layer. No parsing beyond finding the end of each
//! head, no gate, no routing, no JSON building, no database. Requests must have no body.
//!
//! A Cargo example (not shipped in the binary):
//! `cargo build --release --example reference-server`, then
//! `target/release/examples/reference-server` prints `SERVICE_PORT=<port>` like the service
//! and serves 127.0.0.1 on an OS-chosen port until killed.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::thread;

fn main() -> std::io::Result<()> {
    let body = format!(
        r#"{{"status":"ok","version":"{}","vault_locked":false}}"#,
        env!("CARGO_PKG_VERSION")
    );
    let response: Arc<[u8]> = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
    .into();
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "SERVICE_PORT={port}")?;
    stdout.flush()?;
    drop(stdout);
    for stream in listener.incoming().flatten() {
        let response = Arc::clone(&response);
        thread::spawn(move || serve(stream, &response));
    }
    Ok(())
}

/// Answers every complete head in what arrives; closes when the client does.
fn serve(mut stream: TcpStream, response: &[u8]) {
    let _ = stream.set_nodelay(true);
    let mut pending = Vec::with_capacity(8192);
    let mut chunk = [0u8; 8192];
    loop {
        let count = match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(count) => count,
        };
        pending.extend_from_slice(&chunk[..count]);
        while let Some(end) = pending.windows(4).position(|window| window == b"\r\n\r\n") {
            pending.drain(..end + 4);
            if stream.write_all(response).is_err() {
                return;
            }
        }
    }
}
