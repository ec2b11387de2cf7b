//! Entry points for fuzzing the command's arguments (issue 45), beside core's (`rlock::fuzz`):
//! each takes arbitrary bytes and panics only when a rule stated here is broken. The `fuzz/`
//! crate's `cli_*` targets call them; `cli/tests/fuzz_corpus.rs` replays the kept corpus
//! (`fuzz/corpus/<target>/`) through them in every `cargo test`. Nothing here connects anywhere.
//! Not an API.

use std::ffi::OsString;
use std::os::unix::ffi::{OsStrExt, OsStringExt};

use clap::Parser;

use crate::{duration, Cli};

/// A target: arbitrary bytes in, a panic when a rule is broken.
pub type Target = fn(&[u8]);

/// Every target by name: the directory of its corpus and its `fuzz/fuzz_targets/<name>.rs`.
pub const TARGETS: &[(&str, Target)] = &[("cli_args", args)];

/// A command line (the bytes split at NUL into arguments: any bytes, not only UTF-8) through
/// the parser `rlock` parses its own with. It may be refused, never panic, and what a refusal
/// prints holds no password given with `--url`. Each argument is also read as a duration (as
/// `--wait`, `--lease`, `--lost-grace`, `--grace` and `--seconds` read theirs): one accepted
/// prints the way the command prints durations as text that reads back as the same duration; a
/// refusal says how to write one.
pub fn args(data: &[u8]) {
    let argv: Vec<OsString> = data.split(|b| *b == 0).map(|a| OsString::from_vec(a.to_vec())).collect();
    if let Err(e) = parse(&argv) {
        // As the command prints it (crate::refusal).
        let text = crate::refusal::text(&e, &argv);
        if let Some(secret) = url_password(&argv) {
            // A password that is also fixed text of the message (a word of the usage) is not a
            // leak: the same line with the password masked shows it too.
            let masked: Vec<OsString> = argv.iter().map(|a| mask(a, secret)).collect();
            let fixed = parse(&masked)
                .err()
                .is_some_and(|m| contains(crate::refusal::text(&m, &masked).as_bytes(), secret));
            assert!(
                fixed || !contains(text.as_bytes(), secret),
                "{argv:?}: the refusal shows the --url password:\n{text}"
            );
        }
    }
    for arg in &argv {
        let Some(text) = arg.to_str() else { continue };
        match duration(text) {
            Ok(d) => {
                let shown = humantime::format_duration(d).to_string();
                assert_eq!(duration(&shown), Ok(d), "{text:?} read as {d:?}, printed as {shown:?}");
            }
            Err(why) => assert!(why.contains("write durations like"), "{text:?}: {why}"),
        }
    }
}

fn parse(argv: &[OsString]) -> Result<Cli, clap::Error> {
    Cli::try_parse_from(std::iter::once(OsString::from("rlock")).chain(argv.iter().cloned()))
}

/// The password of the first `--url VALUE` or `--url=VALUE` (after the user's `:` in the
/// credentials `rlock::fuzz::credentials` finds, as core's `url` target does), when telling it
/// apart is possible: at least 4 bytes, found once in the whole line.
fn url_password(argv: &[OsString]) -> Option<&[u8]> {
    let value = argv.iter().enumerate().find_map(|(i, a)| match a.to_str()? {
        "--url" => argv.get(i + 1)?.to_str(),
        a => a.strip_prefix("--url="),
    })?;
    let (_, userinfo, _) = rlock::fuzz::credentials(value)?;
    let password = userinfo.split_once(':')?.1.as_bytes();
    let line: Vec<u8> = argv.iter().flat_map(|a| a.as_bytes().iter().copied().chain([0])).collect();
    (password.len() >= 4 && count(&line, password) == 1).then_some(password)
}

/// `arg` with every `secret` in it replaced by as many `#`.
fn mask(arg: &OsString, secret: &[u8]) -> OsString {
    let mut out = arg.as_bytes().to_vec();
    let mut from = 0;
    while let Some(at) = find(&out[from..], secret) {
        out[from + at..from + at + secret.len()].fill(b'#');
        from += at + secret.len();
    }
    OsString::from_vec(out)
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    find(haystack, needle).is_some()
}

fn count(haystack: &[u8], needle: &[u8]) -> usize {
    haystack.windows(needle.len()).filter(|w| *w == needle).count()
}
