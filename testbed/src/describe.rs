//! What the `rlock-testbed` binary prints: one JSON line describing a started topology, and the
//! node lookup its stdin commands use.

use std::path::PathBuf;

use serde_json::{json, Map, Value};

use crate::cluster::Cluster;
use crate::sentinel::{SentinelSet, SERVICE};
use crate::server::Server;
use crate::tls::TlsFiles;
use crate::{Error, Result, HOST};

/// One node as described.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeInfo {
    /// Its name for stdin commands ("server", "node0", "master", "replica0", "sentinel0").
    pub name: String,
    /// "master", "replica" or "sentinel".
    pub role: String,
    /// The plain port.
    pub port: u16,
    /// The cluster bus port.
    pub bus_port: Option<u16>,
    /// The TLS port.
    pub tls_port: Option<u16>,
    /// The master's port, for a replica.
    pub master_port: Option<u16>,
    /// The process id (none once killed).
    pub pid: Option<u32>,
    /// Its temporary directory.
    pub dir: PathBuf,
    /// Its log file.
    pub log: PathBuf,
}

impl NodeInfo {
    /// Describes `server` under `name` and `role`.
    pub fn of(name: &str, role: &str, master_port: Option<u16>, server: &Server) -> NodeInfo {
        NodeInfo {
            name: name.to_owned(),
            role: role.to_owned(),
            port: server.port(),
            bus_port: server.bus_port(),
            tls_port: server.tls_port(),
            master_port,
            pid: server.pid(),
            dir: server.dir().to_path_buf(),
            log: server.log_path(),
        }
    }

    /// `{"name", "role", "port", "pid", "dir", "log"}` and, when set, `"bus_port"`,
    /// `"tls_port"`, `"master_port"`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("name".into(), json!(self.name));
        m.insert("role".into(), json!(self.role));
        m.insert("port".into(), json!(self.port));
        m.insert("pid".into(), json!(self.pid));
        m.insert("dir".into(), json!(self.dir));
        m.insert("log".into(), json!(self.log));
        for (k, v) in
            [("bus_port", self.bus_port), ("tls_port", self.tls_port), ("master_port", self.master_port)]
        {
            if let Some(v) = v {
                m.insert(k.into(), json!(v));
            }
        }
        Value::Object(m)
    }
}

/// A started topology as described.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Summary {
    /// "single", "tls", "cluster", "tls-cluster" or "sentinel".
    pub kind: String,
    /// The URL a client connects with.
    pub url: String,
    /// The `rediss://` URL, for TLS.
    pub tls_url: Option<String>,
    /// The certificates, for TLS.
    pub tls: Option<TlsFiles>,
    /// The password (`requirepass`), if any.
    pub password: Option<String>,
    /// Every node.
    pub nodes: Vec<NodeInfo>,
    /// More top-level fields (counts, the sentinel service name).
    pub extra: Map<String, Value>,
}

impl Summary {
    /// The JSON object: `kind`, `url`, `host`, `ports`, `pids`, `dirs`, `logs`, `nodes`; for one
    /// node also its `port`, `pid`, `dir`, `log` at the top; `tls_url`, `tls_ports`, `ca`,
    /// `cert`, `key` for TLS; `password` when set; then `extra`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("kind".into(), json!(self.kind));
        m.insert("url".into(), json!(self.url));
        m.insert("host".into(), json!(HOST));
        m.insert("ports".into(), json!(self.nodes.iter().map(|n| n.port).collect::<Vec<_>>()));
        m.insert("pids".into(), json!(self.nodes.iter().map(|n| n.pid).collect::<Vec<_>>()));
        m.insert("dirs".into(), json!(self.nodes.iter().map(|n| &n.dir).collect::<Vec<_>>()));
        m.insert("logs".into(), json!(self.nodes.iter().map(|n| &n.log).collect::<Vec<_>>()));
        if let [only] = self.nodes.as_slice() {
            m.insert("port".into(), json!(only.port));
            m.insert("pid".into(), json!(only.pid));
            m.insert("dir".into(), json!(only.dir));
            m.insert("log".into(), json!(only.log));
        }
        if let Some(pw) = &self.password {
            m.insert("password".into(), json!(pw));
        }
        if let Some(u) = &self.tls_url {
            m.insert("tls_url".into(), json!(u));
            m.insert(
                "tls_ports".into(),
                json!(self.nodes.iter().filter_map(|n| n.tls_port).collect::<Vec<_>>()),
            );
        }
        if let Some(t) = &self.tls {
            m.insert("ca".into(), json!(t.ca));
            m.insert("cert".into(), json!(t.cert));
            m.insert("key".into(), json!(t.key));
        }
        m.insert("nodes".into(), Value::Array(self.nodes.iter().map(NodeInfo::to_json).collect()));
        m.extend(self.extra.clone());
        Value::Object(m)
    }

    /// [`Summary::to_json`] as one line.
    pub fn line(&self) -> String {
        self.to_json().to_string()
    }
}

