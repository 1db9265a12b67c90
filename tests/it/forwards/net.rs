//! Network helpers for the forward tests: a TCP echo server, a free-port finder, a minimal
//! SOCKS5 client (no auth, CONNECT by IPv4 or by domain name), and `Tunnel`, an `ssh -N`
//! whose forwards a test waits for by polling connects (never by sleeping) and which is
//! killed on drop.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

use crate::support::{wait_until, EVENT_DEADLINE};

/// How long one probe through a tunnel may block on a read before it counts as a miss; the
/// caller polls again until `EVENT_DEADLINE`.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

static NEXT_PROBE: AtomicUsize = AtomicUsize::new(0);

/// The next candidate of `free_port`, below the kernel's ephemeral range (32768 and up on
/// Linux), where no test's `bind(0)` (a service, an sshd, an echo server) lands: a port
/// picked here stays free until the test's ssh binds it.
static NEXT_FREE: AtomicUsize = AtomicUsize::new(0);

/// A port free on 127.0.0.1 and [::1] (`localhost` to ssh), from 20000-31999, starting at
/// an offset of the test process's id so that two runs side by side rarely meet.
pub fn free_port() -> u16 {
    const FIRST: usize = 20000;
    const COUNT: usize = 12000;
    let start = std::process::id() as usize * 97;
    loop {
        let n = NEXT_FREE.fetch_add(1, Ordering::SeqCst);
        assert!(
            n < COUNT,
            "no free port left in {FIRST}-{}",
            FIRST + COUNT - 1
        );
        let port = u16::try_from(FIRST + (start + n) % COUNT).expect("a port");
        let v4 = TcpListener::bind(("127.0.0.1", port)).is_ok();
        let v6 = match TcpListener::bind(("::1", port)) {
            Ok(_) => true,
            Err(err) => err.kind() != std::io::ErrorKind::AddrInUse,
        };
        if v4 && v6 {
            return port;
        }
    }
}

/// A TCP echo server on 127.0.0.1 (a thread per connection), stopped on drop.
pub struct Echo {
    pub port: u16,
    stop: Arc<AtomicBool>,
}

impl Echo {
    pub fn start() -> Echo {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the echo server");
        let port = listener.local_addr().expect("echo address").port();
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                if let Ok(stream) = stream {
                    thread::spawn(move || echo(stream));
                }
            }
        });
        Echo { port, stop }
    }
}

impl Drop for Echo {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so that it sees the flag.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

fn echo(mut stream: TcpStream) {
    let mut buffer = [0u8; 4096];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => return,
            Ok(n) => {
                if stream.write_all(&buffer[..n]).is_err() {
                    return;
                }
            }
        }
    }
}

/// A distinctive line for one probe.
fn probe_line() -> Vec<u8> {
    let n = NEXT_PROBE.fetch_add(1, Ordering::SeqCst);
    format!("probe-{}-{n}\n", std::process::id()).into_bytes()
}

/// Writes a line on `stream` and reads it back: true when the echo came back whole.
pub fn echoes(mut stream: TcpStream) -> bool {
    let line = probe_line();
    if stream.set_read_timeout(Some(PROBE_TIMEOUT)).is_err() || stream.write_all(&line).is_err() {
        return false;
    }
    let mut back = vec![0u8; line.len()];
    let read = stream.read_exact(&mut back).is_ok() && back == line;
    let _ = stream.shutdown(Shutdown::Both);
    read
}

/// One echo round trip through 127.0.0.1:`port` (a forward's listening end).
pub fn echo_via(port: u16) -> bool {
    TcpStream::connect(("127.0.0.1", port)).is_ok_and(echoes)
}

/// Where a SOCKS5 CONNECT goes.
#[derive(Clone, Copy)]
pub enum SocksTarget<'a> {
    Ipv4([u8; 4], u16),
    Domain(&'a str, u16),
}

