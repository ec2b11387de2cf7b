//! The little RESP2 the launcher needs to see whether its servers are up: PING, INFO, CLUSTER
//! INFO/SLOTS/KEYSLOT, SENTINEL queries, AUTH. Tests that inspect data use the `redis` crate.

use std::io::{self, BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use crate::{Error, Result, HOST};

/// One reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `+OK`
    Simple(String),
    /// `-ERR ...`
    Error(String),
    /// `:42`
    Int(i64),
    /// `$3\r\nabc`
    Bulk(Vec<u8>),
    /// `$-1` or `*-1`
    Nil,
    /// `*2\r\n...`
    Array(Vec<Reply>),
}

impl Reply {
    /// A simple or bulk string as text.
    pub fn text(&self) -> Option<String> {
        match self {
            Reply::Simple(s) => Some(s.clone()),
            Reply::Bulk(b) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        }
    }

    /// An integer.
    pub fn int(&self) -> Option<i64> {
        match self {
            Reply::Int(i) => Some(*i),
            _ => None,
        }
    }

    /// The elements of an array.
    pub fn array(&self) -> Option<&[Reply]> {
        match self {
            Reply::Array(a) => Some(a),
            _ => None,
        }
    }
}

fn bad(what: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("bad RESP reply: {what}"))
}

fn line(r: &mut impl BufRead) -> io::Result<String> {
    let mut buf = Vec::new();
    r.read_until(b'\n', &mut buf)?;
    if buf.is_empty() {
        return Err(io::Error::new(io::ErrorKind::UnexpectedEof, "connection closed"));
    }
    if !buf.ends_with(b"\r\n") {
        return Err(bad("line without CRLF"));
    }
    buf.truncate(buf.len() - 2);
    String::from_utf8(buf).map_err(|_| bad("not UTF-8"))
}

/// Reads one reply.
pub fn read_reply(r: &mut impl BufRead) -> io::Result<Reply> {
    let l = line(r)?;
    let (kind, rest) = l.split_at_checked(1).ok_or_else(|| bad("empty line"))?;
    let num = || rest.parse::<i64>().map_err(|_| bad(&l));
    match kind {
        "+" => Ok(Reply::Simple(rest.to_owned())),
        "-" => Ok(Reply::Error(rest.to_owned())),
        ":" => Ok(Reply::Int(num()?)),
        "$" => {
            let n = num()?;
            if n < 0 {
                return Ok(Reply::Nil);
            }
            let n = usize::try_from(n).map_err(|_| bad(&l))?;
            let mut data = vec![0u8; n + 2];
            r.read_exact(&mut data)?;
            if !data.ends_with(b"\r\n") {
                return Err(bad("bulk string without CRLF"));
            }
            data.truncate(n);
            Ok(Reply::Bulk(data))
        }
        "*" => {
            let n = num()?;
            if n < 0 {
                return Ok(Reply::Nil);
            }
            (0..n).map(|_| read_reply(r)).collect::<io::Result<Vec<_>>>().map(Reply::Array)
        }
        _ => Err(bad(&l)),
    }
}

/// Encodes a command as an array of bulk strings.
pub fn encode(args: &[&str]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// A user name and password for servers with ACL users or `requirepass` (user `default`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Auth {
    /// The ACL user (`default` for `requirepass`).
    pub user: String,
    /// Its password.
    pub password: String,
}

/// A connection to one server on 127.0.0.1, every read and write bounded by a timeout.
pub struct Conn {
    reader: BufReader<TcpStream>,
}

impl Conn {
    /// Connects to 127.0.0.1:`port` within `timeout`; reads and writes time out after it too.
    pub fn connect(port: u16, timeout: Duration) -> io::Result<Conn> {
        let addr: SocketAddr = (std::net::Ipv4Addr::LOCALHOST, port).into();
        let s = TcpStream::connect_timeout(&addr, timeout)?;
        s.set_read_timeout(Some(timeout))?;
        s.set_write_timeout(Some(timeout))?;
        s.set_nodelay(true)?;
        Ok(Conn { reader: BufReader::new(s) })
    }

    /// Sends one command and reads its reply (an error reply is `Ok(Reply::Error)`).
    pub fn call(&mut self, args: &[&str]) -> io::Result<Reply> {
        self.reader.get_mut().write_all(&encode(args))?;
        read_reply(&mut self.reader)
    }

