//! [`Reader`]: walks the node tree of a KubeKey manifest, collecting warnings with their
//! locations.

use std::sync::Arc;

use bundle_spec::manifest::SourceLocation;
use serde_saphyr::Spanned;

use super::node::Node;
use super::{KubeKeyError, Warning};

/// A mapping's key and value.
pub(super) type Entry = (Spanned<String>, Spanned<Node>);

/// Reads values out of the node tree and records what it cannot carry.
pub(super) struct Reader {
    file: Arc<str>,
    pub(super) warnings: Vec<Warning>,
}

/// The known fields of one mapping, by name.
pub(super) struct Fields<'n>(Vec<(&'n str, &'n Spanned<Node>)>);

impl<'n> Fields<'n> {
    /// The value of field `name`, unless absent.
    pub(super) fn get(&self, name: &str) -> Option<&'n Spanned<Node>> {
        self.0
            .iter()
            .find(|(field, _)| *field == name)
            .map(|(_, node)| *node)
    }
}

impl Reader {
    pub(super) fn new(file: &Arc<str>) -> Self {
        Self {
            file: Arc::clone(file),
            warnings: Vec::new(),
        }
    }

    pub(super) fn at<T>(&self, node: &Spanned<T>) -> SourceLocation {
        SourceLocation::of(&self.file, node)
    }

    /// Records that what `node` asks for is not carried, and why.
    pub(super) fn warn<T>(&mut self, node: &Spanned<T>, message: String) {
        self.warnings.push(Warning {
            at: self.at(node),
            message,
        });
    }

    /// Records that what is at `at` is not carried, and why.
    pub(super) fn warn_at(&mut self, at: SourceLocation, message: String) {
        self.warnings.push(Warning { at, message });
    }

    /// The fields of mapping `node` (at `path`) that are in `known`; every other key is
    /// warned about, so that nothing is dropped silently. An empty value is an empty mapping.
    pub(super) fn fields<'n>(
        &mut self,
        node: &'n Spanned<Node>,
        path: &str,
        known: &[&str],
    ) -> Result<Fields<'n>, KubeKeyError> {
        let entries = match &node.value {
            Node::Map(map) => &map.0,
            Node::Null => return Ok(Fields(Vec::new())),
            other => return Err(self.shape(node, path, other, "a mapping")),
        };
        let mut fields = Vec::new();
        for (key, value) in entries {
            if known.contains(&key.value.as_str()) {
                fields.push((key.value.as_str(), value));
            } else {
                let field = if path.is_empty() {
                    key.value.clone()
                } else {
                    format!("{path}.{}", key.value)
                };
                self.warn(
                    key,
                    format!("`{field}` is not a field kk reads from KubeKey's Manifest; ignored"),
                );
            }
        }
        Ok(Fields(fields))
    }

    /// The text of scalar `node` (at `path`); `None` when it is absent or empty, as KubeKey
    /// writes a component it does not include (`version:`).
    pub(super) fn text<'n>(
        &self,
        node: Option<&'n Spanned<Node>>,
        path: &str,
    ) -> Result<Option<&'n str>, KubeKeyError> {
        match node.map(|node| (node, &node.value)) {
            None | Some((_, Node::Null)) => Ok(None),
            Some((_, Node::Scalar(text))) if text.trim().is_empty() => Ok(None),
            Some((_, Node::Scalar(text))) => Ok(Some(text.trim())),
            Some((node, other)) => Err(self.shape(node, path, other, "a scalar")),
        }
    }

    /// The items of list `node` (at `path`); empty when it is absent or empty.
    pub(super) fn list<'n>(
        &self,
        node: Option<&'n Spanned<Node>>,
        path: &str,
    ) -> Result<&'n [Spanned<Node>], KubeKeyError> {
        match node.map(|node| (node, &node.value)) {
            None | Some((_, Node::Null)) => Ok(&[]),
            Some((_, Node::Seq(items))) => Ok(items),
            Some((node, other)) => Err(self.shape(node, path, other, "a list")),
        }
    }

    /// The entries of a mapping whose keys are names (registry hosts); empty when absent.
    pub(super) fn entries<'n>(
        &self,
        node: Option<&'n Spanned<Node>>,
        path: &str,
    ) -> Result<&'n [Entry], KubeKeyError> {
        match node.map(|node| (node, &node.value)) {
            None | Some((_, Node::Null)) => Ok(&[]),
            Some((_, Node::Map(map))) => Ok(&map.0),
            Some((node, other)) => Err(self.shape(node, path, other, "a mapping")),
        }
    }

    fn shape(
        &self,
        node: &Spanned<Node>,
        path: &str,
        found: &Node,
        expected: &'static str,
    ) -> KubeKeyError {
        KubeKeyError::Shape {
            at: self.at(node),
            field: path.to_owned(),
            found: found.kind(),
            expected,
        }
    }
}