/// Opens a stream to `target` through the SOCKS5 proxy on 127.0.0.1:`proxy` (no auth).
/// `None` when the proxy is not up or refuses.
pub fn socks5(proxy: u16, target: SocksTarget<'_>) -> Option<TcpStream> {
    let mut stream = TcpStream::connect(("127.0.0.1", proxy)).ok()?;
    stream.set_read_timeout(Some(PROBE_TIMEOUT)).ok()?;
    stream.write_all(&[5, 1, 0]).ok()?;
    let mut choice = [0u8; 2];
    stream.read_exact(&mut choice).ok()?;
    if choice != [5, 0] {
        return None;
    }
    let mut request = vec![5, 1, 0];
    let port = match target {
        SocksTarget::Ipv4(address, port) => {
            request.push(1);
            request.extend_from_slice(&address);
            port
        }
        SocksTarget::Domain(name, port) => {
            request.push(3);
            request.push(u8::try_from(name.len()).ok()?);
            request.extend_from_slice(name.as_bytes());
            port
        }
    };
    request.extend_from_slice(&port.to_be_bytes());
    stream.write_all(&request).ok()?;
    let mut head = [0u8; 4];
    stream.read_exact(&mut head).ok()?;
    if head[..2] != [5, 0] {
        return None;
    }
    let address_len = match head[3] {
        1 => 4,
        4 => 16,
        3 => {
            let mut len = [0u8; 1];
            stream.read_exact(&mut len).ok()?;
            usize::from(len[0])
        }
        _ => return None,
    };
    let mut rest = vec![0u8; address_len + 2];
    stream.read_exact(&mut rest).ok()?;
    Some(stream)
}

/// One echo round trip to `target` through the SOCKS5 proxy on 127.0.0.1:`proxy`.
pub fn echo_via_socks(proxy: u16, target: SocksTarget<'_>) -> bool {
    socks5(proxy, target).is_some_and(echoes)
}

/// A running `ssh -N -F <config> <alias>` (with `ExitOnForwardFailure`, `BatchMode`, no
/// host-key checks and no agent), killed and reaped on drop.
pub struct Tunnel {
    child: Child,
    log: PathBuf,
}

impl Tunnel {
    pub fn start(config: &Path, alias: &str) -> Tunnel {
        Tunnel::start_with(config, alias, &["-o", "ExitOnForwardFailure=yes"])
    }

    /// `ssh -N` with `options` (and `BatchMode`, no host-key checks, no agent).
    pub fn start_with(config: &Path, alias: &str, options: &[&str]) -> Tunnel {
        let log = config.with_extension(format!("{alias}.ssh.log"));
        let child = Command::new("ssh")
            .arg("-N")
            .arg("-F")
            .arg(config)
            .args(options)
            .args(["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no"])
            .args(["-o", "UserKnownHostsFile=/dev/null"])
            // A deadline for a hang, not a measure: the local sshd answers in milliseconds.
            .args(["-o", "ConnectTimeout=60"])
            .arg(alias)
            .env_remove("SSH_AUTH_SOCK")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(&log).expect("create the ssh log"))
            .spawn()
            .expect("ssh (openssh-client) runs");
        Tunnel { child, log }
    }

    /// Polls for ssh's exit until `EVENT_DEADLINE`.
    pub fn wait_exit(&mut self) -> Option<std::process::ExitStatus> {
        let mut status = None;
        wait_until(EVENT_DEADLINE, || {
            status = self.child.try_wait().ok().flatten();
            status.is_some()
        });
        status
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Where ssh's stderr goes.
    pub fn log_path(&self) -> PathBuf {
        self.log.clone()
    }

    /// Polls `probe` until it holds; fails the test with ssh's log when ssh exited or the
    /// deadline passed.
    #[track_caller]
    pub fn wait_for(&mut self, what: &str, mut probe: impl FnMut() -> bool) {
        let mut exited = None;
        let up = wait_until(EVENT_DEADLINE, || {
            exited = self.child.try_wait().ok().flatten();
            exited.is_none() && probe()
        });
        assert!(
            up,
            "{what}: not up (ssh exit: {exited:?}); ssh log:\n{}",
            self.log()
        );
    }
}

impl Drop for Tunnel {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
