pub enum E {
    A(Box<crate::a::A>),
}
