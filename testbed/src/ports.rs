//! Ports for private servers, chosen outside the kernel's ephemeral range.
//!
//! "bind port 0" hands out a port inside the ephemeral range (32768-60999 by default), where the
//! kernel also takes the local ports of outgoing connections: between choosing such a port and
//! redis-server binding it, any connection on the machine may take it. So the launcher reads
//! `/proc/sys/net/ipv4/ip_local_port_range` and chooses at random among the ports from 10000 up
//! to just below its low end (or above its high end when that range is too small), checks each
//! is free by binding it, and never uses Redis's default ports. Ports handed out stay reserved
//! until their [`Reserved`] guard drops, so parallel tests never share one: in this process by a
//! set, and across processes (test binaries run side by side, issue 44) by an exclusive `flock`
//! on one file per port in `$TMPDIR/rlock-testbed-ports/`. Without the file lock, two binaries
//! could both find a port free before either bound it, and one got "Address already in use".

use std::collections::hash_map::RandomState;
use std::collections::BTreeSet;
use std::fs::File;
use std::hash::{BuildHasher, Hasher};
use std::net::TcpListener;
use std::ops::RangeInclusive;
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use crate::{Error, Result, HOST};

/// The lowest port the launcher uses.
pub const LOWEST: u16 = 10_000;
/// The Linux default when the range cannot be read.
pub const DEFAULT_EPHEMERAL: (u16, u16) = (32_768, 60_999);
/// Redis's default ports (server, cluster bus, sentinel): never used, a real server may be there.
pub const AVOID: [u16; 3] = [6379, 16_379, 26_379];
/// A side of the ephemeral range with fewer ports than this is too small to choose from.
pub const MIN_RANGE: u32 = 1000;
const RANGE_FILE: &str = "/proc/sys/net/ipv4/ip_local_port_range";

/// Parses the contents of `ip_local_port_range` ("32768\t60999\n").
pub fn parse_ephemeral(text: &str) -> Option<(u16, u16)> {
    let mut it = text.split_whitespace().map(|w| w.parse::<u16>());
    match (it.next(), it.next(), it.next()) {
        (Some(Ok(low)), Some(Ok(high)), None) if low <= high => Some((low, high)),
        _ => None,
    }
}

/// This machine's ephemeral range, or [`DEFAULT_EPHEMERAL`].
pub fn ephemeral_range() -> (u16, u16) {
    std::fs::read_to_string(RANGE_FILE).ok().and_then(|t| parse_ephemeral(&t)).unwrap_or(DEFAULT_EPHEMERAL)
}

/// Where to choose ports given the ephemeral range `(low, high)`: `LOWEST..low` when it has at
/// least [`MIN_RANGE`] ports, else `high+1..=65535` when that has, else the larger of the two
/// (and when the ephemeral range covers everything, all of `LOWEST..=65535`).
pub fn safe_range((low, high): (u16, u16)) -> RangeInclusive<u16> {
    let below = u32::from(low).saturating_sub(u32::from(LOWEST));
    let above = 65_535 - u32::from(high.max(LOWEST - 1));
    let below_range = LOWEST..=low.saturating_sub(1);
    let above_range = high.max(LOWEST - 1).saturating_add(1)..=65_535;
    if below >= MIN_RANGE {
        below_range
    } else if above >= MIN_RANGE {
        above_range
    } else if below > 0 && below >= above {
        below_range
    } else if above > 0 {
        above_range
    } else {
        LOWEST..=65_535
    }
}

/// Whether `port` may be handed out at all (not one of [`AVOID`], not below [`LOWEST`]).
pub fn allowed(port: u16) -> bool {
    port >= LOWEST && !AVOID.contains(&port)
}

/// A random number from the standard library's per-process random hash keys.
fn random() -> u64 {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut h = RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    h.finish()
}

/// A port of `range` chosen with `rand`.
pub fn pick(range: &RangeInclusive<u16>, rand: u64) -> u16 {
    let (start, end) = (u64::from(*range.start()), u64::from(*range.end()));
    if end < start {
        return *range.start();
    }
    // The value is at most `end`, a u16.
    u16::try_from(start + rand % (end - start + 1)).unwrap_or(*range.start())
}

/// Whether nothing listens on (or holds) 127.0.0.1:`port` right now.
pub fn is_free(port: u16) -> bool {
    TcpListener::bind((HOST, port)).is_ok()
}

fn taken() -> std::sync::MutexGuard<'static, BTreeSet<u16>> {
    static TAKEN: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());
    // A panic while holding the lock cannot leave the set inconsistent: take it anyway.
    TAKEN.lock().unwrap_or_else(|e| e.into_inner())
}

/// What trying to claim a port across processes found.
#[derive(Debug)]
pub enum Claim {
    /// This process holds the port's lock file until the file is dropped.
    Held(File),
    /// Another process (or another guard of this one) holds it.
    Taken,
    /// No lock file could be opened (an unwritable temporary directory): only the in-process
    /// set and the bind check protect the port.
    Unavailable,
}

