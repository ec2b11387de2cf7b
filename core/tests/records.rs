//! Holder records against a real redis-server: written soon after a client first holds
//! something, naming the host, pid, app and holds (permits with their ids); gone one watchdog
//! timeout after the client holds nothing; never written when switched off; no secret in them.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::time::Duration;

use common::{Inspect as _, Server};
use rlock::{Client, ClientOptions, HolderRecord};

fn record(server: &Server, client: &Client) -> Option<HolderRecord> {
    let key = rlock::surface::record_key(&client.id().hyphenated().to_string());
    let json: Option<String> = redis::cmd("GET").arg(&key).query(&mut server.conn()).unwrap();
    json.map(|j| serde_json::from_str(&j).unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_names_the_holder_and_its_holds_then_expires() {
    let server = Server::start().unwrap();
    let options = ClientOptions::default()
        .with_watchdog_timeout(Duration::from_millis(600))
        .with_app_name(Some("billing".into()));
    let c = Client::connect(&server.url(), options).await.unwrap();
    assert!(record(&server, &c).is_none(), "no record while nothing is held");

    let owner = c.new_owner();
    let lock = c.lock("orders").unwrap();
    lock.acquire(&owner).await.unwrap();
    let sem = c.permit_expirable_semaphore("renders").unwrap();
    assert!(sem.try_set_permits(2, None).await.unwrap());
    let permit = sem.acquire(None).await.unwrap().keep();
    let listed = |r: &Option<HolderRecord>| {
        r.as_ref().is_some_and(|r| {
            r.holds.iter().any(|h| h.name == "orders" && h.owner == owner.as_str())
                && r.holds.iter().any(|h| h.kind == "permit" && h.permit.as_deref() == Some(permit.as_str()))
        })
    };
    assert!(common::eventually(Duration::from_secs(2), || listed(&record(&server, &c))).await);
    let r = record(&server, &c).unwrap();
    assert_eq!(r.client, c.id().hyphenated().to_string());
    assert_eq!(
        (r.pid, r.app.as_deref(), r.version.as_str()),
        (std::process::id(), Some("billing"), env!("CARGO_PKG_VERSION"))
    );
    assert!(!r.host.is_empty());
    let json: String =
        redis::cmd("GET").arg(rlock::surface::record_key(&r.client)).query(&mut server.conn()).unwrap();
    assert!(!json.contains(&server.url()) && !json.contains("redis://"), "no URL in {json}");
    let ttl: i64 =
        redis::cmd("PTTL").arg(rlock::surface::record_key(&r.client)).query(&mut server.conn()).unwrap();
    assert!(ttl > 0 && ttl <= 600, "PTTL {ttl}");
    // Held across several leases: the record is refreshed, with the holds' start times kept.
    let since = r.holds.iter().find(|h| h.name == "orders").unwrap().since_ms;
    assert!(!lock.try_acquire(&c.new_owner(), Duration::from_millis(1500), None).await.unwrap());
    let later = record(&server, &c).expect("refreshed while held");
    assert!(later.holds.iter().find(|h| h.name == "orders").unwrap().since_ms.abs_diff(since) <= 2);
    assert!(later.written_ms > r.written_ms);

    lock.release(&owner).await.unwrap();
    sem.release(&permit).await.unwrap();
    assert!(common::eventually(Duration::from_secs(2), || record(&server, &c).is_none()).await, "expired");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_record_when_switched_off() {
    let server = Server::start().unwrap();
    let off =
        Client::connect(&server.url(), ClientOptions::default().with_holder_record(false)).await.unwrap();
    let on = Client::connect(&server.url(), ClientOptions::default()).await.unwrap();
    let (a, b) = (off.new_owner(), on.new_owner());
    off.lock("a").unwrap().acquire(&a).await.unwrap();
    on.lock("b").unwrap().acquire(&b).await.unwrap();
    // The client with records on writes one; by then the other would have too.
    assert!(common::eventually(Duration::from_secs(2), || record(&server, &on).is_some()).await);
    assert!(record(&server, &off).is_none());
    let keys: Vec<String> = redis::cmd("KEYS").arg("rlock:client:*").query(&mut server.conn()).unwrap();
    assert_eq!(keys, [rlock::surface::record_key(&on.id().hyphenated().to_string())]);
}
