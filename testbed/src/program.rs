//! Which server binary the launcher runs: Debian's `redis-server` on `PATH` by default, or the
//! one `RLOCK_SERVER` names, for every suite at once (the Rust tests read it through this
//! library, the other suites through the `rlock-testbed` binary, which inherits it).
//!
//! `RLOCK_SERVER` is either
//! - a path (it contains a `/`): a server binary, or a directory holding one (`bin/*-server` or
//!   `*-server`);
//! - `NAME-VERSION` (`redis-6.2.16`, `valkey-8.0.1`): the server `make servers` (tools/servers.sh)
//!   put in the cache, `${RLOCK_CACHE:-$HOME/.cache/rlock}/servers/NAME-VERSION/bin/`;
//! - empty, `default` or `redis-server`: `redis-server` on `PATH`.
//!
//! Sentinels run as `<server> <conf> --sentinel`, which every Redis and Valkey server binary
//! accepts, so no separate sentinel binary is needed; `redis-cli` (Debian's) creates clusters.

use std::path::{Path, PathBuf};

use crate::{Error, Result};

/// The variable naming the server binary.
pub const ENV: &str = "RLOCK_SERVER";
/// The default program, looked up on `PATH`.
pub const DEFAULT: &str = "redis-server";

/// `${RLOCK_CACHE:-$HOME/.cache/rlock}/servers`.
pub fn cache_dir() -> PathBuf {
    let base = match std::env::var_os("RLOCK_CACHE") {
        Some(d) if !d.is_empty() => PathBuf::from(d),
        _ => PathBuf::from(std::env::var_os("HOME").unwrap_or_else(|| "/tmp".into())).join(".cache/rlock"),
    };
    base.join("servers")
}

/// The server binary in `dir` or `dir/bin`: the one file named `*-server` (`redis-server`,
/// `valkey-server`); `valkey-server` wins when both are there.
fn binary_in(dir: &Path) -> Option<PathBuf> {
    for d in [dir.join("bin"), dir.to_path_buf()] {
        let Ok(entries) = std::fs::read_dir(&d) else { continue };
        let mut found: Vec<PathBuf> = entries
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| {
                p.is_file() && p.file_name().is_some_and(|n| n.to_string_lossy().ends_with("-server"))
            })
            .collect();
        found.sort();
        if let Some(p) = found.iter().find(|p| p.ends_with("valkey-server")).or(found.first()) {
            return Some(p.clone());
        }
    }
    None
}

/// The program `spec` names (see the module documentation); `cache` is where `NAME-VERSION`
/// servers live.
pub fn resolve_in(spec: &str, cache: &Path) -> Result<PathBuf> {
    let spec = spec.trim();
    if spec.is_empty() || spec == "default" || spec == DEFAULT {
        return Ok(PathBuf::from(DEFAULT));
    }
    if spec.contains('/') {
        let p = PathBuf::from(spec);
        if p.is_dir() {
            return binary_in(&p)
                .ok_or_else(|| Error::new(format!("{ENV}={spec}: no *-server binary in that directory")));
        }
        if p.is_file() {
            return Ok(p);
        }
        return Err(Error::new(format!("{ENV}={spec}: no such file")));
    }
    let dir = cache.join(spec);
    binary_in(&dir).ok_or_else(|| {
        Error::new(format!(
            "{ENV}={spec}: no server in {} (run `make servers`; `tools/servers.sh --list` names them)",
            dir.display()
        ))
    })
}

/// The program to run for a data node or sentinel: [`ENV`] resolved, or [`DEFAULT`].
pub fn from_env() -> Result<PathBuf> {
    resolve_in(&std::env::var(ENV).unwrap_or_default(), &cache_dir())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_names_paths_and_the_default() {
        let cache = tempfile::tempdir().unwrap();
        let bin = cache.path().join("valkey-8.0.1/bin");
        std::fs::create_dir_all(&bin).unwrap();
        for f in ["valkey-cli", "valkey-sentinel", "valkey-server"] {
            std::fs::write(bin.join(f), "").unwrap();
        }
        let c = cache.path();
        assert_eq!(resolve_in("", c).unwrap(), PathBuf::from("redis-server"));
        assert_eq!(resolve_in("default", c).unwrap(), PathBuf::from("redis-server"));
        assert_eq!(resolve_in("valkey-8.0.1", c).unwrap(), bin.join("valkey-server"));
        let dir = c.join("valkey-8.0.1").to_string_lossy().into_owned();
        assert_eq!(resolve_in(&dir, c).unwrap(), bin.join("valkey-server"));
        let file = bin.join("valkey-server").to_string_lossy().into_owned();
        assert_eq!(resolve_in(&file, c).unwrap(), bin.join("valkey-server"));
        let missing = resolve_in("redis-9.9.9", c).unwrap_err();
        assert!(missing.message().contains("make servers"), "{missing}");
        assert!(resolve_in("/nonexistent/redis-server", c).is_err());
    }
}
