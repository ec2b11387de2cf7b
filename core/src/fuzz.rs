//! Entry points for fuzzing (issue 45): each takes arbitrary bytes, drives the parsers a user or
//! a server reaches, and panics only when one of them breaks a rule stated here (a wrong kind of
//! error, a password in a message, keys of two hash tags, a kind that does not read back). The
//! `fuzz/` crate's cargo-fuzz targets call them; `core/tests/fuzz_corpus.rs` replays the kept
//! corpus (`fuzz/corpus/<target>/`) through them in every `cargo test`. None of them talks to
//! Redis. Not part of the Rust user API, and not covered by semver.

use redis::Value;

use crate::describe::{self, Kind};
use crate::error::ErrorKind;
use crate::keys;
use crate::options::{duration_arg, ClientOptions, OptionValue, Surface, OPTIONS};
use crate::records::HolderRecord;
use crate::url;

/// A target: arbitrary bytes in, a panic when a rule is broken.
pub type Target = fn(&[u8]);

/// Every target by name: the directory of its corpus and its `fuzz/fuzz_targets/<name>.rs`.
pub const TARGETS: &[(&str, Target)] =
    &[("url", url), ("options", options), ("names", names), ("replies", replies)];

/// Replays every input kept under `corpus/<name>/` through its target of `targets`, in name
/// order: the corpus tests of core and of the command both run theirs through it. `Err` names
/// the first input that breaks its target's rule (the panic's own message is printed above it),
/// a target without a corpus directory or with an empty one, or an input that cannot be read;
/// `Ok` counts the inputs replayed.
pub fn replay(corpus: &std::path::Path, targets: &[(&str, Target)]) -> Result<usize, String> {
    let mut replayed = 0;
    for (name, target) in targets {
        let dir = corpus.join(name);
        let mut inputs = std::fs::read_dir(&dir)
            .and_then(|entries| entries.map(|e| e.map(|e| e.path())).collect::<std::io::Result<Vec<_>>>())
            .map_err(|e| format!("{}: {e}", dir.display()))?;
        if inputs.is_empty() {
            return Err(format!("{}: no inputs", dir.display()));
        }
        inputs.sort();
        for path in inputs {
            let data = std::fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            if std::panic::catch_unwind(|| target(&data)).is_err() {
                return Err(format!("{name}: {} breaks a rule (the panic above says which)", path.display()));
            }
            replayed += 1;
        }
    }
    Ok(replayed)
}

/// A URL (as text) through the parser every surface's connect uses. An error is
/// `InvalidArgument`, and holds no password; the label of a parsed URL (what log lines name a
/// server by) is the label of the same URL without its credentials.
pub fn url(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let options = ClientOptions::default();
    let plain = without_userinfo(text);
    let secret = password(text, plain.as_deref().unwrap_or(text));
    let leaks = |s: &str| secret.is_some_and(|p| s.contains(p));
    match url::parse(text, &options) {
        Ok(target) => {
            let label = target.label();
            match plain.as_deref().map(|p| url::parse(p, &options)) {
                Some(Ok(without)) => {
                    assert_eq!(label, without.label(), "{text:?}: the label changes with credentials")
                }
                _ => assert!(!leaks(&label), "the label {label:?} of {text:?} holds its password"),
            }
        }
        Err(e) => {
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{text:?}: {e}");
            assert!(!leaks(e.message()), "the error {e} for {text:?} holds its password");
        }
    }
}

/// `url` split where its credentials are: the scheme, the user info (before the last `@` of the
/// part that ends at the path, query or fragment) and what follows the `@`. Also for the
/// command's targets (`rlock_cli::fuzz`), which find a password in `--url` the same way.
pub fn credentials(url: &str) -> Option<(&str, &str, &str)> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    let at = authority.rfind('@')?;
    Some((scheme, &rest[..at], &rest[at + 1..]))
}

/// `url` without its `user:password@`, when it has one.
fn without_userinfo(url: &str) -> Option<String> {
    credentials(url).map(|(scheme, _, after)| format!("{scheme}://{after}"))
}

/// The password of `url` (after the user's `:` in its credentials) when telling it apart is
/// possible: at least 4 bytes, and found neither in `plain` (the URL without it) nor in the
/// parser's fixed texts and default ports. Else `None`: any text could hold a short or common
/// password without leaking it.
fn password<'a>(url: &'a str, plain: &str) -> Option<&'a str> {
    let (_, pass) = credentials(url)?.1.split_once(':')?;
    let fixed = "expected redis://[user:pass@]host:port/db, rediss://..., redis+unix:///path, \
                 redis+cluster://host1:port1,host2:port2/ or redis+sentinel://host1:port1,host2:port2/service_name[/db] \
                 cluster sentinel service via :6379 :26379";
    (pass.len() >= 4 && url.matches(pass).count() == 1 && !plain.contains(pass) && !fixed.contains(pass))
        .then_some(pass)
}

