//! `rediss://` against a TLS redis-server with certificates made for the test, and an ACL user.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::net::TcpListener;
use std::path::Path;
use std::process::Command;

use rlock::{Client, ClientOptions, ErrorKind};

fn openssl(dir: &Path, args: &[&str]) {
    let ok = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("openssl is installed")
        .status
        .success();
    assert!(ok, "openssl {args:?} failed");
}

/// A CA and a server certificate for 127.0.0.1, in `dir`.
fn make_certs(dir: &Path) {
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=rlock-test-ca",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
        ],
    );
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ],
    );
    std::fs::write(dir.join("ext.cnf"), "subjectAltName=IP:127.0.0.1\n").unwrap();
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
            "-out",
            "server.crt",
        ],
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_a_ca_file_and_an_acl_user() {
    let certs = tempfile::tempdir().unwrap();
    make_certs(certs.path());
    let p = |f: &str| certs.path().join(f).to_str().unwrap().to_owned();
    let tls_port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
    let server = common::RedisServer::start_with(&[
        "--tls-port",
        &tls_port,
        "--tls-cert-file",
        &p("server.crt"),
        "--tls-key-file",
        &p("server.key"),
        "--tls-ca-cert-file",
        &p("ca.crt"),
        "--tls-auth-clients",
        "no",
        "--user",
        "locker",
        "on",
        ">locker-pw",
        "~*",
        "&*",
        "+@all",
    ]);
    let url = |pw: &str| format!("rediss://locker:{pw}@127.0.0.1:{tls_port}/");
    let opts = ClientOptions::default().with_tls_ca_file(Some(certs.path().join("ca.crt")));

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
    let certs = tempfile::tempdir().unwrap();
    make_certs(certs.path());
    let p = |f: &str| certs.path().join(f).to_str().unwrap().to_owned();
    // Three masters, each with a TLS port; the cluster bus runs over TLS too. (The plain port is
    // the test harness's readiness check; the client below uses only the TLS ports.)
    let mut tls_ports = Vec::new();
    let nodes: Vec<_> = (0..3)
        .map(|_| {
            let tls_port = common::free_port();
            tls_ports.push(tls_port);
            let args: Vec<String> = [
                "--cluster-enabled",
                "yes",
                "--cluster-node-timeout",
                "1000",
                "--tls-cluster",
                "yes",
                "--tls-auth-clients",
                "no",
            ]
            .iter()
            .map(|s| s.to_string())
            .chain([
                "--tls-port".into(),
                tls_port.to_string(),
                "--cluster-port".into(),
                common::free_port().to_string(),
                "--tls-cert-file".into(),
                p("server.crt"),
                "--tls-key-file".into(),
                p("server.key"),
                "--tls-ca-cert-file".into(),
                p("ca.crt"),
            ])
            .collect();
            common::RedisServer::launch(None, None, &|_| args.clone())
        })
        .collect();
    let mut create = Command::new("redis-cli");
    create.args(["--cluster", "create"]);
    for n in &nodes {
        create.arg(format!("127.0.0.1:{}", n.port));
    }
    assert!(create.arg("--cluster-yes").output().unwrap().status.success());
    common::topology::wait_for(std::time::Duration::from_secs(30), "the TLS cluster to form", || {
        nodes.iter().all(|n| {
            let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut n.conn()).unwrap_or_default();
            info.contains("cluster_state:ok")
        })
    });
    let hosts: Vec<String> = tls_ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
    let url = format!("rediss+cluster://{}/", hosts.join(","));
    let opts = ClientOptions::default().with_tls_ca_file(Some(certs.path().join("ca.crt")));
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
