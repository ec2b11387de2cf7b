//! How `rlock` prints a command line it refuses: as clap renders it, with the password of every
//! URL among the arguments shown as `***`. clap repeats an argument it does not expect as it was
//! given (`unexpected argument '--urlredis://app:secret@host' found`), and a refusal ends up on
//! terminals and in CI logs.

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

/// The password of `arg` when it holds a URL with one (`scheme://user:password@...`, anywhere in
/// the argument, as in `--url=redis://...`).
fn password_of(arg: &str) -> Option<&str> {
    let (_, userinfo, _) = rlock::fuzz::credentials(arg)?;
    userinfo.split_once(':').map(|(_, p)| p).filter(|p| !p.is_empty())
}

/// The text of `error` with the password of every URL in `argv` masked: each argument that
/// holds one appears with its password as `***`, and so does any other place the password
/// shows (when it is long enough to tell apart from the message's own words: 4 bytes or more).
pub(crate) fn text(error: &clap::Error, argv: &[OsString]) -> String {
    let mut text = error.render().to_string();
    for arg in argv {
        let arg = arg.to_string_lossy();
        let Some(password) = password_of(&arg) else { continue };
        text = text.replace(&*arg, &arg.replace(password, "***"));
        if password.len() >= 4 {
            text = text.replace(password, "***");
        }
    }
    text
}

/// Prints the refusal of `argv` (help and the version on stdout, errors on stderr, as clap
/// does) and gives clap's exit code ([`crate::exit::USAGE`] for errors, 0 for help).
pub(crate) fn exit(error: &clap::Error, argv: &[OsString]) -> ExitCode {
    let text = text(error, argv);
    // Not eprint!/print!: they panic when the stream is a closed pipe.
    let _ = if error.use_stderr() {
        std::io::stderr().write_all(text.as_bytes())
    } else {
        std::io::stdout().write_all(text.as_bytes())
    };
    ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(crate::exit::USAGE))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn refusal(args: &[&str]) -> String {
        let argv: Vec<OsString> =
            std::iter::once("rlock").chain(args.iter().copied()).map(OsString::from).collect();
        match crate::Cli::try_parse_from(&argv) {
            Ok(_) => panic!("{args:?} was accepted"),
            Err(e) => text(&e, &argv),
        }
    }

    #[test]
    fn an_argument_clap_repeats_shows_no_password() {
        let shown = refusal(&["--urlredis://app:s4cretpw@127.0.0.1:6379/", "status", "x"]);
        assert!(shown.contains("--urlredis://app:***@127.0.0.1:6379/"), "{shown}");
        assert!(!shown.contains("s4cretpw"), "{shown}");
        // The fuzzer's find: a --url whose value clap takes for an unknown flag.
        let shown = refusal(&["--url", "--lostredis://app:s4cretpw@127.\t", "status", "x"]);
        assert!(!shown.contains("s4cretpw"), "{shown}");
    }

    #[test]
    fn a_short_password_is_masked_where_its_argument_shows() {
        let shown = refusal(&["--xredis://u:ab@h", "status", "x"]);
        assert!(shown.contains("redis://u:***@h"), "{shown}");
    }
}