    /// AUTH as `auth` when given.
    pub fn auth(&mut self, auth: Option<&Auth>) -> Result<()> {
        if let Some(a) = auth {
            match self.call(&["AUTH", &a.user, &a.password])? {
                Reply::Error(e) => return Err(Error::new(format!("AUTH as {} failed: {e}", a.user))),
                _ => return Ok(()),
            }
        }
        Ok(())
    }
}

/// Whether something on 127.0.0.1:`port` answers an inline PING with any reply (PONG, NOAUTH,
/// an ACL error...) except LOADING: a server still loading its data set is not ready yet.
pub fn answers_ping(port: u16, timeout: Duration) -> bool {
    let Ok(mut c) = Conn::connect(port, timeout) else { return false };
    if c.reader.get_mut().write_all(b"PING\r\n").is_err() {
        return false;
    }
    match line(&mut c.reader) {
        Ok(l) => !l.starts_with("-LOADING"),
        Err(_) => false,
    }
}

/// One command on a fresh connection (authenticated when `auth` is given), 2 s timeouts.
pub fn query(port: u16, auth: Option<&Auth>, args: &[&str]) -> Result<Reply> {
    let mut c =
        Conn::connect(port, Duration::from_secs(2)).map_err(|e| Error::new(format!("{HOST}:{port}: {e}")))?;
    c.auth(auth)?;
    Ok(c.call(args)?)
}

/// A command whose reply is text (INFO, CLUSTER INFO); an error reply is an [`Error`].
pub fn query_text(port: u16, auth: Option<&Auth>, args: &[&str]) -> Result<String> {
    match query(port, auth, args)? {
        Reply::Error(e) => Err(Error::new(format!("{}: {e}", args.join(" ")))),
        r => r.text().ok_or_else(|| Error::new(format!("{}: not text: {r:?}", args.join(" ")))),
    }
}

/// The server on `port` as `INFO server` names it: (`valkey` or its `server_name`, else
/// `redis`; its version, Valkey's own before the Redis version it reports compatibility with).
pub fn server_version(port: u16, auth: Option<&Auth>) -> Result<(String, String)> {
    let info = query_text(port, auth, &["INFO", "server"])?;
    let field = |k: &str| info.lines().find_map(|l| l.strip_prefix(k)?.strip_prefix(':')).map(str::trim);
    let (name, version) = match field("valkey_version") {
        Some(v) => ("valkey", Some(v)),
        None => (field("server_name").unwrap_or("redis"), field("redis_version")),
    };
    let version =
        version.ok_or_else(|| Error::new(format!("{HOST}:{port}: INFO server gives no version")))?;
    Ok((name.to_owned(), version.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(bytes: &[u8]) -> io::Result<Reply> {
        read_reply(&mut io::Cursor::new(bytes))
    }

    #[test]
    fn parses_each_kind() {
        assert_eq!(parse(b"+PONG\r\n").unwrap(), Reply::Simple("PONG".into()));
        assert_eq!(
            parse(b"-NOAUTH Authentication required.\r\n").unwrap(),
            Reply::Error("NOAUTH Authentication required.".into())
        );
        assert_eq!(parse(b":-12\r\n").unwrap(), Reply::Int(-12));
        assert_eq!(parse(b"$5\r\na\r\nbc\r\n").unwrap(), Reply::Bulk(b"a\r\nbc".to_vec()));
        assert_eq!(parse(b"$-1\r\n").unwrap(), Reply::Nil);
        assert_eq!(parse(b"*-1\r\n").unwrap(), Reply::Nil);
        assert_eq!(
            parse(b"*2\r\n*2\r\n:0\r\n$9\r\n127.0.0.1\r\n+x\r\n").unwrap(),
            Reply::Array(vec![
                Reply::Array(vec![Reply::Int(0), Reply::Bulk(b"127.0.0.1".to_vec())]),
                Reply::Simple("x".into())
            ])
        );
    }

    #[test]
    fn rejects_broken_input() {
        assert!(parse(b"").is_err());
        assert!(parse(b"+PONG").is_err());
        assert!(parse(b"?x\r\n").is_err());
        assert!(parse(b":x\r\n").is_err());
        assert!(parse(b"$3\r\nab").is_err());
        assert!(parse(b"*2\r\n:1\r\n").is_err());
    }

    #[test]
    fn encodes_bulk_strings() {
        assert_eq!(encode(&["SET", "k", ""]), b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n".to_vec());
    }
}
