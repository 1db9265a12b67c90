//! The bundle body's encoding: a `State` as compact JSON (docs/sync.md, "The bundle file").
//!
//! `{"devices": [[id, name, written_at_ms] | [id], ...], "names": [field, ...], "records":
//! [[kind, id, [[name, value, hlc, device] | [name, value, hlc, device, prev_hlc,
//! prev_device], ...], null | [hlc, device, [[name, hlc, device], ...]]], ...], "ext": {...}}`
//! where `device` is an index into `devices` (a one-element entry names a device that
//! stamped something but is not in the device table) and `name` an index into `names` (each
//! field name written once, not once a record). `devices` and `names` come before `records`.
//! A newer writer puts body data this build does not know under `ext`, which is carried
//! untouched. The decoder also reads the earlier form with fields and `seen` as objects keyed
//! by name (`{field: [value, hlc, device]}`, `{field: [hlc, device]}`) and no `names`.
//!
//! Decoding goes straight from the bytes into the records (typed serde visitors, no
//! intermediate JSON tree but each field's own value): a device id is one shared `Arc<str>`.
//!
//! Invariants: `decode(encode(s)) == s`; `decode` never panics and refuses (never guesses)
//! an index out of range, a duplicate record or field, or a malformed entry (fuzzed in
//! model::sync::tests and, sealed, in vault::bundle).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::ser::SerializeSeq;
use serde::{Serialize, Serializer};
use serde_json::Value;

use crate::model::sync::clock::{DeviceId, Stamp};
use crate::model::sync::record::{DeviceInfo, Field, Record, RecordKey, State, Tombstone};

/// The body of `state` as JSON bytes.
pub fn encode(state: &State) -> Vec<u8> {
    let mut devices: BTreeMap<&DeviceId, usize> = BTreeMap::new();
    for device in state
        .devices
        .keys()
        .chain(state.stamps().map(|stamp| &stamp.device))
    {
        let next = devices.len();
        devices.entry(device).or_insert(next);
    }
    let mut names: BTreeMap<&str, usize> = BTreeMap::new();
    for record in state.records.values() {
        let seen = record.tombstone.iter().flat_map(|tomb| tomb.seen.keys());
        for name in record.fields.keys().chain(seen) {
            let next = names.len();
            names.entry(name.as_str()).or_insert(next);
        }
    }
    let body = Body {
        devices: in_order(&devices)
            .iter()
            .map(|id| match state.devices.get(*id) {
                Some(info) => serde_json::json!([&***id, info.name, info.written_at_ms]),
                None => serde_json::json!([&***id]),
            })
            .collect(),
        names: in_order(&names),
        records: Records {
            state,
            devices: &devices,
            names: &names,
        },
        ext: &state.ext,
    };
    serde_json::to_vec(&body).expect("a state serializes to JSON")
}

/// The keys of an index map, in index order.
fn in_order<'k, K: ?Sized + Ord>(index: &BTreeMap<&'k K, usize>) -> Vec<&'k K> {
    let mut table: Vec<(&K, usize)> = index.iter().map(|(k, i)| (*k, *i)).collect();
    table.sort_by_key(|(_, i)| *i);
    table.into_iter().map(|(k, _)| k).collect()
}

#[derive(Serialize)]
struct Body<'s> {
    devices: Vec<Value>,
    names: Vec<&'s str>,
    records: Records<'s>,
    ext: &'s BTreeMap<String, Value>,
}

struct Records<'s> {
    state: &'s State,
    devices: &'s BTreeMap<&'s DeviceId, usize>,
    names: &'s BTreeMap<&'s str, usize>,
}

impl Records<'_> {
    fn at(&self, stamp: &Stamp) -> usize {
        self.devices.get(&stamp.device).copied().unwrap_or(0)
    }

    fn name(&self, name: &str) -> usize {
        self.names.get(name).copied().unwrap_or(0)
    }
}

impl Serialize for Records<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut seq = serializer.serialize_seq(Some(self.state.records.len()))?;
        for ((kind, id), record) in &self.state.records {
            let fields = FieldList(self, &record.fields);
            let tomb = record.tombstone.as_ref().map(|tomb| {
                let seen: Vec<(usize, u64, usize)> = tomb
                    .seen
                    .iter()
                    .map(|(name, stamp)| (self.name(name), stamp.hlc, self.at(stamp)))
                    .collect();
                (tomb.stamp.hlc, self.at(&tomb.stamp), seen)
            });
            seq.serialize_element(&(kind, id, fields, tomb))?;
        }
        seq.end()
    }
}

struct FieldList<'r, 's>(&'r Records<'s>, &'s BTreeMap<String, Field>);

impl Serialize for FieldList<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let Self(records, fields) = self;
        let mut seq = serializer.serialize_seq(Some(fields.len()))?;
        for (name, field) in fields.iter() {
            let (name, value) = (records.name(name), &field.value);
            let (hlc, at) = (field.stamp.hlc, records.at(&field.stamp));
            match &field.prev {
                None => seq.serialize_element(&(name, value, hlc, at))?,
                Some(prev) => {
                    let (prev_hlc, prev_at) = (prev.hlc, records.at(prev));
                    seq.serialize_element(&(name, value, hlc, at, prev_hlc, prev_at))?
                }
            }
        }
        seq.end()
    }
}

