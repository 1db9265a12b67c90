//! The merge path's timing at 100,000 hosts a side (docs/sync.md, "Figures"): a measurement,
//! ignored by default, run in release with --nocapture. Here, not in model::sync, because it
//! times the bundle file too (model never depends on vault).

use std::time::{Duration, Instant};

use crate::model::sync::merge::merge_into;
use crate::model::sync::tests::big_pair;
use crate::model::sync::wire;

/// `cargo test --release --locked --bin host-manager bundle_timing -- --ignored --nocapture`
#[test]
#[ignore = "a measurement: run in release with --nocapture"]
fn merge_path_at_100000_hosts_each_side() {
    use crate::vault::bundle::{self, Header, KdfParams, SyncKey};
    let (_, mut a, b) = big_pair(100_000);
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
    let timed = |step: &mut dyn FnMut()| {
        let start = Instant::now();
        step();
        start.elapsed()
    };
    let mut encoded = Vec::new();
    let t_encode = timed(&mut || encoded = wire::encode(&b));
    let mut bytes = Vec::new();
    let t_write = timed(&mut || bytes = bundle::write(&key, &header, &b));
    drop(b);
    let mut decoded = None;
    let t_decode = timed(&mut || decoded = Some(wire::decode(&encoded).unwrap()));
    let mut decoded = decoded.take();
    let t_drop = timed(&mut || drop(decoded.take()));
    let mut opened = None;
    let t_open = timed(&mut || opened = Some(bundle::open(&key, &bytes).unwrap().1));
    let mut report = None;
    let t_merge = timed(&mut || {
        let remote = opened.take().unwrap();
        report = Some(merge_into(&mut a, remote));
    });
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    eprintln!(
        "100,000 hosts x 15 fields: body {} MB, bundle {} MB; encode {:.0} ms, write (encode+seal) {:.0} ms; \
         open+decode {:.0} ms (of which decode {:.0} ms), merge_into {:.0} ms; \
         merge path (open+decode+merge_into) {:.0} ms; dropping a decoded state {:.0} ms",
        encoded.len() / 1_000_000,
        bytes.len() / 1_000_000,
        ms(t_encode),
        ms(t_write),
        ms(t_open),
        ms(t_decode),
        ms(t_merge),
        ms(t_open + t_merge),
        ms(t_drop),
    );
    assert_eq!(report.unwrap().updated.len(), 1_000);
}