/// What the binary started.
#[derive(Debug)]
pub enum Topology {
    /// One server (plain or TLS).
    Single(Server),
    /// A cluster (plain or TLS).
    Cluster(Cluster),
    /// A Sentinel set.
    Sentinel(SentinelSet),
    /// twemproxy in front of two servers (its nodes are the servers; its URL the proxy's).
    Twemproxy(crate::standin::Twemproxy),
}

impl Topology {
    /// Every node with its name, role and (for a replica) master port, in a fixed order.
    pub fn nodes(&self) -> Vec<(String, &'static str, Option<u16>, &Server)> {
        match self {
            Topology::Single(s) => vec![("server".into(), "master", None, s)],
            Topology::Cluster(c) => c
                .nodes()
                .iter()
                .enumerate()
                .map(|(i, n)| {
                    let (role, master) = c.roles_at_start().get(i).copied().unwrap_or(("master", None));
                    (format!("node{i}"), role, master, n)
                })
                .collect(),
            Topology::Sentinel(s) => {
                let m = Some(s.master.port());
                let mut v = vec![("master".to_owned(), "master", None, &s.master)];
                v.extend(
                    s.replicas.iter().enumerate().map(|(i, r)| (format!("replica{i}"), "replica", m, r)),
                );
                v.extend(
                    s.sentinels
                        .iter()
                        .enumerate()
                        .map(|(i, r)| (format!("sentinel{i}"), "sentinel", None, r)),
                );
                v
            }
            Topology::Twemproxy(t) => {
                t.shards().iter().enumerate().map(|(i, s)| (format!("shard{i}"), "master", None, s)).collect()
            }
        }
    }

    fn servers_mut(&mut self) -> Vec<&mut Server> {
        match self {
            Topology::Single(s) => vec![s],
            Topology::Cluster(c) => c.nodes_mut().iter_mut().collect(),
            Topology::Sentinel(s) => s.nodes_mut(),
            Topology::Twemproxy(t) => t.shards_mut().iter_mut().collect(),
        }
    }

    /// The node a command names: by name, by port, or by index; none names the only node.
    pub fn node_mut(&mut self, key: Option<&str>) -> Result<(String, &mut Server)> {
        let names: Vec<(String, u16)> =
            self.nodes().iter().map(|(n, _, _, s)| (n.clone(), s.port())).collect();
        let index = match key {
            None if names.len() == 1 => Some(0),
            None => {
                let all: Vec<&str> = names.iter().map(|(n, _)| n.as_str()).collect();
                return Err(Error::new(format!("which node? one of {}", all.join(", "))));
            }
            Some(k) => names
                .iter()
                .position(|(n, p)| n == k || p.to_string() == k)
                .or_else(|| k.parse::<usize>().ok().filter(|i| *i < names.len())),
        };
        let i = index.ok_or_else(|| Error::new(format!("no node {:?}", key.unwrap_or_default())))?;
        let name = names.get(i).map(|(n, _)| n.clone()).unwrap_or_default();
        let server = self.servers_mut().into_iter().nth(i).ok_or_else(|| Error::new("no such node"))?;
        Ok((name, server))
    }

