//! Redis URLs: one server, a Redis Cluster's seed nodes, or a Sentinel set.
//!
//! - `redis://[user:pass@]host:port/db`, `rediss://...` (TLS), `redis+unix:///path`
//! - `redis+cluster://[user:pass@]host1:port1,host2:port2/` (seed nodes; `rediss+cluster://`)
//! - `redis+sentinel://[user:pass@]host1:port1,host2:port2/service_name[/db]`
//!   (`rediss+sentinel://`); the credentials authenticate to the Redis nodes, the sentinels
//!   are asked without them.
//!
//! No error message repeats the URL: it may carry a password.

use redis::{ConnectionAddr, ConnectionInfo, IntoConnectionInfo, TlsCertificates};

use crate::error::{Error, Result};
use crate::options::ClientOptions;

/// Where a client connects when its user names no URL and `REDIS_URL` is not set.
pub const DEFAULT_URL: &str = "redis://127.0.0.1:6379";

/// The URL a client connects to when its user names none: the `REDIS_URL` environment
/// variable when set and not empty, else [`DEFAULT_URL`]. Every surface uses this.
pub fn default_url() -> String {
    default_url_from(std::env::var("REDIS_URL").ok())
}

/// [`default_url`] with `REDIS_URL`'s value as the caller's runtime sees it: a JS runtime's
/// `process.env` is not always the process environment (Bun and Deno keep their own copy).
/// `None` or an empty value gives [`DEFAULT_URL`].
pub fn default_url_from(redis_url: Option<String>) -> String {
    redis_url.filter(|u| !u.is_empty()).unwrap_or_else(|| DEFAULT_URL.to_owned())
}

/// Default port of a Redis node (cluster seed nodes without a port).
const REDIS_PORT: u16 = 6379;
/// Default port of a Sentinel.
const SENTINEL_PORT: u16 = 26379;

/// What a URL names.
pub(crate) enum Target {
    /// One server (TCP, TLS or a unix socket).
    Single(redis::Client),
    /// A Redis Cluster, reached through its seed nodes.
    Cluster {
        /// The seed nodes, each with the URL's credentials.
        nodes: Vec<ConnectionInfo>,
        /// The CA of a `rediss+cluster://` URL, when `tls_ca_file` is set.
        certs: Option<TlsCertificates>,
    },
    /// A master found through Sentinels.
    Sentinel(SentinelTarget),
}

impl Target {
    /// Where the URL points, without its credentials: `host:port` (or `unix:path`) of one
    /// server, the seed nodes of a cluster, the service and sentinels of a Sentinel URL. For
    /// log lines, so a message about one server is told apart from the same message about another.
    pub(crate) fn label(&self) -> String {
        fn addrs<'a>(it: impl Iterator<Item = &'a ConnectionAddr>) -> String {
            it.map(ToString::to_string).collect::<Vec<_>>().join(",")
        }
        match self {
            Target::Single(client) => client.get_connection_info().addr().to_string(),
            Target::Cluster { nodes, .. } => format!("cluster {}", addrs(nodes.iter().map(|n| n.addr()))),
            Target::Sentinel(s) => {
                format!("sentinel service {} via {}", s.service, addrs(s.sentinels.iter()))
            }
        }
    }
}

/// A `redis+sentinel://` URL, taken apart.
pub(crate) struct SentinelTarget {
    /// The sentinels' addresses.
    pub(crate) sentinels: Vec<ConnectionAddr>,
    /// The monitored master's name (`SENTINEL get-master-addr-by-name <service>`).
    pub(crate) service: String,
    /// Database on the master.
    pub(crate) db: i64,
    /// ACL user for the Redis nodes.
    pub(crate) username: Option<String>,
    /// Password for the Redis nodes.
    pub(crate) password: Option<String>,
    /// Whether the nodes and the sentinels speak TLS.
    pub(crate) tls: bool,
    /// The CA for TLS, when `tls_ca_file` is set.
    pub(crate) certs: Option<TlsCertificates>,
}

const EXPECTED: &str = "expected redis://[user:pass@]host:port/db, rediss://..., redis+unix:///path, \
                        redis+cluster://host1:port1,host2:port2/ or \
                        redis+sentinel://host1:port1,host2:port2/service_name[/db]";

/// Parses `url`; `options` supplies the TLS CA file.
pub(crate) fn parse(url: &str, options: &ClientOptions) -> Result<Target> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(Error::invalid(format!("not a Redis URL: {EXPECTED}")));
    };
    let tls = scheme.starts_with("rediss");
    if tls {
        // The redis crate leaves the rustls crypto provider to the application; pick ring
        // unless the process already chose one.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
    let certs = match (tls, &options.tls_ca_file) {
        (true, Some(ca)) => {
            let pem = std::fs::read(ca)
                .map_err(|e| Error::invalid(format!("cannot read tls_ca_file {}: {e}", ca.display())))?;
            Some(TlsCertificates { client_tls: None, root_cert: Some(pem) })
        }
        _ => None,
    };
    match scheme {
        "redis" | "rediss" | "redis+unix" | "unix" => single(url, certs),
        "redis+cluster" | "rediss+cluster" => cluster(rest, tls, certs),
        "redis+sentinel" | "rediss+sentinel" => sentinel(rest, tls, certs),
        other => Err(Error::invalid(format!("unsupported URL scheme '{other}': {EXPECTED}"))),
    }
}