/// The directory of the per-port lock files, shared by every process of the machine. The files
/// stay (empty): deleting one while another process opens it would let two processes lock two
/// different files of the same name.
pub fn lock_dir() -> PathBuf {
    std::env::temp_dir().join("rlock-testbed-ports")
}

/// The lock file of `port` in [`lock_dir`].
pub fn lock_path(port: u16) -> PathBuf {
    lock_dir().join(port.to_string())
}

/// Claims `port` across processes: an exclusive, non-blocking `flock` on its lock file. The
/// kernel drops the lock when the file is closed or the process dies, so nothing is left over.
pub fn claim(port: u16) -> Claim {
    let dir = lock_dir();
    if std::fs::create_dir_all(&dir).is_err() {
        return Claim::Unavailable;
    }
    let Ok(file) = File::options().create(true).truncate(false).write(true).open(lock_path(port)) else {
        return Claim::Unavailable;
    };
    // SAFETY: flock on a file descriptor this function owns (it lives as long as `file`).
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
        Claim::Held(file)
    } else {
        Claim::Taken
    }
}

/// Claims `port` for this process when no other holds it and nothing listens on it.
fn claim_free(port: u16, set: &BTreeSet<u16>) -> Option<Option<File>> {
    if !allowed(port) || set.contains(&port) {
        return None;
    }
    let held = match claim(port) {
        Claim::Held(f) => Some(f),
        Claim::Taken => return None,
        Claim::Unavailable => None,
    };
    is_free(port).then_some(held)
}

/// Ports handed out to this process; released when dropped.
#[derive(Debug)]
pub struct Reserved {
    ports: Vec<u16>,
    /// The ports' lock files (see [`claim`]): closing them releases the ports to other processes.
    locks: Vec<File>,
}

impl Reserved {
    /// The reserved ports, in the order asked for.
    pub fn ports(&self) -> &[u16] {
        &self.ports
    }
}

impl Drop for Reserved {
    fn drop(&mut self) {
        let mut set = taken();
        for p in &self.ports {
            set.remove(p);
        }
    }
}

/// Reserves `n` distinct free ports outside the ephemeral range.
pub fn reserve(n: usize) -> Result<Reserved> {
    let range = safe_range(ephemeral_range());
    let mut ports = Vec::with_capacity(n);
    let mut locks = Vec::with_capacity(n);
    let mut set = taken();
    for _ in 0..n {
        let mut found = None;
        for _ in 0..2000 {
            let p = pick(&range, random());
            if ports.contains(&p) {
                continue;
            }
            if let Some(lock) = claim_free(p, &set) {
                found = Some((p, lock));
                break;
            }
        }
        match found {
            Some((p, lock)) => {
                ports.push(p);
                locks.extend(lock);
            }
            None => {
                return Err(Error::new(format!(
                    "no free port found in {}-{} after 2000 tries",
                    range.start(),
                    range.end()
                )))
            }
        }
    }
    set.extend(ports.iter().copied());
    Ok(Reserved { ports, locks })
}

/// How far above a cluster node's port its bus port is by default (every Redis and Valkey).
pub const BUS_OFFSET: u32 = 10_000;

/// Ports for one server: its port, then (with `bus`) its cluster bus port, then `extra` more.
/// The bus port is the port + [`BUS_OFFSET`], both free and in the safe range, which works with
/// every server version (Redis 6.2 has no `--cluster-port`); only when the safe range is too
/// narrow for such a pair is it any free port (the node then needs `--cluster-port`).
pub fn reserve_node(bus: bool, extra: usize) -> Result<Reserved> {
    let range = safe_range(ephemeral_range());
    let (start, end) = (u32::from(*range.start()), u32::from(*range.end()));
    if !bus || end < start + BUS_OFFSET {
        return reserve(1 + usize::from(bus) + extra);
    }
    let low = u16::try_from(start).unwrap_or(LOWEST)..=u16::try_from(end - BUS_OFFSET).unwrap_or(LOWEST);
    let mut pair = None;
    let mut locks = Vec::with_capacity(2);
    {
        let mut set = taken();
        for _ in 0..2000 {
            let p = pick(&low, random());
            let Ok(b) = u16::try_from(u32::from(p) + BUS_OFFSET) else { continue };
            let Some(port_lock) = claim_free(p, &set) else { continue };
            let Some(bus_lock) = claim_free(b, &set) else { continue };
            locks.extend(port_lock.into_iter().chain(bus_lock));
            pair = Some((p, b));
            set.extend([p, b]);
            break;
        }
    }
    let Some((p, b)) = pair else {
        return Err(Error::new(format!(
            "no free port pair (port, port + {BUS_OFFSET}) found in {start}-{end} after 2000 tries"
        )));
    };
    // The pair's guard releases it if the extra ports cannot be had; else one guard takes all.
    let mut pair = Reserved { ports: vec![p, b], locks };
    let mut more = reserve(extra)?;
    let mut ports = std::mem::take(&mut pair.ports);
    let mut locks = std::mem::take(&mut pair.locks);
    ports.append(&mut more.ports);
    locks.append(&mut more.locks);
    Ok(Reserved { ports, locks })
}

