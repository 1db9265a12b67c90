//! The bundle body's encoding: a `State` as compact JSON (docs/sync.md, "The body").
//!
//! `{"devices": [[id, name, written_at_ms] | [id], ...], "records": [[kind, id, {field:
//! [value, hlc, device] | [value, hlc, device, prev_hlc, prev_device]}, null | [hlc,
//! device, {field: [hlc, device]}]], ...], "ext": {...}}`
//! where `device` is an index into `devices` (a one-element entry names a device that
//! stamped something but is not in the device table). A newer writer puts body data this
//! build does not know under `ext`, which is carried untouched.
//!
//! Invariants: `decode(encode(s)) == s`; `decode` never panics and refuses (never guesses)
//! an index out of range, a duplicate record or a malformed entry.

use std::collections::BTreeMap;
use std::sync::Arc;

use std::fmt;

use serde::de::{self, Deserializer, SeqAccess, Visitor};
use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use crate::model::sync::clock::{DeviceId, Stamp};
use crate::model::sync::record::{DeviceInfo, Field, Record, State, Tombstone};

/// The body of `state` as JSON bytes.
pub fn encode(state: &State) -> Vec<u8> {
    let mut index: BTreeMap<&DeviceId, usize> = BTreeMap::new();
    for device in state
        .devices
        .keys()
        .chain(state.stamps().map(|stamp| &stamp.device))
    {
        let next = index.len();
        index.entry(device).or_insert(next);
    }
    let mut table: Vec<(&DeviceId, usize)> = index.iter().map(|(d, i)| (*d, *i)).collect();
    table.sort_by_key(|(_, i)| *i);
    let devices: Vec<Value> = table
        .iter()
        .map(|(id, _)| match state.devices.get(*id) {
            Some(info) => serde_json::json!([&***id, info.name, info.written_at_ms]),
            None => serde_json::json!([&***id]),
        })
        .collect();
    let body = Body {
        devices,
        records: Records {
            state,
            index: &index,
        },
        ext: &state.ext,
    };
    serde_json::to_vec(&body).expect("a state serializes to JSON")
}

#[derive(Serialize)]
struct Body<'s> {
    devices: Vec<Value>,
    records: Records<'s>,
    ext: &'s BTreeMap<String, Value>,
}

struct Records<'s> {
    state: &'s State,
    index: &'s BTreeMap<&'s DeviceId, usize>,
}

impl Serialize for Records<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let at = |stamp: &Stamp| self.index.get(&stamp.device).copied().unwrap_or(0);
        let mut seq = serializer.serialize_seq(Some(self.state.records.len()))?;
        for ((kind, id), record) in &self.state.records {
            let fields = FieldMap(&record.fields, &at);
            let tomb = record.tombstone.as_ref().map(|tomb| {
                let seen: BTreeMap<&str, (u64, usize)> = tomb
                    .seen
                    .iter()
                    .map(|(name, stamp)| (name.as_str(), (stamp.hlc, at(stamp))))
                    .collect();
                (tomb.stamp.hlc, at(&tomb.stamp), seen)
            });
            seq.serialize_element(&(kind, id, fields, tomb))?;
        }
        seq.end()
    }
}

struct FieldMap<'s, F>(&'s BTreeMap<String, Field>, &'s F);

impl<F: Fn(&Stamp) -> usize> Serialize for FieldMap<'_, F> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, field) in self.0 {
            let (value, hlc, at) = (&field.value, field.stamp.hlc, (self.1)(&field.stamp));
            match &field.prev {
                None => map.serialize_entry(name, &(value, hlc, at))?,
                Some(prev) => {
                    map.serialize_entry(name, &(value, hlc, at, prev.hlc, (self.1)(prev)))?
                }
            }
        }
        map.end()
    }
}

type WireTomb = (u64, usize, BTreeMap<String, (u64, usize)>);
type WireRecord = (
    String,
    String,
    BTreeMap<String, WireField>,
    Option<WireTomb>,
);

