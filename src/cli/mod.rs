//! The `kestrel` command line.

pub mod tape;

pub fn main() -> i32 {
    0
}