/// A port that was free a moment ago, outside the ephemeral range (for "nothing listens here"
/// addresses). It is not kept reserved.
pub fn free_port() -> Result<u16> {
    let r = reserve(1)?;
    r.ports.first().copied().ok_or_else(|| Error::new("no port reserved"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_proc_file() {
        assert_eq!(parse_ephemeral("32768\t60999\n"), Some((32768, 60999)));
        assert_eq!(parse_ephemeral("  1024 65535 "), Some((1024, 65535)));
        assert_eq!(parse_ephemeral("60999 32768"), None);
        assert_eq!(parse_ephemeral("32768"), None);
        assert_eq!(parse_ephemeral("a b"), None);
        assert_eq!(parse_ephemeral("1 2 3"), None);
        assert_eq!(parse_ephemeral(""), None);
        assert_eq!(parse_ephemeral("32768 70000"), None);
    }

    #[test]
    fn the_safe_range_lies_outside_the_ephemeral_range() {
        assert_eq!(safe_range((32768, 60999)), 10_000..=32_767);
        // Too few ports below: above the high end.
        assert_eq!(safe_range((10_500, 60_999)), 61_000..=65_535);
        assert_eq!(safe_range((1024, 50_000)), 50_001..=65_535);
        // Too few on both sides: the larger.
        assert_eq!(safe_range((10_600, 65_000)), 10_000..=10_599);
        assert_eq!(safe_range((10_100, 65_000)), 65_001..=65_535);
        // Nothing outside: everything from LOWEST.
        assert_eq!(safe_range((1024, 65_535)), 10_000..=65_535);
        for eph in [(32768, 60999), (10_500, 60_999), (1024, 50_000), (10_600, 65_000), (40_000, 40_100)] {
            let r = safe_range(eph);
            for rand in [0, 1, 7, 12_345, u64::MAX, u64::MAX / 3] {
                let p = pick(&r, rand);
                assert!(r.contains(&p));
                assert!(p >= LOWEST);
                assert!(p < eph.0 || p > eph.1, "{p} in {eph:?}");
            }
        }
    }

    #[test]
    fn pick_covers_the_range_ends() {
        let r = 10_000..=10_002;
        assert_eq!(pick(&r, 0), 10_000);
        assert_eq!(pick(&r, 2), 10_002);
        assert_eq!(pick(&r, 3), 10_000);
        assert_eq!(pick(&(5..=5), 99), 5);
    }

    #[test]
    fn redis_default_ports_are_never_allowed() {
        for p in AVOID {
            assert!(!allowed(p));
        }
        assert!(!allowed(80));
        assert!(allowed(10_000));
    }

    #[test]
    fn reserved_ports_are_free_distinct_outside_the_range_and_released_on_drop() {
        let eph = ephemeral_range();
        let r = reserve(20).unwrap();
        let ports = r.ports().to_vec();
        assert_eq!(ports.len(), 20);
        let distinct: BTreeSet<u16> = ports.iter().copied().collect();
        assert_eq!(distinct.len(), 20);
        for p in &ports {
            assert!(allowed(*p));
            assert!(*p < eph.0 || *p > eph.1, "{p} inside {eph:?}");
            assert!(is_free(*p));
            assert!(taken().contains(p));
        }
        drop(r);
        let set = taken();
        assert!(ports.iter().all(|p| !set.contains(p)));
    }

    #[test]
    fn a_node_with_a_bus_gets_its_port_plus_ten_thousand() {
        let r = reserve_node(true, 1).unwrap();
        let p = r.ports().to_vec();
        assert_eq!(p.len(), 3);
        assert_eq!(u32::from(p[1]), u32::from(p[0]) + BUS_OFFSET);
        assert!(p.iter().all(|x| taken().contains(x)));
        drop(r);
        let set = taken();
        assert!(p.iter().all(|x| !set.contains(x)));
    }

    #[test]
    fn a_port_claimed_by_another_open_file_is_not_handed_out() {
        // flock conflicts between open files, in one process as across processes: what a test
        // binary beside this one holds is refused here.
        let r = reserve(1).unwrap();
        let p = r.ports()[0];
        assert_eq!(r.locks.len(), 1, "a writable temporary directory has the lock files");
        assert!(matches!(claim(p), Claim::Taken), "a reserved port's lock is held");
        assert!(claim_free(p, &BTreeSet::new()).is_none(), "another process's port is not free here");
        drop(r);
        assert!(matches!(claim(p), Claim::Held(_)), "released on drop");
    }

    #[test]
    fn a_bound_port_is_not_free() {
        let l = TcpListener::bind((HOST, 0)).unwrap();
        let port = l.local_addr().unwrap().port();
        assert!(!is_free(port));
    }
}