/// A run of option settings, each read from the bytes: a surface, an option (one of
/// [`OPTIONS`] in that surface's spelling, or a name from the bytes), a value. A refused
/// setting is `InvalidArgument` and leaves the options as they were; `validate` answers
/// `InvalidArgument` or accepts. A duration argument read from the same bytes is refused with
/// `InvalidArgument`, or accepted only when finite and not negative.
pub fn options(data: &[u8]) {
    let mut options = ClientOptions::default();
    let mut bytes = data;
    while let [surface, which, kind, rest @ ..] = bytes {
        let surface = [Surface::Rust, Surface::C, Surface::Python, Surface::Node][usize::from(*surface % 4)];
        let (text, rest) = take_text(rest);
        let name = match OPTIONS.get(usize::from(*which) % (OPTIONS.len() + 1)) {
            Some(spec) => spec.spelling(surface),
            None => text.to_owned(),
        };
        let (number, rest) = take_8(rest);
        let value = match kind % 5 {
            0 => OptionValue::Unset,
            1 => OptionValue::Bool((number[0] & 1) == 1),
            2 => OptionValue::Int(i64::from_le_bytes(number)),
            3 => OptionValue::Float(f64::from_le_bytes(number)),
            _ => OptionValue::Str(text),
        };
        let before = format!("{options:?}");
        if let Err(e) = options.set(surface, &name, value) {
            assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{name} = {value:?}: {e}");
            assert_eq!(format!("{options:?}"), before, "a refused {name} = {value:?} changed the options");
        }
        let seconds = f64::from_le_bytes(number);
        match duration_arg(surface, "wait", seconds) {
            Ok(_) => assert!(seconds.is_finite() && seconds >= 0.0, "{seconds} accepted as a duration"),
            Err(e) => assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{seconds}: {e}"),
        }
        bytes = rest;
    }
    if let Err(e) = options.validate() {
        assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{options:?}: {e}");
    }
}

/// Text from the front of `bytes`: a length byte, then that many bytes (lossy UTF-8 is not
/// needed: invalid text is cut where it stops being valid).
fn take_text(bytes: &[u8]) -> (&str, &[u8]) {
    let Some((len, rest)) = bytes.split_first() else { return ("", bytes) };
    let (text, rest) = rest.split_at(usize::from(*len).min(rest.len()));
    let valid = match std::str::from_utf8(text) {
        Ok(s) => s,
        Err(e) => std::str::from_utf8(&text[..e.valid_up_to()]).unwrap_or_default(),
    };
    (valid, rest)
}

/// Eight bytes from the front of `bytes` (zeros where it ends).
fn take_8(bytes: &[u8]) -> ([u8; 8], &[u8]) {
    let mut out = [0u8; 8];
    let n = bytes.len().min(8);
    out[..n].copy_from_slice(&bytes[..n]);
    (out, &bytes[n..])
}

/// A primitive's name (lossy UTF-8) through the key rules and the kind names. A name whose
/// keys a cluster accepts (`keys::shares_one_tag`) has every key and channel of one hash tag,
/// so a proxy that shards by tag keeps them together too; a kind that parses reads back as the
/// same text.
pub fn names(data: &[u8]) {
    let name = String::from_utf8_lossy(data);
    let tag = keys::hash_tag(&name);
    if keys::shares_one_tag(&name) {
        for key in [
            keys::lock_channel(&name),
            keys::unlock_latch_prefix(&name),
            keys::token_key(&name),
            keys::rwlock_channel(&name),
            keys::suffixed(&name, "timeout"),
            keys::read_timeout_prefix(&name, "owner:1"),
            keys::fair_queue_key(&name),
            keys::fair_timeout_key(&name),
            keys::semaphore_channel(&name),
        ] {
            assert_eq!(keys::hash_tag(&key), tag, "{name:?}: key {key:?} has another hash tag");
        }
    }
    if keys::latch_shares_one_tag(&name) {
        let channel = keys::latch_channel(&name);
        assert_eq!(keys::hash_tag(&channel), tag, "{name:?}: latch channel {channel:?} has another hash tag");
    }
    match Kind::parse(&name) {
        Ok(kind) => assert_eq!(Kind::parse(kind.as_str()).ok(), Some(kind), "{name:?} read as {kind}"),
        Err(e) => assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{name:?}: {e}"),
    }
}

/// A server's reply (RESP bytes, parsed as the `redis` crate parses a reply) read every way
/// core reads one: as the describe script's snapshot, classified with and without each forced
/// kind; as a `CONFIG GET` answer; as `INFO` text; as a holder record (JSON) and the record
/// `describe` shows of it. Nothing may panic.
pub fn replies(data: &[u8]) {
    let Ok(value) = redis::parse_redis_value(data) else { return };
    describe::read_reply(&value);
    let _ = crate::conn::config_value(value.clone(), "maxmemory-policy");
    if let Value::BulkString(b) = &value {
        let text = String::from_utf8_lossy(b);
        let _ = crate::replicas::aof_enabled(&text);
        if let Ok(record) = serde_json::from_str::<HolderRecord>(&text) {
            describe::show_record(&record);
        }
    }
}
