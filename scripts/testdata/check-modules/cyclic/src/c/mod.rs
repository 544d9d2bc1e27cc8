mod x;
mod y;

pub struct C;

fn a(_: &crate::a::A) {}
