use crate::b::B;
