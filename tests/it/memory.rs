//! Secrets in the service's memory once the vault is locked (docs/security.md, "The vault's threat
//! model"): after the first-run path (no password; a host password stored and read back;
//! a master password set; lock; unlock, read back, lock again) nothing in the process's
//! writable memory opens the vault: not the data key, not the key derived from the master
//! password, not the master password, and not the host password the vault protects.
//!
//! Reads the child's memory through `/proc/PID/maps` and `/proc/PID/mem` (Linux; the test
//! process is the service's parent, and CI runs as root). When that memory cannot be read
//! at all, the test fails saying why: it never passes without having looked (Rust's test
//! harness cannot report a skip at run time, and a pass would claim what was not checked).
//!

use std::fs::{self, File};
use std::io::{Read, Seek, SeekFrom};

use serde_json::{json, Value};
use sha2::Sha256;

use crate::support::{Response, Service};

/// With a `"` near its start: its JSON text differs from the password, and its last 16
/// bytes (searched too, see `hits`) are the same in both.
const MASTER_PASSWORD: &str = "Mem-\"Master-Marker-5d1f93c7-0a9b";
const HOST_PASSWORD: &str = "Mem-Host-Marker-a83e07b2";

/// One writable mapping of the child: its `/proc/PID/maps` line and its bytes.
struct Region {
    line: String,
    start: u64,
    bytes: Vec<u8>,
}

/// Every readable writable mapping of process `pid`, or why none could be read.
fn writable_memory(pid: u32) -> Result<Vec<Region>, String> {
    let maps = fs::read_to_string(format!("/proc/{pid}/maps"))
        .map_err(|err| format!("cannot read /proc/{pid}/maps: {err}"))?;
    let mut mem = File::open(format!("/proc/{pid}/mem"))
        .map_err(|err| format!("cannot open /proc/{pid}/mem: {err}"))?;
    let mut regions = Vec::new();
    let mut last_error = None;
    for line in maps.lines() {
        let mut fields = line.split_whitespace();
        let (Some(range), Some(perms)) = (fields.next(), fields.next()) else {
            continue;
        };
        if !perms.starts_with("rw") {
            continue;
        }
        let Some((start, end)) = range.split_once('-') else {
            continue;
        };
        let start = u64::from_str_radix(start, 16).unwrap();
        let end = u64::from_str_radix(end, 16).unwrap();
        let mut bytes = vec![0u8; usize::try_from(end - start).unwrap()];
        let read = mem
            .seek(SeekFrom::Start(start))
            .and_then(|_| mem.read_exact(&mut bytes));
        match read {
            Ok(()) => regions.push(Region {
                line: line.to_owned(),
                start,
                bytes,
            }),
            Err(err) => last_error = Some(format!("{line}: {err}")),
        }
    }
    if regions.is_empty() {
        return Err(format!(
            "no writable mapping of /proc/{pid}/mem could be read ({})",
            last_error.unwrap_or_else(|| "none listed".into())
        ));
    }
    Ok(regions)
}

