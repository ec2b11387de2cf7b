//! The rlock workspace's feature unification: no code, only the dependencies of its
//! Cargo.toml, which tools/unify-check.py writes (see there and CONTRIBUTING).