fn single(url: &str, certs: Option<TlsCertificates>) -> Result<Target> {
    let invalid =
        |e: redis::RedisError| Error::invalid(format!("invalid Redis URL ({:?}): {EXPECTED}", e.kind()));
    let client = match certs {
        Some(certs) => redis::Client::build_with_tls(url, certs),
        None => redis::Client::open(url),
    }
    .map_err(invalid)?;
    // No `CLIENT SETINFO` after connecting: a proxy that does not know `CLIENT` (twemproxy)
    // closes the connection on it, and a `redis://` URL may name such a proxy.
    let info = client.get_connection_info().clone();
    let settings = info.redis_settings().clone().set_skip_set_lib_name();
    redis::Client::open(info.set_redis_settings(settings)).map(Target::Single).map_err(invalid)
}

/// The URL after `scheme://`, split into credentials, hosts and path.
struct Parts<'a> {
    userinfo: Option<&'a str>,
    hosts: Vec<(String, u16)>,
    path: &'a str,
}

fn split<'a>(rest: &'a str, default_port: u16, what: &str) -> Result<Parts<'a>> {
    if rest.contains(['?', '#']) {
        return Err(Error::invalid(format!("{what} URLs take no query or fragment: {EXPECTED}")));
    }
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let (userinfo, hostlist) = match authority.rfind('@') {
        Some(i) => (Some(&authority[..i]), &authority[i + 1..]),
        None => (None, authority),
    };
    let mut hosts = Vec::new();
    for host in hostlist.split(',') {
        hosts.push(host_port(host, default_port, what)?);
    }
    Ok(Parts { userinfo, hosts, path })
}

fn host_port(s: &str, default_port: u16, what: &str) -> Result<(String, u16)> {
    let bad = || Error::invalid(format!("bad host in {what} URL (expected host:port): {EXPECTED}"));
    let (host, port) = if let Some(v6) = s.strip_prefix('[') {
        let (h, after) = v6.split_once(']').ok_or_else(bad)?;
        (format!("[{h}]"), after.strip_prefix(':'))
    } else {
        match s.rsplit_once(':') {
            Some((h, p)) => (h.to_owned(), Some(p)),
            None => (s.to_owned(), None),
        }
    };
    if host.is_empty() || host == "[]" {
        return Err(bad());
    }
    let port = match port {
        Some(p) => p.parse::<u16>().ok().filter(|p| *p > 0).ok_or_else(bad)?,
        None => default_port,
    };
    Ok((host, port))
}

/// Builds a node's connection info by way of a one-node URL, so the redis crate does the
/// percent-decoding and checks of the credentials.
fn node(tls: bool, userinfo: Option<&str>, host: &str, port: u16, what: &str) -> Result<ConnectionInfo> {
    let scheme = if tls { "rediss" } else { "redis" };
    let auth = userinfo.map(|u| format!("{u}@")).unwrap_or_default();
    format!("{scheme}://{auth}{host}:{port}/")
        .into_connection_info()
        .map_err(|e| Error::invalid(format!("invalid {what} URL ({:?}): {EXPECTED}", e.kind())))
}

fn cluster(rest: &str, tls: bool, certs: Option<TlsCertificates>) -> Result<Target> {
    let parts = split(rest, REDIS_PORT, "redis+cluster")?;
    if !matches!(parts.path, "" | "/" | "/0") {
        return Err(Error::invalid(
            "a Redis Cluster has only database 0: use redis+cluster://host1:port1,host2:port2/",
        ));
    }
    let nodes = parts
        .hosts
        .iter()
        .map(|(h, p)| node(tls, parts.userinfo, h, *p, "redis+cluster"))
        .collect::<Result<Vec<_>>>()?;
    Ok(Target::Cluster { nodes, certs })
}