/// A field entry: `[value, hlc, device]`, or `[value, hlc, device, prev_hlc, prev_device]`
/// when the change replaced a version.
struct WireField {
    value: Value,
    hlc: u64,
    at: usize,
    prev: Option<(u64, usize)>,
}

impl<'de> Deserialize<'de> for WireField {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_seq(WireFieldVisitor)
    }
}

struct WireFieldVisitor;

impl<'de> Visitor<'de> for WireFieldVisitor {
    type Value = WireField;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("[value, hlc, device] or [value, hlc, device, prev_hlc, prev_device]")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<WireField, A::Error> {
        let missing = || de::Error::invalid_length(0, &self);
        let value = seq.next_element()?.ok_or_else(missing)?;
        let hlc = seq.next_element()?.ok_or_else(missing)?;
        let at = seq.next_element()?.ok_or_else(missing)?;
        let prev = match seq.next_element::<u64>()? {
            None => None,
            Some(prev_hlc) => Some((prev_hlc, seq.next_element()?.ok_or_else(missing)?)),
        };
        if seq.next_element::<de::IgnoredAny>()?.is_some() {
            return Err(de::Error::invalid_length(6, &self));
        }
        Ok(WireField {
            value,
            hlc,
            at,
            prev,
        })
    }
}

#[derive(Deserialize)]
struct WireBody {
    devices: Vec<Vec<Value>>,
    records: Vec<WireRecord>,
    #[serde(default)]
    ext: BTreeMap<String, Value>,
}

/// The state a body encodes; the text says what is wrong with one that does not parse.
pub fn decode(bytes: &[u8]) -> Result<State, String> {
    let body: WireBody = serde_json::from_slice(bytes).map_err(|err| err.to_string())?;
    let mut state = State {
        ext: body.ext,
        ..State::default()
    };
    let mut ids: Vec<DeviceId> = Vec::with_capacity(body.devices.len());
    for entry in &body.devices {
        let (id, info) = device_entry(entry)?;
        if ids.contains(&id) {
            return Err(format!("device {id} is listed twice"));
        }
        if let Some(info) = info {
            state.devices.insert(id.clone(), info);
        }
        ids.push(id);
    }
    let stamp = |hlc: u64, at: usize| -> Result<Stamp, String> {
        let device = ids
            .get(at)
            .ok_or_else(|| format!("device index {at} is out of range"))?;
        Ok(Stamp {
            hlc,
            device: device.clone(),
        })
    };
    for (kind, id, fields, tomb) in body.records {
        let mut record = Record::default();
        for (name, wire) in fields {
            let stamp_of = stamp(wire.hlc, wire.at)?;
            let prev = match wire.prev {
                Some((hlc, at)) => Some(stamp(hlc, at)?),
                None => None,
            };
            let field = Field {
                value: wire.value,
                stamp: stamp_of,
                prev,
            };
            record.fields.insert(name, field);
        }
        if let Some((hlc, at, seen)) = tomb {
            let mut tombstone = Tombstone {
                stamp: stamp(hlc, at)?,
                seen: BTreeMap::new(),
            };
            for (name, (hlc, at)) in seen {
                tombstone.seen.insert(name, stamp(hlc, at)?);
            }
            record.tombstone = Some(tombstone);
        }
        if state
            .records
            .insert((kind.clone(), id.clone()), record)
            .is_some()
        {
            return Err(format!("record {kind}/{id} is listed twice"));
        }
    }
    Ok(state)
}

fn device_entry(entry: &[Value]) -> Result<(DeviceId, Option<DeviceInfo>), String> {
    match entry {
        [Value::String(id)] => Ok((Arc::from(id.as_str()), None)),
        [Value::String(id), Value::String(name), written] => {
            let written_at_ms = written
                .as_u64()
                .ok_or("a device's written_at is not a whole number")?;
            let info = DeviceInfo {
                name: name.clone(),
                written_at_ms,
            };
            Ok((Arc::from(id.as_str()), Some(info)))
        }
        _ => Err("a device entry is not [id] or [id, name, written_at_ms]".to_owned()),
    }
}