    /// The summary the binary prints (`tls`: the certificates, when TLS).
    pub fn summary(&self, tls: Option<&TlsFiles>) -> Summary {
        let nodes: Vec<NodeInfo> =
            self.nodes().into_iter().map(|(name, role, m, s)| NodeInfo::of(&name, role, m, s)).collect();
        let mut extra = Map::new();
        let (kind, url, tls_url, password) = match self {
            Topology::Single(s) => {
                let kind = if s.tls_port().is_some() { "tls" } else { "single" };
                (kind, s.url(), s.tls_url(), s.password().map(str::to_owned))
            }
            Topology::Cluster(c) => {
                let masters = c.roles_at_start().iter().filter(|(r, _)| *r == "master").count();
                extra.insert("masters".into(), json!(masters));
                extra.insert("replicas".into(), json!(c.replicas_per_master()));
                extra.insert("hosts".into(), json!(c.hosts()));
                let kind = if c.tls_url().is_some() { "tls-cluster" } else { "cluster" };
                (kind, c.url(), c.tls_url(), None)
            }
            Topology::Sentinel(s) => {
                extra.insert("master_name".into(), json!(SERVICE));
                extra.insert("master_port".into(), json!(s.master.port()));
                extra.insert("master_url".into(), json!(s.master.url()));
                extra.insert(
                    "replica_ports".into(),
                    json!(s.replicas.iter().map(Server::port).collect::<Vec<_>>()),
                );
                extra.insert(
                    "sentinel_ports".into(),
                    json!(s.sentinels.iter().map(Server::port).collect::<Vec<_>>()),
                );
                ("sentinel", s.url(), None, None)
            }
            Topology::Twemproxy(t) => {
                extra.insert("proxy_port".into(), json!(t.port()));
                ("twemproxy", t.url(), None, None)
            }
        };
        let tls = tls_url.as_ref().and(tls.cloned());
        Summary { kind: kind.into(), url, tls_url, tls, password, nodes, extra }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(name: &str, port: u16) -> NodeInfo {
        NodeInfo {
            name: name.into(),
            role: "master".into(),
            port,
            bus_port: None,
            tls_port: None,
            master_port: None,
            pid: Some(u32::from(port) + 1),
            dir: format!("/tmp/{name}").into(),
            log: format!("/tmp/{name}/redis.log").into(),
        }
    }

    #[test]
    fn a_single_server_is_one_line_with_its_fields_at_the_top() {
        let s = Summary {
            kind: "single".into(),
            url: "redis://:pw@127.0.0.1:12000/".into(),
            tls_url: None,
            tls: None,
            password: Some("pw".into()),
            nodes: vec![node("server", 12_000)],
            extra: Map::new(),
        };
        let line = s.line();
        assert!(!line.contains('\n'));
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["kind"], "single");
        assert_eq!(v["url"], "redis://:pw@127.0.0.1:12000/");
        assert_eq!(v["host"], "127.0.0.1");
        assert_eq!(v["port"], 12_000);
        assert_eq!(v["pid"], 12_001);
        assert_eq!(v["dir"], "/tmp/server");
        assert_eq!(v["log"], "/tmp/server/redis.log");
        assert_eq!(v["password"], "pw");
        assert_eq!(v["ports"], json!([12_000]));
        assert_eq!(v["pids"], json!([12_001]));
        assert_eq!(v["nodes"][0]["name"], "server");
        assert!(v["nodes"][0].get("bus_port").is_none());
        assert!(v.get("tls_url").is_none() && v.get("ca").is_none());
    }

    #[test]
    fn a_cluster_lists_every_node_and_no_single_fields() {
        let mut nodes: Vec<NodeInfo> = (0..3).map(|i| node(&format!("node{i}"), 12_000 + i)).collect();
        nodes[1].bus_port = Some(13_001);
        nodes[2].pid = None; // killed
        nodes[2].role = "replica".into();
        nodes[2].master_port = Some(12_000);
        nodes[2].tls_port = Some(14_002);
        let mut extra = Map::new();
        extra.insert("masters".into(), json!(3));
        let s = Summary {
            kind: "tls-cluster".into(),
            url: "redis+cluster://127.0.0.1:12000,127.0.0.1:12001,127.0.0.1:12002/".into(),
            tls_url: Some("rediss+cluster://127.0.0.1:14002/".into()),
            tls: Some(TlsFiles {
                ca: "/c/ca.crt".into(),
                cert: "/c/server.crt".into(),
                key: "/c/server.key".into(),
            }),
            password: None,
            nodes,
            extra,
        };
        let v = s.to_json();
        assert_eq!(v["ports"], json!([12_000, 12_001, 12_002]));
        assert_eq!(v["pids"], json!([12_001, 12_002, null]));
        assert_eq!(v["logs"][1], "/tmp/node1/redis.log");
        assert!(v.get("port").is_none() && v.get("pid").is_none() && v.get("password").is_none());
        assert_eq!(v["nodes"][1]["bus_port"], 13_001);
        assert_eq!(v["nodes"][2]["role"], "replica");
        assert_eq!(v["nodes"][2]["master_port"], 12_000);
        assert_eq!(v["tls_ports"], json!([14_002]));
        assert_eq!(v["ca"], "/c/ca.crt");
        assert_eq!(v["masters"], 3);
        assert_eq!(v["nodes"].as_array().unwrap().len(), 3);
    }
}
