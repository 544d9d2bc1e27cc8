//! [`Node`]: any YAML value, with the location of every key and value kept.
//!
//! A KubeKey manifest is read leniently (a field kk does not know is a warning, not an
//! error), so it is not deserialized into `deny_unknown_fields` types as kk's own manifest
//! is: the whole document becomes a tree of nodes that the mapping walks, naming the line of
//! whatever it cannot carry.

use std::fmt;

use bundle_spec::manifest::SpannedMap;
use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{Deserializer, MapAccess, SeqAccess, Visitor};
use serde_saphyr::Spanned;

/// One YAML value.
#[derive(Debug)]
pub(super) enum Node {
    /// `~`, `null` or nothing (`localPath:`).
    Null,
    /// A string, number or boolean, as text (`20.10.8`, `"2"`, `false`).
    Scalar(String),
    /// A sequence.
    Seq(Vec<Spanned<Node>>),
    /// A mapping, keys in document order.
    Map(SpannedMap<Spanned<Node>>),
}

impl Node {
    /// What the node is, for messages: `a mapping`, `a list`, …
    pub(super) fn kind(&self) -> &'static str {
        match self {
            Self::Null => "empty",
            Self::Scalar(_) => "a scalar",
            Self::Seq(_) => "a list",
            Self::Map(_) => "a mapping",
        }
    }
}

impl<'de> Deserialize<'de> for Node {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(NodeVisitor)
    }
}

struct NodeVisitor;

impl<'de> Visitor<'de> for NodeVisitor {
    type Value = Node;

    fn expecting(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("any YAML value")
    }

    fn visit_unit<E: serde::de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_none<E: serde::de::Error>(self) -> Result<Node, E> {
        Ok(Node::Null)
    }

    fn visit_some<D: Deserializer<'de>>(self, deserializer: D) -> Result<Node, D::Error> {
        Node::deserialize(deserializer)
    }

    fn visit_bool<E: serde::de::Error>(self, value: bool) -> Result<Node, E> {
        Ok(Node::Scalar(value.to_string()))
    }

    fn visit_i64<E: serde::de::Error>(self, value: i64) -> Result<Node, E> {
        Ok(Node::Scalar(value.to_string()))
    }

    fn visit_u64<E: serde::de::Error>(self, value: u64) -> Result<Node, E> {
        Ok(Node::Scalar(value.to_string()))
    }

    fn visit_f64<E: serde::de::Error>(self, value: f64) -> Result<Node, E> {
        Ok(Node::Scalar(value.to_string()))
    }

    fn visit_str<E: serde::de::Error>(self, value: &str) -> Result<Node, E> {
        Ok(Node::Scalar(value.to_owned()))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Node, A::Error> {
        Vec::deserialize(SeqAccessDeserializer::new(seq)).map(Node::Seq)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Node, A::Error> {
        SpannedMap::deserialize(MapAccessDeserializer::new(map)).map(Node::Map)
    }
}
