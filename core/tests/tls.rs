//! `rediss://` against a TLS redis-server with certificates made for the test, and an ACL user.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{Certs, Cluster, Inspect as _, Server};
use rlock::{Client, ClientOptions, ErrorKind};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_ca_file_and_an_acl_user() {
    let certs = Certs::generate().unwrap();
    let server = Server::builder()
        .tls(&certs.files())
        // One word per argument: redis-server quotes each as one token.
        .args(["--user", "locker", "on", ">locker-pw", "~*", "&*", "+@all"])
        .start()
        .unwrap();
    let tls_port = server.tls_port().unwrap();
    let url = |pw: &str| format!("rediss://locker:{pw}@127.0.0.1:{tls_port}/");
    let opts = ClientOptions::default().with_tls_ca_file(Some(certs.ca()));

    let c = Client::connect(&url("locker-pw"), opts.clone()).await.unwrap();
    let owner = c.new_owner();
    let lock = c.lock("tls").unwrap();
    lock.acquire(&owner).await.unwrap();
    let fields: Vec<String> = redis::cmd("HKEYS").arg("tls").query(&mut server.conn()).unwrap();
    assert_eq!(fields, vec![owner.as_str().to_owned()]);
    // A waiter on a second TLS client wakes through pub/sub over TLS.
    let c2 = Client::connect(&url("locker-pw"), opts.clone()).await.unwrap();
    let (l2, o2) = (c2.lock("tls").unwrap(), c2.new_owner());
    let waiter = tokio::spawn(async move { l2.acquire(&o2).await.map(|_| (l2, o2)) });
    assert!(
        common::eventually(std::time::Duration::from_secs(5), || server
            .numsub("redisson_lock__channel:{tls}")
            == 1)
        .await
    );
    lock.release(&owner).await.unwrap();
    let (l2, o2) =
        tokio::time::timeout(std::time::Duration::from_secs(5), waiter).await.unwrap().unwrap().unwrap();
    l2.release(&o2).await.unwrap();

    // Wrong password: a typed error that does not repeat it.
    let e = Client::connect(&url("not-the-pw"), opts.clone()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Redis, "{e}");
    assert!(!format!("{e} {e:?}").contains("not-the-pw"));
    // Without the CA the server's certificate is not trusted.
    let quick = ClientOptions::default().with_retry_attempts(0);
    let e = Client::connect(&url("locker-pw"), quick).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Connection, "{e}");
    // A CA file that does not exist is a bad argument.
    let bad = ClientOptions::default().with_tls_ca_file(Some("/nonexistent/ca.crt".into()));
    assert_eq!(Client::connect(&url("locker-pw"), bad).await.unwrap_err().kind(), ErrorKind::InvalidArgument);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_cluster_through_a_rediss_cluster_url() {
    let certs = Certs::generate().unwrap();
    // Three masters, each with a TLS port; the cluster bus runs over TLS too. (The plain ports
    // are the testbed's readiness checks; the client below uses only the TLS ports.)
    let cluster = Cluster::builder().tls(&certs.files()).start().unwrap();
    let url = cluster.tls_url().unwrap();
    let opts = ClientOptions::default().with_tls_ca_file(Some(certs.ca()));
    let c = Client::connect(&url, opts.clone()).await.unwrap();
    let c2 = Client::connect(&url, opts).await.unwrap();
    assert_eq!(c.topology(), rlock::Topology::Cluster);
    let (a, b) = (c.new_owner(), c2.new_owner());
    for i in 0..30 {
        let lock = c.lock(&format!("tls-cluster-{i}")).unwrap();
        lock.acquire(&a).await.unwrap();
        assert!(!c2
            .lock(lock.name())
            .unwrap()
            .try_acquire(&b, std::time::Duration::ZERO, None)
            .await
            .unwrap());
        lock.release(&a).await.unwrap();
    }
    // Without the CA the servers' certificates are not trusted.
    let e = Client::connect(&url, ClientOptions::default().with_retry_attempts(0)).await.unwrap_err();
    assert!(matches!(e.kind(), ErrorKind::Connection | ErrorKind::Timeout), "{e}");
}
