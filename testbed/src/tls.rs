//! Certificates for TLS servers, made with the `openssl` command: a CA and a server certificate
//! for IP 127.0.0.1 signed by it, valid 2 days, in a temporary directory.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{Error, Result};

/// A CA and a server certificate in a temporary directory (removed when dropped).
pub struct Certs {
    dir: tempfile::TempDir,
}

/// The paths of a [`Certs`]' files, for the servers that use them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The CA certificate clients trust.
    pub ca: PathBuf,
    /// The server certificate (subjectAltName IP:127.0.0.1).
    pub cert: PathBuf,
    /// The server's private key.
    pub key: PathBuf,
}

impl TlsFiles {
    /// `redis-server` arguments that use these files (`--tls-auth-clients no`: clients need no
    /// certificate of their own).
    pub fn server_args(&self) -> Vec<String> {
        let p = |p: &Path| p.to_string_lossy().into_owned();
        vec![
            "--tls-cert-file".into(),
            p(&self.cert),
            "--tls-key-file".into(),
            p(&self.key),
            "--tls-ca-cert-file".into(),
            p(&self.ca),
            "--tls-auth-clients".into(),
            "no".into(),
        ]
    }
}

fn openssl(dir: &Path, args: &[&str]) -> Result<()> {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .map_err(|e| Error::new(format!("cannot run openssl (make deps installs it): {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(Error::new(format!(
            "openssl {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

impl Certs {
    /// Makes a CA and a server certificate for 127.0.0.1.
    pub fn generate() -> Result<Certs> {
        let dir = tempfile::Builder::new().prefix("rlock-testbed-certs-").tempdir()?;
        let d = dir.path();
        let days = ["-days", "2"];
        openssl(
            d,
            &[
                &["req", "-x509", "-newkey", "rsa:2048", "-nodes"][..],
                &days,
                &["-subj", "/CN=rlock-test-ca", "-keyout", "ca.key", "-out", "ca.crt"],
            ]
            .concat(),
        )?;
        openssl(
            d,
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
        )?;
        std::fs::write(d.join("ext.cnf"), "subjectAltName=IP:127.0.0.1\n")?;
        openssl(
            d,
            &[
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
                ][..],
                &days,
                &["-extfile", "ext.cnf", "-out", "server.crt"],
            ]
            .concat(),
        )?;
        Ok(Certs { dir })
    }

    /// The directory holding the files.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The paths of the CA, the server certificate and its key.
    pub fn files(&self) -> TlsFiles {
        TlsFiles {
            ca: self.dir.path().join("ca.crt"),
            cert: self.dir.path().join("server.crt"),
            key: self.dir.path().join("server.key"),
        }
    }

    /// The CA certificate clients trust.
    pub fn ca(&self) -> PathBuf {
        self.files().ca
    }
}
