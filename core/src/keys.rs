//! Redisson's key and channel names (wire-format.md, "Notation").

/// Most bytes a lock name may have. Redis allows 512 MB keys; a lock name that long is a bug.
pub const MAX_NAME_LEN: usize = 64 * 1024;

/// `prefixed(p, N)`: `p:N` when N already has a `{` hash tag, else `p:{N}`.
pub(crate) fn prefixed(prefix: &str, name: &str) -> String {
    if name.contains('{') {
        format!("{prefix}:{name}")
    } else {
        format!("{prefix}:{{{name}}}")
    }
}

/// The unlock channel of a reentrant lock.
pub(crate) fn lock_channel(name: &str) -> String {
    prefixed("redisson_lock__channel", name)
}

/// The latch key prefix of a release; the request id is appended after a `:`.
pub(crate) fn unlock_latch_prefix(name: &str) -> String {
    let mut p = prefixed("redisson_unlock_latch", name);
    p.push(':');
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_redisson() {
        assert_eq!(lock_channel("orders"), "redisson_lock__channel:{orders}");
        assert_eq!(lock_channel("a{b}c"), "redisson_lock__channel:a{b}c");
        assert_eq!(unlock_latch_prefix("orders"), "redisson_unlock_latch:{orders}:");
    }
}
