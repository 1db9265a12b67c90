//! The merge path's timing at 100,000 hosts a side (docs/sync.md, "Figures"): a measurement,
//! ignored by default, run in release with --nocapture. Here, not in model::sync, because it
//! times the bundle file too (model never depends on vault).

use crate::model::sync::merge::merge_report;
use crate::model::sync::tests::big_pair;
use crate::model::sync::wire;

/// `cargo test --release --locked --bin host-manager bundle_timing -- --ignored --nocapture`
#[test]
#[ignore = "a measurement: run in release with --nocapture"]
fn merge_path_at_100000_hosts_each_side() {
    use crate::vault::bundle::{self, Header, KdfParams, SyncKey};
    let (_, a, b) = big_pair(100_000);
    let params = KdfParams::generate();
    let key = SyncKey::derive(b"passphrase", &params).unwrap();
    let header = Header {
        format_version: 0,
        min_reader: 0,
        kdf: params,
        check: [0; 16],
        device_id: "b".into(),
        device_name: "laptop".into(),
        extra: Default::default(),
    };
    let start = std::time::Instant::now();
    let encoded = wire::encode(&b);
    let t_encode = start.elapsed();
    let bytes = bundle::write(&key, &header, &b);
    let t_write = start.elapsed();
    let (_, opened) = bundle::open(&key, &bytes).unwrap();
    let t_open = start.elapsed();
    let (_, report) = merge_report(&a, &opened);
    let t_merge = start.elapsed();
    eprintln!(
        "100,000 hosts x 15 fields: body {} MB, bundle {} MB; encode {:?}, encode+seal {:?}, \
         open+decode {:?}, merge_report {:?}, total {:?}; {} updated",
        encoded.len() / 1_000_000,
        bytes.len() / 1_000_000,
        t_encode,
        t_write - t_encode,
        t_open - t_write,
        t_merge - t_open,
        t_merge - t_encode,
        report.updated.len(),
    );
    assert_eq!(report.updated.len(), 1_000);
}
