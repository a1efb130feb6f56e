//! TLS to PostgreSQL (rustls), as libpq's `sslmode` and `sslrootcert` say in the database URL.
//!
//! tokio-postgres knows `sslmode` only as `disable`, `prefer` or `require`, and no `sslrootcert`:
//! both are read here and taken out of the URL before it parses the rest.
//!
//! | `sslmode` | TLS | the server's certificate |
//! |---|---|---|
//! | `disable` | never | |
//! | `allow`, `prefer` (the default) | when the server offers it | checked against `sslrootcert` when given, else not checked |
//! | `require` | always | the same |
//! | `verify-ca` | always | signed by `sslrootcert` (a PEM file; `system` or none: the system's roots) |
//! | `verify-full` | always | that, and made out to the host connected to |

use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{CryptoProvider, verify_tls12_signature, verify_tls13_signature};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{
    CertificateError, ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme,
};
use tokio_postgres::config::SslMode;
use tokio_postgres_rustls::MakeRustlsConnect;

/// How to connect: the URL as tokio-postgres reads it, and the TLS it asks for.
pub(super) type Connect = (tokio_postgres::Config, MakeRustlsConnect);

/// What the server's certificate must be.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Check {
    Nothing,
    Chain,
    ChainAndName,
}

/// Reads `url`; an error says what is wrong with it.
pub(super) fn connect(url: &str) -> Result<Connect, String> {
    let (rest, mode, root) = take_tls_params(url);
    let mut config: tokio_postgres::Config = rest.parse().map_err(|e| format!("{e}"))?;
    let mode = mode.as_deref().unwrap_or("prefer");
    let (ssl, check) = match (mode, root.is_some()) {
        ("disable", _) => (SslMode::Disable, Check::Nothing),
        ("allow" | "prefer", false) => (SslMode::Prefer, Check::Nothing),
        ("allow" | "prefer", true) => (SslMode::Prefer, Check::Chain),
        ("require", false) => (SslMode::Require, Check::Nothing),
        ("require", true) | ("verify-ca", _) => (SslMode::Require, Check::Chain),
        ("verify-full", _) => (SslMode::Require, Check::ChainAndName),
        (other, _) => {
            return Err(format!(
                "sslmode={other} is not one of disable, allow, prefer, require, verify-ca, verify-full"
            ));
        }
    };
    config.ssl_mode(ssl);
    let chain = match check {
        Check::Nothing => None,
        Check::Chain | Check::ChainAndName => {
            let roots = Arc::new(roots(root.as_deref())?);
            let webpki = WebPkiServerVerifier::builder_with_provider(roots, provider())
                .build()
                .map_err(|e| format!("the root certificates cannot be used: {e}"))?;
            Some(webpki)
        }
    };
    let tls = match (check, chain) {
        (Check::ChainAndName, Some(webpki)) => client(webpki)?,
        (_, chain) => client(Arc::new(Lenient { chain, provider: provider() }))?,
    };
    Ok((config, MakeRustlsConnect::new(tls)))
}

/// `url` without `sslmode` and `sslrootcert`, and their values.
fn take_tls_params(url: &str) -> (String, Option<String>, Option<String>) {
    let (mut mode, mut root) = (None, None);
    let mut take = |key: &str, value: String| match key {
        "sslmode" => mode = Some(value),
        "sslrootcert" => root = Some(value),
        _ => {}
    };
    let ours = |key: &str| matches!(key, "sslmode" | "sslrootcert");
    let rest = match url.split_once("://") {
        Some(_) => {
            let Some((base, query)) = url.split_once('?') else {
                return (url.to_owned(), None, None);
            };
            let mut kept = form_urlencoded::Serializer::new(String::new());
            for (key, value) in form_urlencoded::parse(query.as_bytes()) {
                match ours(&key) {
                    true => take(&key, value.into_owned()),
                    false => drop(kept.append_pair(&key, &value)),
                }
            }
            let kept = kept.finish();
            match kept.is_empty() {
                true => base.to_owned(),
                false => format!("{base}?{kept}"),
            }
        }
        // The key=value form.
        None => {
            let mut kept = Vec::new();
            for word in url.split_whitespace() {
                match word.split_once('=') {
                    Some((key, value)) if ours(key) => take(key, value.to_owned()),
                    _ => kept.push(word),
                }
            }
            kept.join(" ")
        }
    };
    (rest, mode, root)
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn client(verifier: Arc<dyn ServerCertVerifier>) -> Result<ClientConfig, String> {
    Ok(ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(verifier)
        .with_no_client_auth())
}

/// The certificates of the PEM file `root`, or (`system` or none) the system's roots.
fn roots(root: Option<&str>) -> Result<RootCertStore, String> {
    let mut store = RootCertStore::empty();
    match root {
        None | Some("system") => {
            let found = rustls_native_certs::load_native_certs();
            if found.certs.is_empty() {
                return Err(format!(
                    "no system root certificates were found ({:?}); name the server's CA with \
                     sslrootcert=/path/to/root.crt",
                    found.errors
                ));
            }
            store.add_parsable_certificates(found.certs);
        }
        Some(path) => {
            let unreadable = |e: &dyn std::fmt::Display| {
                format!("sslrootcert={path} cannot be read as PEM certificates: {e}")
            };
            for cert in CertificateDer::pem_file_iter(path).map_err(|e| unreadable(&e))? {
                store.add(cert.map_err(|e| unreadable(&e))?).map_err(|e| unreadable(&e))?;
            }
            if store.is_empty() {
                return Err(unreadable(&"it holds no certificate"));
            }
        }
    }
    Ok(store)
}

/// The checks rustls' own verifier would not leave out: with no chain (`prefer` and `require`
/// without `sslrootcert`, as libpq) the certificate is taken as it comes; with one
/// (`verify-ca`), the chain is checked but not the name it is made out to. Either way the
/// handshake's signatures are checked against the certificate.
#[derive(Debug)]
struct Lenient {
    chain: Option<Arc<WebPkiServerVerifier>>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for Lenient {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let Some(chain) = &self.chain else { return Ok(ServerCertVerified::assertion()) };
        match chain.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sslmode_and_sslrootcert_are_read_from_either_form_of_url_and_taken_out_of_it() {
        let (rest, mode, root) = take_tls_params(
            "postgres://u:p@db/airlock?application_name=a&sslmode=verify-full&sslrootcert=%2Fetc%2Froot.crt",
        );
        assert_eq!(rest, "postgres://u:p@db/airlock?application_name=a");
        assert_eq!(mode.as_deref(), Some("verify-full"));
        assert_eq!(root.as_deref(), Some("/etc/root.crt"));
        let (rest, mode, root) = take_tls_params("postgres://db/airlock?sslmode=require");
        assert_eq!(
            (rest.as_str(), mode.as_deref(), root),
            ("postgres://db/airlock", Some("require"), None)
        );
        let (rest, mode, _) = take_tls_params("host=db sslmode=disable user=app");
        assert_eq!((rest.as_str(), mode.as_deref()), ("host=db user=app", Some("disable")));
    }

    #[test]
    fn a_mode_libpq_does_not_know_is_refused_with_the_ones_it_does() {
        let Err(error) = connect("postgres://db/airlock?sslmode=always") else { panic!("refused") };
        assert!(error.contains("not one of disable, allow, prefer, require"), "{error}");
        let Err(error) = connect("postgres://db/a?sslmode=verify-ca&sslrootcert=/no/such.crt")
        else {
            panic!("refused")
        };
        assert!(error.contains("sslrootcert=/no/such.crt cannot be read"), "{error}");
    }
}
