//! HTTPS when `GATEWAY_TLS_CERT_FILE` and `GATEWAY_TLS_KEY_FILE` are set (docs/operations.md
//! "TLS"): the certificate and key read from PEM files, rustls with its ring provider (the one
//! fred already links), ALPN offering `h2` and `http/1.1`, and the certificate reloaded when
//! its files change ([`Tls::watch`]).

use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use rustls::crypto::CryptoProvider;
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls::ServerConfig;
use tokio_rustls::TlsAcceptor;

use crate::config::{read_file, Invalid};

/// How often the certificate files are checked for changes.
const WATCH_EVERY: Duration = Duration::from_secs(2);

/// The server's TLS: one rustls configuration whose certificate is swapped in place when its
/// files change, so connections made after a reload get the new one and none is dropped.
#[derive(Debug, Clone)]
pub struct Tls {
    config: Arc<ServerConfig>,
    current: Arc<Current>,
}

impl Tls {
    /// Reads the certificate chain and key. `Err` names the setting at fault: a file that
    /// cannot be read, one with no PEM certificate or key in it, or a key that does not match
    /// the certificate.
    pub fn load(cert: PathBuf, key: PathBuf) -> Result<Self, Invalid> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let files = Files { cert, key };
        let pair = files.read(&provider)?;
        let current = Arc::new(Current {
            pair: RwLock::new(pair),
            files,
            provider: provider.clone(),
        });
        let mut config = ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| {
                Invalid::new(
                    "GATEWAY_TLS_CERT_FILE",
                    format!("no TLS version to serve it with: {e}"),
                    "write the path of a certificate rustls can serve",
                )
            })?
            .with_no_client_auth()
            .with_cert_resolver(current.clone());
        config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Ok(Self {
            config: Arc::new(config),
            current,
        })
    }

    pub(super) fn acceptor(&self) -> TlsAcceptor {
        TlsAcceptor::from(self.config.clone())
    }

    /// On `SIGHUP`, and when either file changes (checked every 2 s: modification time and
    /// length), reads the pair again: a good pair replaces the certificate for new
    /// connections, a bad one (unreadable, not PEM, a key that does not match) is logged and
    /// the certificate served so far is kept. Needs a Tokio runtime; the task ends with the
    /// last clone of this `Tls`.
    pub fn watch(&self) {
        let files = vec![
            self.current.files.cert.clone(),
            self.current.files.key.clone(),
        ];
        crate::reload::watch(
            files,
            WATCH_EVERY,
            Arc::downgrade(&self.current),
            |current: &Current| {
                match current.files.read(&current.provider) {
                Ok(pair) => {
                    *current.pair.write().unwrap_or_else(PoisonError::into_inner) = pair;
                    tracing::info!(
                        cert = %current.files.cert.display(),
                        "TLS certificate reloaded"
                    );
                }
                Err(error) => tracing::warn!(
                    setting = error.var(),
                    error = error.what(),
                    "TLS certificate files changed but cannot be used; still serving the previous certificate"
                ),
            }
            },
        );
    }
}

/// The certificate served now, and where it is read from.
#[derive(Debug)]
struct Current {
    pair: RwLock<Arc<CertifiedKey>>,
    files: Files,
    provider: Arc<CryptoProvider>,
}

impl ResolvesServerCert for Current {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(
            self.pair
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
        )
    }
}

#[derive(Debug)]
struct Files {
    cert: PathBuf,
    key: PathBuf,
}

impl Files {
    fn read(&self, provider: &CryptoProvider) -> Result<Arc<CertifiedKey>, Invalid> {
        const CERT: &str = "GATEWAY_TLS_CERT_FILE";
        const KEY: &str = "GATEWAY_TLS_KEY_FILE";
        let (cert_file, key_file) = (self.cert.display(), self.key.display());
        let certs = read_file(CERT, &self.cert, "PEM certificate chain")?;
        let write_cert = "write the path of a PEM certificate chain, leaf first \
                          (-----BEGIN CERTIFICATE-----)";
        let certs = CertificateDer::pem_slice_iter(&certs)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| {
                Invalid::new(
                    CERT,
                    format!("{cert_file} is not a PEM certificate chain: {e}"),
                    write_cert,
                )
            })?;
        if certs.is_empty() {
            return Err(Invalid::new(
                CERT,
                format!("{cert_file} holds no certificate"),
                write_cert,
            ));
        }
        let key = read_file(KEY, &self.key, "PEM private key")?;
        let write_key = "write the path of the certificate's PEM private key (PKCS#8, PKCS#1 \
                         RSA or SEC1 EC)";
        let key = PrivateKeyDer::from_pem_slice(&key).map_err(|e| match e {
            pem::Error::NoItemsFound => {
                Invalid::new(KEY, format!("{key_file} holds no private key"), write_key)
            }
            e => Invalid::new(
                KEY,
                format!("{key_file} is not a PEM private key: {e}"),
                write_key,
            ),
        })?;
        let key = provider
            .key_provider
            .load_private_key(key)
            .map_err(|e| Invalid::new(KEY, format!("{key_file}: {e}"), write_key))?;
        let pair = CertifiedKey::new(certs, key);
        match pair.keys_match() {
            // Unknown: the key cannot say its public half; rustls's own loading accepts that.
            Ok(()) | Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::Unknown)) => {
                Ok(Arc::new(pair))
            }
            Err(rustls::Error::InconsistentKeys(rustls::InconsistentKeys::KeyMismatch)) => {
                Err(Invalid::new(
                    KEY,
                    format!("{key_file} does not match the certificate in {cert_file}"),
                    "write the path of the private key the certificate was issued for",
                ))
            }
            Err(e) => Err(Invalid::new(CERT, format!("{cert_file}: {e}"), write_cert)),
        }
    }
}
