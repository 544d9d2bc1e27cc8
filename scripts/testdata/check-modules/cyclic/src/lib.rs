//! Fixture of check-modules.py: three cycles (a → b → c → a, a ↔ error, c::x ↔ c::y).
mod a;
mod b;
mod c;
mod error;

pub use error::E;
