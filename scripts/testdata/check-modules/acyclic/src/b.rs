// use crate::a::A;   (a comment)
/* crate::a::A /* nested */ crate::a::A */
pub struct B;

const QUOTE: char = '"';
const TEXT: &str = "crate::a::A";
const RAW: &str = r#"crate::a::A "quoted" "#;

fn f<'a>(x: &'a str) -> &'a str {
    x
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::b::B as Same;
}

#[cfg(test)]
mod more_tests {
    // A test module may use anything to build its fixtures.
    use crate::a::A;
}
