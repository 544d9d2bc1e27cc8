mod sub;

use crate::{b::B, error::E};

pub struct A(B, E);