fn sentinel(rest: &str, tls: bool, certs: Option<TlsCertificates>) -> Result<Target> {
    let parts = split(rest, SENTINEL_PORT, "redis+sentinel")?;
    let mut segments = parts.path.trim_start_matches('/').split('/');
    let service = segments.next().unwrap_or_default();
    if service.is_empty() {
        return Err(Error::invalid(
            "a redis+sentinel URL names the master: redis+sentinel://host1:port1,host2:port2/service_name[/db]",
        ));
    }
    let db =
        match segments.next() {
            None | Some("") => 0,
            Some(d) => d.parse::<i64>().ok().filter(|d| *d >= 0).ok_or_else(|| {
                Error::invalid("the database in a redis+sentinel URL must be a number >= 0")
            })?,
        };
    if segments.next().is_some() {
        return Err(Error::invalid(format!("too many path segments in redis+sentinel URL: {EXPECTED}")));
    }
    // Let the redis crate decode the credentials (percent-encoding) from a one-node URL.
    let first = parts.hosts.first().map(|(h, p)| (h.as_str(), *p)).unwrap_or(("localhost", SENTINEL_PORT));
    let info = node(tls, parts.userinfo, first.0, first.1, "redis+sentinel")?;
    let sentinels = parts
        .hosts
        .iter()
        .map(|(h, p)| node(tls, None, h, *p, "redis+sentinel").map(|i| i.addr().clone()))
        .collect::<Result<Vec<_>>>()?;
    Ok(Target::Sentinel(SentinelTarget {
        sentinels,
        service: service.to_owned(),
        db,
        username: info.redis_settings().username().map(str::to_owned),
        password: info.redis_settings().password().map(str::to_owned),
        tls,
        certs,
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    #[test]
    fn default_url_policy() {
        assert_eq!(default_url_from(None), DEFAULT_URL);
        assert_eq!(default_url_from(Some(String::new())), DEFAULT_URL);
        assert_eq!(default_url_from(Some("redis://h:1/".into())), "redis://h:1/");
    }

    fn parse_ok(url: &str) -> Target {
        parse(url, &ClientOptions::default()).unwrap_or_else(|e| panic!("{url}: {e}"))
    }

    fn parse_err(url: &str) -> String {
        match parse(url, &ClientOptions::default()) {
            Ok(_) => panic!("{url} parsed"),
            Err(e) => {
                assert_eq!(e.kind(), crate::error::ErrorKind::InvalidArgument);
                e.to_string()
            }
        }
    }

    #[test]
    fn cluster_urls() {
        let Target::Cluster { nodes, .. } =
            parse_ok("redis+cluster://u:p%40ss@127.0.0.1:7000,[::1]:7001,host/")
        else {
            panic!("not a cluster")
        };
        assert_eq!(nodes.len(), 3);
        assert_eq!(nodes[0].redis_settings().username(), Some("u"));
        assert_eq!(nodes[0].redis_settings().password(), Some("p@ss"));
        assert_eq!(nodes[1].addr().to_string(), "::1:7001");
        assert_eq!(nodes[2].addr().to_string(), "host:6379");
        assert!(matches!(parse_ok("rediss+cluster://127.0.0.1:7000"), Target::Cluster { .. }));
        parse_err("redis+cluster://127.0.0.1:7000/3");
        parse_err("redis+cluster://127.0.0.1:notaport/");
        parse_err("redis+cluster://127.0.0.1:7000,,127.0.0.1:7001/");
        parse_err("redis+cluster://127.0.0.1:0/");
        parse_err("redis+cluster://127.0.0.1:7000/?protocol=resp3");
    }

    #[test]
    fn sentinel_urls() {
        let Target::Sentinel(s) =
            parse_ok("redis+sentinel://app:s3cret@127.0.0.1:26379,127.0.0.1:26380/mymaster/2")
        else {
            panic!("not sentinel")
        };
        assert_eq!(s.sentinels.len(), 2);
        assert_eq!(s.service, "mymaster");
        assert_eq!(s.db, 2);
        assert_eq!(s.username.as_deref(), Some("app"));
        assert_eq!(s.password.as_deref(), Some("s3cret"));
        assert!(!s.tls);
        let Target::Sentinel(s) = parse_ok("rediss+sentinel://localhost/mymaster") else { panic!() };
        assert!(s.tls);
        assert_eq!(s.sentinels[0].to_string(), "localhost:26379");
        assert_eq!(s.db, 0);
        parse_err("redis+sentinel://127.0.0.1:26379/");
        parse_err("redis+sentinel://127.0.0.1:26379");
        parse_err("redis+sentinel://127.0.0.1:26379/m/x");
        parse_err("redis+sentinel://127.0.0.1:26379/m/1/2");
    }

    #[test]
    fn errors_never_repeat_the_password() {
        for url in [
            "redis+cluster://u:hunter2@127.0.0.1:x/",
            "redis+sentinel://u:hunter2@127.0.0.1:1/",
            "redis://u:hunter2@[bad/",
            "bogus://u:hunter2@h/",
            "u:hunter2@h",
        ] {
            assert!(!parse_err(url).contains("hunter2"), "{url}");
        }
    }

    #[test]
    fn a_label_names_where_without_credentials() {
        let cases = [
            ("redis://u:hunter2@127.0.0.1:7001/2", "127.0.0.1:7001"),
            ("rediss://:hunter2@example.com:6380/", "example.com:6380"),
            ("redis+cluster://u:hunter2@10.0.0.1:7000,10.0.0.2/", "cluster 10.0.0.1:7000,10.0.0.2:6379"),
            (
                "redis+sentinel://u:hunter2@s1:26380,s2/mymaster/1",
                "sentinel service mymaster via s1:26380,s2:26379",
            ),
        ];
        for (url, label) in cases {
            assert_eq!(parse_ok(url).label(), label, "{url}");
        }
    }
}
