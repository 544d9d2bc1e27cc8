pub struct X(super::y::Y);
