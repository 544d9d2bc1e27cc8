//! Fixture of check-modules.py: imports that look like cycles but are not.
mod a;
mod b;
