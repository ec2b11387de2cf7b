//! A proxy gives its port back only once nothing listens there. Alone in its test binary: a
//! thread of the same process that spawns a program (other tests start servers) holds copies of
//! every descriptor between its fork and exec, the port's lock file and the listener included,
//! so a check beside such tests sees the port taken now and then whatever the proxy did.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use rlock_testbed::ports::{claim, is_free, Claim};
use rlock_testbed::resp::{self, Reply};
use rlock_testbed::Server;

#[test]
fn a_proxy_gives_its_port_back_only_once_nothing_listens_there() {
    let s = Server::start().unwrap();
    for _ in 0..20 {
        let p = rlock_testbed::Proxy::start(s.port()).unwrap();
        let port = p.port();
        // A connection through it, so its accept loop has served one.
        assert_eq!(resp::query(port, None, &["PING"]).unwrap(), Reply::Simple("PONG".into()));
        assert!(matches!(claim(port), Claim::Taken), "the port is claimed while the proxy runs");
        drop(p);
        assert!(is_free(port), "port {port} still in use after the proxy was dropped");
        assert!(matches!(claim(port), Claim::Held(_)), "port {port} still claimed");
    }
}