/// The state a body encodes; the text says what is wrong with one that does not parse.
pub fn decode(bytes: &[u8]) -> Result<State, String> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let state = deserializer
        .deserialize_map(BodyVisitor)
        .map_err(|err| err.to_string())?;
    deserializer.end().map_err(|err| err.to_string())?;
    Ok(state)
}

/// What a record's entries refer to: the device ids and the field names, by index.
struct Tables {
    ids: Vec<DeviceId>,
    names: Vec<String>,
}

impl Tables {
    fn stamp<E: de::Error>(&self, hlc: u64, at: usize) -> Result<Stamp, E> {
        match self.ids.get(at) {
            Some(device) => Ok(Stamp {
                hlc,
                device: device.clone(),
            }),
            None => Err(E::custom(format!("device index {at} is out of range"))),
        }
    }

    fn name<E: de::Error>(&self, at: usize) -> Result<String, E> {
        match self.names.get(at) {
            Some(name) => Ok(name.clone()),
            None => Err(E::custom(format!("name index {at} is out of range"))),
        }
    }
}

struct BodyVisitor;

impl<'de> Visitor<'de> for BodyVisitor {
    type Value = State;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a sync body: {\"devices\", \"names\", \"records\", \"ext\"}")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<State, A::Error> {
        let mut state = State::default();
        let mut tables = Tables {
            ids: Vec::new(),
            names: Vec::new(),
        };
        let mut seen = [false; 4];
        while let Some(key) = map.next_key::<String>()? {
            let at = ["devices", "names", "records", "ext"]
                .iter()
                .position(|known| *known == key);
            if let Some(at) = at {
                if std::mem::replace(&mut seen[at], true) {
                    return Err(de::Error::custom(format!("{key} is listed twice")));
                }
            }
            match at {
                Some(0) if seen[2] => return Err(de::Error::custom("records before the devices")),
                Some(0) => {
                    let entries: Vec<Vec<Value>> = map.next_value()?;
                    tables.ids = device_table(&entries, &mut state).map_err(de::Error::custom)?;
                }
                Some(1) if seen[2] => return Err(de::Error::custom("records before the names")),
                Some(1) => tables.names = map.next_value()?,
                Some(2) if !seen[0] => return Err(de::Error::custom("records before the devices")),
                Some(2) => state.records = map.next_value_seed(RecordsSeed(&tables))?,
                Some(_) => state.ext = map.next_value()?,
                None => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        if !seen[2] {
            return Err(de::Error::missing_field("records"));
        }
        Ok(state)
    }
}

/// The device ids by index, each entry with a name going into `state.devices`.
fn device_table(entries: &[Vec<Value>], state: &mut State) -> Result<Vec<DeviceId>, String> {
    let mut ids: Vec<DeviceId> = Vec::with_capacity(entries.len());
    for entry in entries {
        let (id, info) = device_entry(entry)?;
        if ids.contains(&id) {
            return Err(format!("device {id} is listed twice"));
        }
        if let Some(info) = info {
            state.devices.insert(id.clone(), info);
        }
        ids.push(id);
    }
    Ok(ids)
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

/// `records`: a list of records, each (kind, id) once.
struct RecordsSeed<'t>(&'t Tables);

impl<'de> DeserializeSeed<'de> for RecordsSeed<'_> {
    type Value = BTreeMap<RecordKey, Record>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for RecordsSeed<'_> {
    type Value = BTreeMap<RecordKey, Record>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a list of records")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut records = BTreeMap::new();
        while let Some((key, record)) = seq.next_element_seed(RecordSeed(self.0))? {
            if records.insert(key, record).is_some() {
                return Err(de::Error::custom("a record is listed twice"));
            }
        }
        Ok(records)
    }
}

/// One record: `[kind, id, fields, null | tombstone]`.
struct RecordSeed<'t>(&'t Tables);

impl<'de> DeserializeSeed<'de> for RecordSeed<'_> {
    type Value = (RecordKey, Record);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for RecordSeed<'_> {
    type Value = (RecordKey, Record);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a record: [kind, id, fields, null | tombstone]")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let missing = |at| de::Error::invalid_length(at, &self);
        let kind: String = seq.next_element()?.ok_or_else(|| missing(0))?;
        let id: String = seq.next_element()?.ok_or_else(|| missing(1))?;
        let fields = seq
            .next_element_seed(FieldsSeed(self.0))?
            .ok_or_else(|| missing(2))?;
        let tombstone = seq
            .next_element_seed(TombSeed(self.0))?
            .ok_or_else(|| missing(3))?;
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(de::Error::invalid_length(5, &self));
        }
        Ok(((kind, id), Record { fields, tombstone }))
    }
}

