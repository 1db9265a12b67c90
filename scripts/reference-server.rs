//! The ceiling for `scripts/bench`: the least a tiny_http 0.12 server can do per request on
//! this machine. It answers every request with a fixed JSON body of the same bytes as
//! `GET /api/health` on an unlocked vault, written as one `write_all` through `into_writer`
//! (the same write path as src/server.rs), from the same number of worker threads (16) fed
//! by one receiving thread. No routing, no gate, no JSON building, no database.
//!
//! A Cargo example (not shipped in the binary):
//! `cargo build --release --example reference-server`, then
//! `target/release/examples/reference-server` prints `SERVICE_PORT=<port>` like the service
//! and serves 127.0.0.1 on an OS-chosen port until killed.

use std::io::Write;
use std::net::TcpListener;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;

/// Same as `host_manager::server::WORKERS`.
const WORKERS: usize = 16;

fn main() -> std::io::Result<()> {
    let body = format!(
        r#"{{"status":"ok","version":"{}","vault_locked":false}}"#,
        env!("CARGO_PKG_VERSION")
    );
    let response = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes();
    let response: Arc<[u8]> = response.into();

    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let server = tiny_http::Server::from_listener(listener, None).map_err(std::io::Error::other)?;
    let (jobs_tx, jobs_rx) = mpsc::sync_channel::<tiny_http::Request>(WORKERS * 4);
    let jobs_rx = Arc::new(Mutex::new(jobs_rx));
    for _ in 0..WORKERS {
        let jobs_rx = Arc::clone(&jobs_rx);
        let response = Arc::clone(&response);
        thread::spawn(move || loop {
            let next = match jobs_rx.lock() {
                Ok(receiver) => receiver.recv(),
                Err(_) => return,
            };
            let Ok(request) = next else { return };
            let mut writer = request.into_writer();
            let _ = writer.write_all(&response).and_then(|()| writer.flush());
        });
    }
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "SERVICE_PORT={port}")?;
    stdout.flush()?;
    drop(stdout);
    loop {
        let request = server.recv()?;
        if jobs_tx.send(request).is_err() {
            return Ok(());
        }
    }
}
