// A child using its parent is part of it: no cycle.
use super::A;
use crate::a::A as Same;
