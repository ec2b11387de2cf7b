//! Least privilege (docs/operations/security.md): the ACL rules that page gives, read from it,
//! are enough for every primitive, renewals and pub/sub wake-ups included, and for describe and
//! list; a user missing one command of them gets a typed error carrying the server's words.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, clippy::print_stdout)]

mod common;

use std::time::Duration;

use common::{family, short_watchdog, Server};
use rlock::{Client, ErrorKind};

/// docs/operations/security.md, where the rule is written.
fn page() -> String {
    std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/operations/security.md"),
    )
    .unwrap()
}

/// The tokens of the fenced block ```` ```acl no-run NAME ```` of docs/operations/security.md.
fn rule(name: &str) -> Vec<String> {
    let doc = page();
    let start = format!("```acl no-run {name}\n");
    let at =
        doc.find(&start).unwrap_or_else(|| panic!("security.md has no ```acl {name} block")) + start.len();
    let body = &doc[at..at + doc[at..].find("```").unwrap()];
    body.split_whitespace().map(str::to_owned).collect()
}

/// Makes user `app` (password `app-pass`) with exactly `rules` (and the key and channel
/// patterns of the `keys` block, confined to names starting `app:`), less `without`. A command
/// the server does not have (Redis 6.2: the sharded pub/sub commands) is left out, as the page
/// says to, since `ACL SETUSER` refuses a rule that names one.
fn make_user(server: &Server, blocks: &[&str], without: Option<&str>) {
    let mut conn = common::conn_to(server.port());
    let mut cmd = redis::cmd("ACL");
    // `resetchannels` too: Redis 6.2's `reset` leaves every channel allowed.
    cmd.arg("SETUSER").arg("app").arg("reset").arg("resetchannels").arg("on").arg(">app-pass").arg("-@all");
    for block in blocks.iter().chain(&["keys"]) {
        for token in rule(block) {
            if let Some(command) = token.strip_prefix('+') {
                // By its command: Redis 6.2's COMMAND INFO knows no `command|subcommand`.
                let base = command.split('|').next().unwrap_or(command);
                let known: Vec<redis::Value> =
                    redis::cmd("COMMAND").arg("INFO").arg(base).query(&mut conn).unwrap();
                if Some(command) == without || matches!(known.first(), None | Some(redis::Value::Nil)) {
                    continue;
                }
            }
            cmd.arg(token);
        }
    }
    let _: () = cmd.query(&mut conn).unwrap();
}

async fn connect_as_app(server: &Server) -> Client {
    let url = format!("redis://app:app-pass@127.0.0.1:{}/", server.port());
    Client::connect(&url, short_watchdog()).await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documented_rule_is_enough_for_every_primitive() {
    let server = Server::start().unwrap();
    make_user(&server, &["family", "describe"], None);
    let c = connect_as_app(&server).await;
    family::every_step(&c, "app:", || {}).await;

    // describe and list, on a name held now.
    let lock = c.lock("app:held").unwrap();
    let me = c.new_owner();
    lock.acquire(&me).await.unwrap();
    let described = c.describe("app:held").await.unwrap();
    assert_eq!(described.kind, rlock::Kind::Lock, "{described:?}");
    let listed = c.list(Some("app:*"), None).await.unwrap();
    assert!(listed.iter().any(|l| l.name == "app:held"), "{listed:?}");
    lock.release(&me).await.unwrap();
}

/// A command every acquire of a lock sends before it writes anything (the script itself, and
/// the subscription of a waiter): without it, a typed error with the server's words (which
/// name the command, or on Redis 7.0 the script line that called it), and no key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_missing_one_command_gets_a_typed_error_naming_it() {
    let server = Server::start().unwrap();
    for missing in ["evalsha", "exists"] {
        make_user(&server, &["family"], Some(missing));
        let c = connect_as_app(&server).await;
        let lock = c.lock("app:lock").unwrap();
        let err = lock.acquire(&c.new_owner()).await.expect_err(missing);
        assert_eq!(err.kind(), ErrorKind::Redis, "without {missing}: {err}");
        assert!(err.to_string().contains("app:lock"), "without {missing}: {err}");
        // The server's words are passed on: they name the command (Redis 8, Valkey), or for a
        // command a script calls on Redis 7.0 the script and its line.
        let said = err.to_string();
        assert!(
            said.to_lowercase().contains(missing) || said.contains("@user_script"),
            "without {missing}: {err}"
        );
        println!("without {missing}: {err}");
        let exists: bool =
            redis::cmd("EXISTS").arg("app:lock").query(&mut common::conn_to(server.port())).unwrap();
        assert!(!exists, "without {missing}: the failed acquire left the lock");
        c.close();
    }

    // A waiter whose subscription is refused polls instead (a warning in the log): it gets
    // the lock after the release, it does not hang.
    make_user(&server, &["family"], Some("subscribe"));
    let c = connect_as_app(&server).await;
    let lock = c.lock("app:waited").unwrap();
    let holder = c.new_owner();
    lock.acquire(&holder).await.unwrap();
    let (l, waiter) = (lock.clone(), c.new_owner());
    let tries = common::calls_on(server.port(), "evalsha");
    let waited = tokio::spawn(async move { l.try_acquire(&waiter, Duration::from_secs(20), None).await });
    // The waiter polls: its first try and one more reach the server (the event, not a sleep).
    let polled = common::eventually(Duration::from_secs(10), || {
        common::calls_on(server.port(), "evalsha") >= tries + 2
    });
    assert!(polled.await, "the waiter without SUBSCRIBE did not poll");
    assert!(!waited.is_finished(), "the waiter did not wait for the holder");
    lock.release(&holder).await.unwrap();
    assert!(waited.await.unwrap().unwrap(), "the waiter without SUBSCRIBE did not get the lock");
}

/// The page's whole `ACL SETUSER` example is its blocks together (one copy of the rule).
#[test]
fn the_whole_rule_on_the_page_is_its_blocks() {
    let doc = page();
    let at = doc.find("ACL SETUSER app on >PASSWORD").expect("the whole rule");
    let example: Vec<&str> = doc[at..at + doc[at..].find("```").unwrap()]
        .split_whitespace()
        .filter(|t| *t != "\\")
        .skip(7) // ACL SETUSER app on >PASSWORD resetkeys resetchannels
        .collect();
    assert_eq!(example.first(), Some(&"-@all"));
    let mut blocks: Vec<String> = rule("keys");
    blocks.extend(rule("family"));
    assert_eq!(example[1..].to_vec(), blocks.iter().map(String::as_str).collect::<Vec<_>>());
}