/// A record's fields: `[[name, value, hlc, device(, prev_hlc, prev_device)], ...]`, or the
/// earlier `{name: [value, hlc, device(, prev_hlc, prev_device)]}`.
struct FieldsSeed<'t>(&'t Tables);

impl<'de> DeserializeSeed<'de> for FieldsSeed<'_> {
    type Value = BTreeMap<String, Field>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for FieldsSeed<'_> {
    type Value = BTreeMap<String, Field>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a record's fields")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut fields = BTreeMap::new();
        while let Some((name, field)) = seq.next_element_seed(FieldSeed(self.0, None))? {
            insert_once(&mut fields, name, field)?;
        }
        Ok(fields)
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields = BTreeMap::new();
        while let Some(name) = map.next_key::<String>()? {
            let (name, field) = map.next_value_seed(FieldSeed(self.0, Some(name)))?;
            insert_once(&mut fields, name, field)?;
        }
        Ok(fields)
    }
}

fn insert_once<V, E: de::Error>(
    map: &mut BTreeMap<String, V>,
    name: String,
    value: V,
) -> Result<(), E> {
    use std::collections::btree_map::Entry;
    match map.entry(name) {
        Entry::Occupied(entry) => Err(E::custom(format!(
            "field {:?} is listed twice",
            entry.key()
        ))),
        Entry::Vacant(entry) => {
            entry.insert(value);
            Ok(())
        }
    }
}

/// One field entry; its name is the first item (an index into `names`) unless the earlier
/// form gave it as the object key.
struct FieldSeed<'t>(&'t Tables, Option<String>);

impl<'de> DeserializeSeed<'de> for FieldSeed<'_> {
    type Value = (String, Field);

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for FieldSeed<'_> {
    type Value = (String, Field);

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a field: [name, value, hlc, device(, prev_hlc, prev_device)]")
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Self::Value, A::Error> {
        let given = self.1.take();
        let missing = |at| de::Error::invalid_length(at, &self);
        let name = match given {
            Some(name) => name,
            None => self
                .0
                .name(seq.next_element()?.ok_or_else(|| missing(0))?)?,
        };
        let value = seq.next_element()?.ok_or_else(|| missing(1))?;
        let hlc = seq.next_element()?.ok_or_else(|| missing(2))?;
        let at = seq.next_element()?.ok_or_else(|| missing(3))?;
        let stamp = self.0.stamp(hlc, at)?;
        let prev = match seq.next_element::<u64>()? {
            None => None,
            Some(prev_hlc) => {
                let prev_at = seq.next_element()?.ok_or_else(|| missing(5))?;
                Some(self.0.stamp(prev_hlc, prev_at)?)
            }
        };
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(de::Error::invalid_length(7, &self));
        }
        Ok((name, Field { value, stamp, prev }))
    }
}

/// `null`, or a tombstone: `[hlc, device, [[name, hlc, device], ...] | {name: [hlc,
/// device]}]`.
struct TombSeed<'t>(&'t Tables);

impl<'de> DeserializeSeed<'de> for TombSeed<'_> {
    type Value = Option<Tombstone>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_option(self)
    }
}

impl<'de> Visitor<'de> for TombSeed<'_> {
    type Value = Option<Tombstone>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("null or a tombstone: [hlc, device, seen]")
    }

    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_seq(self)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let missing = |at| de::Error::invalid_length(at, &self);
        let hlc = seq.next_element()?.ok_or_else(|| missing(0))?;
        let at = seq.next_element()?.ok_or_else(|| missing(1))?;
        let stamp = self.0.stamp(hlc, at)?;
        let entries: SeenEntries = seq.next_element()?.ok_or_else(|| missing(2))?;
        if seq.next_element::<IgnoredAny>()?.is_some() {
            return Err(de::Error::invalid_length(4, &self));
        }
        let mut seen = BTreeMap::new();
        for (name, (hlc, at)) in entries.into_named(self.0)? {
            insert_once(&mut seen, name, self.0.stamp(hlc, at)?)?;
        }
        Ok(Some(Tombstone { stamp, seen }))
    }
}

/// What a deleter had seen, in either form (few entries: read through serde's own types).
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum SeenEntries {
    Indexed(Vec<(usize, u64, usize)>),
    Named(BTreeMap<String, (u64, usize)>),
}

/// A seen entry by name: (field, (hlc, device)).
type NamedSeen = (String, (u64, usize));

impl SeenEntries {
    fn into_named<E: de::Error>(self, tables: &Tables) -> Result<Vec<NamedSeen>, E> {
        match self {
            SeenEntries::Named(named) => Ok(named.into_iter().collect()),
            SeenEntries::Indexed(indexed) => indexed
                .into_iter()
                .map(|(name, hlc, at)| Ok((tables.name(name)?, (hlc, at))))
                .collect(),
        }
    }
}
