//! [`SpannedMap`]: a YAML mapping whose keys keep their location.

use std::fmt;
use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_saphyr::Spanned;

/// A string-keyed mapping whose keys keep their location, in document order.
///
/// serde's map types drop key locations, and `Spanned` cannot be a `BTreeMap` key (it has no
/// `Ord`); a registry host, an architecture or an inventory host name can be invalid, so we
/// keep the pairs ourselves. Repeated keys never reach us: serde-saphyr rejects them.
#[derive(Debug)]
pub struct SpannedMap<V>(pub Vec<(Spanned<String>, V)>);

impl<V> Default for SpannedMap<V> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<'de, V: Deserialize<'de>> Deserialize<'de> for SpannedMap<V> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(SpannedMapVisitor(PhantomData))
    }
}

struct SpannedMapVisitor<V>(PhantomData<V>);

impl<'de, V: Deserialize<'de>> Visitor<'de> for SpannedMapVisitor<V> {
    type Value = SpannedMap<V>;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("a mapping")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries = Vec::new();
        while let Some(key) = map.next_key()? {
            entries.push((key, map.next_value()?));
        }
        Ok(SpannedMap(entries))
    }
}
