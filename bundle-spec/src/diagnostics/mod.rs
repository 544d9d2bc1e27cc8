//! What every kk document reader needs to report a problem well: where it is
//! ([`SourceLocation`], located and classified YAML errors), what the user probably meant
//! ([`suggest`]) and the value at fault, cut short when it is long ([`cut()`]).
//!
//! A leaf: it imports nothing else of this crate, so the manifest, the platform parser and the
//! installer's inventory all use it without depending on each other.

mod cut;
mod location;
pub mod suggest;

pub use cut::{Cut, SHOWN_CHARS, cut};
pub use location::{SourceLocation, YamlError, YamlProblem, parse_yaml};
