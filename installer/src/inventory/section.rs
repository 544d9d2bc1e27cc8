//! Mappings that read the keys kk knows and keep every other key.
//!
//! KubeKey files carry many settings kk does not read (image tags, kubelet flags, storage
//! classes…), so `deny_unknown_fields` is not an option; but serde's default of dropping them
//! silently is not either: a misspelt `kube_version` would fall back to a default unnoticed.
//! [`section!`] declares a struct whose `Deserialize` reads the known keys into typed fields and
//! every other key, with its location, into [`Extra`]; validation then keeps those values and
//! warns about the ones close to a known key.
//!
//! `#[serde(flatten)]` would collect the rest too, but it buffers the mapping and loses every
//! location inside it, which the errors need.

use serde_json::Value;
use serde_saphyr::Spanned;

/// The keys of a mapping that kk does not read, in document order, each with its location.
#[derive(Debug, Default)]
pub(super) struct Extra(pub(super) Vec<(Spanned<String>, Value)>);

/// Declares a struct read from a YAML mapping: each `"key" => field: Type` is deserialized into
/// `field` (types must implement `Default`: `Option`s, maps), any other key goes to
/// `extra`. `FIELDS` lists the keys read, for "did you mean" warnings.
macro_rules! section {
    (
        $(#[$meta:meta])*
        struct $name:ident {
            $($key:literal => $field:ident: $type:ty,)*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Default)]
        pub(super) struct $name {
            $(pub(super) $field: $type,)*
            /// Every other key.
            pub(super) extra: $crate::inventory::section::Extra,
        }

        impl $name {
            /// The keys read into fields.
            pub(super) const FIELDS: &'static [&'static str] = &[$($key),*];
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct SectionVisitor;

                impl<'de> serde::de::Visitor<'de> for SectionVisitor {
                    type Value = $name;

                    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                        formatter.write_str("a mapping")
                    }

                    fn visit_map<A: serde::de::MapAccess<'de>>(
                        self,
                        mut map: A,
                    ) -> Result<Self::Value, A::Error> {
                        let mut section = $name::default();
                        while let Some(key) = map.next_key::<serde_saphyr::Spanned<String>>()? {
                            match key.value.as_str() {
                                $($key => section.$field = map.next_value()?,)*
                                _ => {
                                    let value = map.next_value()?;
                                    section.extra.0.push((key, value));
                                }
                            }
                        }
                        Ok(section)
                    }
                }

                deserializer.deserialize_map(SectionVisitor)
            }
        }
    };
}

pub(super) use section;
