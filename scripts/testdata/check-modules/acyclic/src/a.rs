use crate::b::B;

pub struct A(B);

#[cfg(test)]
#[path = "a_tests.rs"]
mod tests;
