pub struct B;

pub fn c() -> crate::c::C {
    crate::c::C
}
