//! A throw-away CA and a leaf certificate for `localhost` / `127.0.0.1` that it signed, and a
//! rustls server configuration serving the leaf. Only rcgen and rustls are used here, so
//! egress's own HTTPS tests include this file by path.

use rcgen::{BasicConstraints, Certificate, CertificateParams, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use std::sync::Arc;

pub struct Certs {
    pub ca: Certificate,
    pub leaf: Certificate,
    pub leaf_key: KeyPair,
}

impl Certs {
    pub fn generate() -> Certs {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca = ca_params.self_signed(&ca_key).unwrap();
        let leaf_key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap()
            .signed_by(&leaf_key, &ca, &ca_key)
            .unwrap();
        Certs { ca, leaf, leaf_key }
    }

    /// A TLS server configuration presenting the leaf (ring provider, no client auth).
    pub fn server_config(&self) -> rustls::ServerConfig {
        rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(self.leaf.der().to_vec())],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(self.leaf_key.serialize_der())),
        )
        .unwrap()
    }
}
