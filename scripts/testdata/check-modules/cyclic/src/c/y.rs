use crate::c::x::{self, X};
pub struct Y;