/// Each place `needle` occurs in the child's memory: the region, the offset in it, and a
/// line saying where, with the bytes around it (so a failure says which buffer held it).
fn hits<'a>(regions: &'a [Region], needle: &[u8]) -> Vec<(&'a Region, usize, String)> {
    let mut found = Vec::new();
    for region in regions {
        let mut from = 0;
        while let Some(at) = find(&region.bytes[from..], needle) {
            let at = from + at;
            let around = &region.bytes
                [at.saturating_sub(48)..(at + needle.len() + 48).min(region.bytes.len())];
            let shown: String = around
                .iter()
                .map(|byte| match byte {
                    0x20..=0x7e => char::from(*byte),
                    _ => '.',
                })
                .collect();
            let line = format!(
                "at {:#x} in [{}]: {shown}",
                region.start + at as u64,
                region.line
            );
            found.push((region, at, line));
            from = at + 1;
        }
    }
    found
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// True when the data key found at `at` is the blob of the vault row exactly as the first run
/// stored it (no master password): a SQLite table cell of payload 36 (`$`), rowid 1, and a
/// record header of NULL id, NULL header and a 32-byte blob (`04 00 00 4C`). Only a copy of
/// that database page has these bytes right before the key.
fn inside_first_run_vault_cell(region: &Region, at: usize) -> bool {
    const CELL: [u8; 6] = [0x24, 0x01, 0x04, 0x00, 0x00, 0x4c];
    at >= CELL.len() && region.bytes[at - CELL.len()..at] == CELL
}

/// Sends `body` as JSON.
fn send(service: &Service, method: &str, path: &str, body: Value) -> Response {
    service.request(method, path, Some(&body))
}

/// The stored vault row: (KDF header, data key or wrapped data key).
fn vault_row(service: &Service) -> (Option<Vec<u8>>, Vec<u8>) {
    let conn = rusqlite::Connection::open_with_flags(
        service.data_dir.join("host-manager.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    conn.query_row("SELECT header, data_key FROM vault", [], |row| {
        Ok((row.get(0)?, row.get(1)?))
    })
    .unwrap()
}

/// The key PBKDF2 derives from `password` under the stored header
/// (`version(1) ‖ rounds(u32, big-endian) ‖ salt(16)`): it unwraps the data key.
fn password_key(header: &[u8], password: &str) -> [u8; 32] {
    let rounds = u32::from_be_bytes(header[1..5].try_into().unwrap());
    let mut key = [0u8; 32];
    pbkdf2::pbkdf2_hmac::<Sha256>(password.as_bytes(), &header[5..21], rounds, &mut key);
    key
}

#[test]
fn after_lock_no_key_or_password_that_opens_the_vault_is_left_in_memory() {
    let service = Service::start("memory-after-lock");
    // First run, no master password: the data key is stored as is, so the test can read it.
    let (header, data_key) = vault_row(&service);
    assert!(header.is_none());
    assert_eq!(data_key.len(), 32);

    let host = json!({
        "name": "db", "hostname": "db.example.com", "port": 22, "username": "postgres",
        "auth": {"type": "password", "password": HOST_PASSWORD}
    });
    let id = send(&service, "POST", "/api/hosts", host).expect(201)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let connect_path = format!("/api/hosts/{id}/connect");
    let connect = send(&service, "POST", &connect_path, json!({})).expect(200);
    assert_eq!(connect["credentials"]["password"], HOST_PASSWORD);
    let new_password = json!({ "new_password": MASTER_PASSWORD });
    send(&service, "PUT", "/api/vault/password", new_password).expect(200);
    service.post("/api/vault/lock", &json!({})).expect(200);
    // Once more through the locked vault: unlock, read the host password back, lock.
    let unlock = json!({ "password": MASTER_PASSWORD });
    send(&service, "POST", "/api/vault/unlock", unlock).expect(200);
    let connect = send(&service, "POST", &connect_path, json!({})).expect(200);
    assert_eq!(connect["credentials"]["password"], HOST_PASSWORD);
    service.post("/api/vault/lock", &json!({})).expect(200);
    assert_eq!(service.get("/api/health").expect(200)["vault_locked"], true);

    let (header, wrapped) = vault_row(&service);
    let header = header.expect("a master password is set");
    assert_ne!(wrapped, data_key, "the stored key is wrapped now");
    let password_key = password_key(&header, MASTER_PASSWORD);

    let regions = writable_memory(service.child.id()).unwrap_or_else(|reason| {
        panic!(
            "cannot check: the service's memory cannot be read here ({reason}); run the test \
             as the service's parent with ptrace allowed (root, or kernel.yama.ptrace_scope \
             at most 1)"
        )
    });
    // The scan sees what it looks for: the locked vault keeps the wrapped key by design.
    assert!(
        !hits(&regions, &wrapped).is_empty(),
        "the scan finds the wrapped data key the locked vault keeps"
    );
    let tail = |text: &'static str| &text.as_bytes()[text.len() - 16..];
    let keys: [(&str, &[u8]); 2] = [
        ("data key", &data_key),
        ("key derived from the master password", &password_key),
    ];
    // A password's last 16 bytes too: a freed buffer may have lost its first ones.
    let passwords: [(&str, &[u8]); 4] = [
        ("master password", MASTER_PASSWORD.as_bytes()),
        ("master password's last 16 bytes", tail(MASTER_PASSWORD)),
        ("host password", HOST_PASSWORD.as_bytes()),
        ("host password's last 16 bytes", tail(HOST_PASSWORD)),
    ];
    let mut leaks = Vec::new();
    let mut first_run_pages = Vec::new();
    for (what, needle) in keys {
        for (region, at, line) in hits(&regions, needle) {
            match what == "data key" && inside_first_run_vault_cell(region, at) {
                true => first_run_pages.push(line),
                false => leaks.push(format!("{what} {line}")),
            }
        }
    }
    // The one residual copy, written down in docs/security.md, the vault's threat model: SQLite does not
    // wipe the buffers it frees, and one may still hold the page of the first run's vault row.
    eprintln!(
        "{} freed SQLite page images of the first-run vault row:\n{}",
        first_run_pages.len(),
        first_run_pages.join("\n")
    );
    for (what, needle) in passwords {
        for (_, _, line) in hits(&regions, needle) {
            leaks.push(format!("{what} {line}"));
        }
    }
    assert!(
        leaks.is_empty(),
        "{} copies left in memory after lock:\n{}",
        leaks.len(),
        leaks.join("\n")
    );
}
