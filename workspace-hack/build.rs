//! Empty: cargo applies a crate's build-dependencies (the host half of the feature union) only
//! when it has a build script.
fn main() {}
