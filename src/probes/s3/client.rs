//! The S3 client the probe measures with: credentials from flags, the environment or an AWS
//! profile (never printed), a custom CA bundle for internal TLS, path-style addressing, request
//! checksums only when required (S3-compatible servers reject the SDK's newer default, and they
//! cost CPU while measuring), no retries (a retry would hide the latency it cost), and always a
//! direct connection: `HTTP(S)_PROXY` set in the engineer's shell (for a package mirror, say)
//! is ignored, so the figures are the store's, never a proxy's.

use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use aws_sdk_s3::config::retry::RetryConfig;
use aws_sdk_s3::config::timeout::TimeoutConfig;
use aws_sdk_s3::config::{
    BehaviorVersion, Credentials, Region, RequestChecksumCalculation, ResponseChecksumValidation,
    StalledStreamProtectionConfig,
};
use aws_smithy_http_client::tls::{self, TlsContext, TrustStore, rustls_provider::CryptoMode};

/// Where credentials came from (what the report says instead of the keys).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CredentialSource {
    /// `--access-key`/`--secret-key`.
    Flags,
    /// `AWS_ACCESS_KEY_ID`/`AWS_SECRET_ACCESS_KEY`.
    Environment,
    /// A profile of a shared credentials file.
    Profile {
        /// Profile name.
        name: String,
        /// The file.
        file: PathBuf,
    },
}

impl fmt::Display for CredentialSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CredentialSource::Flags => write!(f, "flags"),
            CredentialSource::Environment => write!(f, "environment"),
            CredentialSource::Profile { name, file } => {
                write!(f, "profile {name} ({})", file.display())
            }
        }
    }
}

/// S3 keys. `Debug` shows neither key.
#[derive(Clone)]
pub struct S3Credentials {
    /// Access key id.
    pub access_key_id: String,
    /// Secret access key.
    pub secret_access_key: String,
    /// Session token (temporary credentials).
    pub session_token: Option<String>,
    /// Where they came from.
    pub source: CredentialSource,
}

impl fmt::Debug for S3Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("S3Credentials")
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

/// What the credentials resolver may read: flags, environment, the home directory.
#[derive(Debug, Clone, Default)]
pub struct CredentialInputs {
    /// `--access-key`.
    pub access_key_flag: Option<String>,
    /// `--secret-key`.
    pub secret_key_flag: Option<String>,
    /// `--profile`.
    pub profile_flag: Option<String>,
}

/// Why no credentials could be had.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CredentialError {
    /// Only one half of a key pair was given.
    #[error("{0} was given without {1}")]
    HalfPair(&'static str, &'static str),
    /// The profile was asked for but is not in the file.
    #[error("profile [{name}] not found in {file}")]
    NoProfile {
        /// Profile.
        name: String,
        /// File searched.
        file: String,
    },
    /// The profile lacks a key.
    #[error("profile [{name}] in {file} has no {key}")]
    ProfileMissingKey {
        /// Profile.
        name: String,
        /// File.
        file: String,
        /// The key.
        key: &'static str,
    },
    /// The credentials file could not be read.
    #[error("cannot read {file}: {reason}")]
    Unreadable {
        /// File.
        file: String,
        /// Why.
        reason: String,
    },
    /// Nothing anywhere.
    #[error(
        "no S3 credentials: give --access-key and --secret-key, set AWS_ACCESS_KEY_ID and \
         AWS_SECRET_ACCESS_KEY, or name a --profile of ~/.aws/credentials"
    )]
    None,
}

/// Resolves credentials: flags, then environment, then a profile. `env` reads a variable.
pub fn resolve_credentials(
    inputs: &CredentialInputs,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<S3Credentials, CredentialError> {
    let nonempty = |v: Option<String>| v.filter(|s| !s.is_empty());
    match (
        nonempty(inputs.access_key_flag.clone()),
        nonempty(inputs.secret_key_flag.clone()),
    ) {
        (Some(access_key_id), Some(secret_access_key)) => {
            return Ok(S3Credentials {
                access_key_id,
                secret_access_key,
                session_token: None,
                source: CredentialSource::Flags,
            });
        }
        (Some(_), None) => return Err(CredentialError::HalfPair("--access-key", "--secret-key")),
        (None, Some(_)) => return Err(CredentialError::HalfPair("--secret-key", "--access-key")),
        (None, None) => {}
    }
    if inputs.profile_flag.is_none() {
        match (
            nonempty(env("AWS_ACCESS_KEY_ID")),
            nonempty(env("AWS_SECRET_ACCESS_KEY")),
        ) {
            (Some(access_key_id), Some(secret_access_key)) => {
                return Ok(S3Credentials {
                    access_key_id,
                    secret_access_key,
                    session_token: nonempty(env("AWS_SESSION_TOKEN")),
                    source: CredentialSource::Environment,
                });
            }
            (Some(_), None) => {
                return Err(CredentialError::HalfPair(
                    "AWS_ACCESS_KEY_ID",
                    "AWS_SECRET_ACCESS_KEY",
                ));
            }
            (None, Some(_)) => {
                return Err(CredentialError::HalfPair(
                    "AWS_SECRET_ACCESS_KEY",
                    "AWS_ACCESS_KEY_ID",
                ));
            }
            (None, None) => {}
        }
    }
    let file = nonempty(env("AWS_SHARED_CREDENTIALS_FILE"))
        .map(PathBuf::from)
        .or_else(|| nonempty(env("HOME")).map(|h| Path::new(&h).join(".aws/credentials")));
    let explicit = inputs.profile_flag.is_some() || env("AWS_PROFILE").is_some();
    let name = inputs
        .profile_flag
        .clone()
        .or_else(|| nonempty(env("AWS_PROFILE")))
        .unwrap_or_else(|| "default".into());
    let Some(file) = file else {
        return Err(CredentialError::None);
    };
    let text = match crate::config::read_file_bounded(&file, crate::config::MAX_CONFIG_BYTES) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !explicit => {
            return Err(CredentialError::None);
        }
        Err(e) => {
            return Err(CredentialError::Unreadable {
                file: file.display().to_string(),
                reason: e.to_string(),
            });
        }
    };
    match profile_keys(&text, &name) {
        None if explicit => Err(CredentialError::NoProfile {
            name,
            file: file.display().to_string(),
        }),
        None => Err(CredentialError::None),
        Some(keys) => {
            let get = |k: &str| {
                keys.iter()
                    .find(|(key, _)| key == k)
                    .map(|(_, v)| v.clone())
            };
            let missing = |key| CredentialError::ProfileMissingKey {
                name: name.clone(),
                file: file.display().to_string(),
                key,
            };
            Ok(S3Credentials {
                access_key_id: get("aws_access_key_id")
                    .ok_or_else(|| missing("aws_access_key_id"))?,
                secret_access_key: get("aws_secret_access_key")
                    .ok_or_else(|| missing("aws_secret_access_key"))?,
                session_token: get("aws_session_token"),
                source: CredentialSource::Profile {
                    name: name.clone(),
                    file: file.clone(),
                },
            })
        }
    }
}

/// The `key = value` pairs of one profile of an AWS INI file (`[name]` or `[profile name]`).
fn profile_keys(text: &str, name: &str) -> Option<Vec<(String, String)>> {
    let mut found = None;
    let mut current: Option<String> = None;
    for raw in text.lines() {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') || line.starts_with(';') {
            continue;
        }
        if let Some(section) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            let section = section.trim();
            let section = section.strip_prefix("profile ").unwrap_or(section).trim();
            current = Some(section.to_string());
            if section == name && found.is_none() {
                found = Some(Vec::new());
            }
            continue;
        }
        if current.as_deref() == Some(name)
            && let Some(keys) = found.as_mut()
            && let Some((k, v)) = line.split_once('=')
        {
            keys.push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
        }
    }
    found
}

/// Where the probe connects and how long it waits.
#[derive(Debug, Clone)]
pub struct S3Endpoint {
    /// `http(s)://host:port`, no credentials in it.
    pub url: String,
    /// Region the signature names (`us-east-1` suits MinIO and SeaweedFS).
    pub region: String,
    /// PEM bundle of CAs to trust instead of the system's.
    pub ca_bundle: Option<PathBuf>,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Longest wait for a response's headers, and between two chunks of a body.
    pub read_timeout: Duration,
}

/// Why the client could not be built.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// The endpoint is not an http(s) URL.
    #[error("endpoint {0:?} is not an http:// or https:// URL")]
    BadEndpoint(String),
    /// The endpoint URL carries a user or password.
    #[error(
        "endpoint URL must not carry credentials; give keys with flags, environment or a profile"
    )]
    CredentialsInUrl,
    /// The CA bundle could not be read.
    #[error("CA bundle {path}: {reason}")]
    CaBundle {
        /// File.
        path: String,
        /// Why.
        reason: String,
    },
}

/// How the bytes travel, said plainly: this probe speaks S3 over HTTP. S3 over RDMA needs the
/// vendor's RDMA client, so even an RDMA-capable endpoint is measured on its HTTP path.
pub fn transfer_path(url: &str) -> &'static str {
    if url.starts_with("https://") {
        "S3 over HTTPS (TCP; not RDMA)"
    } else {
        "S3 over HTTP (TCP; not RDMA)"
    }
}

/// Checks the endpoint URL and returns it without a trailing slash.
pub fn check_endpoint(url: &str) -> Result<String, ClientError> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))
        .ok_or_else(|| ClientError::BadEndpoint(url.to_string()))?;
    let authority = rest.split('/').next().unwrap_or("");
    if authority.is_empty() {
        return Err(ClientError::BadEndpoint(url.to_string()));
    }
    if authority.contains('@') {
        return Err(ClientError::CredentialsInUrl);
    }
    Ok(url.trim_end_matches('/').to_string())
}

/// Builds the SDK client. Must be called inside a tokio runtime.
pub fn build_client(
    endpoint: &S3Endpoint,
    creds: &S3Credentials,
) -> Result<aws_sdk_s3::Client, ClientError> {
    let url = check_endpoint(&endpoint.url)?;
    let trust = match &endpoint.ca_bundle {
        Some(path) => {
            let pem = crate::config::read_file_bounded(path, crate::config::MAX_CONFIG_BYTES)
                .map(String::into_bytes)
                .map_err(|e| ClientError::CaBundle {
                    path: path.display().to_string(),
                    reason: e.to_string(),
                })?;
            if !String::from_utf8_lossy(&pem).contains("-----BEGIN CERTIFICATE-----") {
                return Err(ClientError::CaBundle {
                    path: path.display().to_string(),
                    reason: "no PEM certificate in it".into(),
                });
            }
            TrustStore::empty()
                .with_native_roots(false)
                .with_pem_certificate(pem)
        }
        None => TrustStore::default(),
    };
    let tls_context = TlsContext::builder()
        .with_trust_store(trust)
        .build()
        .map_err(|e| ClientError::CaBundle {
            path: endpoint
                .ca_bundle
                .as_ref()
                .map_or_else(|| "system roots".into(), |p| p.display().to_string()),
            reason: e.to_string(),
        })?;
    let http_client = aws_smithy_http_client::Builder::new()
        .tls_provider(tls::Provider::Rustls(CryptoMode::AwsLc))
        .tls_context(tls_context)
        .build_https();
    let credentials = Credentials::new(
        creds.access_key_id.clone(),
        creds.secret_access_key.clone(),
        creds.session_token.clone(),
        None,
        "burnin",
    );
    let config = aws_sdk_s3::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(url)
        .region(Region::new(endpoint.region.clone()))
        .credentials_provider(credentials)
        .force_path_style(true)
        .request_checksum_calculation(RequestChecksumCalculation::WhenRequired)
        .response_checksum_validation(ResponseChecksumValidation::WhenRequired)
        .retry_config(RetryConfig::disabled())
        // Our own per-chunk timeout watches bodies; the SDK's stall guard would fire on a
        // loaded server and call it a different error.
        .stalled_stream_protection(StalledStreamProtectionConfig::disabled())
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(endpoint.connect_timeout)
                .read_timeout(endpoint.read_timeout)
                .build(),
        )
        .http_client(http_client)
        .build();
    Ok(aws_sdk_s3::Client::from_conf(config))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> + use<> {
        let map: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| map.get(k).cloned()
    }

    #[test]
    fn flags_win_over_environment() {
        let inputs = CredentialInputs {
            access_key_flag: Some("AKF".into()),
            secret_key_flag: Some("SKF".into()),
            profile_flag: None,
        };
        let env = env_of(&[
            ("AWS_ACCESS_KEY_ID", "AKE"),
            ("AWS_SECRET_ACCESS_KEY", "SKE"),
        ]);
        let c = resolve_credentials(&inputs, &env).expect("flags");
        assert_eq!(
            (c.access_key_id.as_str(), &c.source),
            ("AKF", &CredentialSource::Flags)
        );
        assert!(
            !format!("{c:?}").contains("SKF"),
            "Debug must not show the secret"
        );
    }

    #[test]
    fn environment_then_half_pairs_are_errors() {
        let env = env_of(&[
            ("AWS_ACCESS_KEY_ID", "AKE"),
            ("AWS_SECRET_ACCESS_KEY", "SKE"),
            ("AWS_SESSION_TOKEN", "TOK"),
        ]);
        let c = resolve_credentials(&CredentialInputs::default(), &env).expect("env");
        assert_eq!(c.source, CredentialSource::Environment);
        assert_eq!(c.session_token.as_deref(), Some("TOK"));
        let half = CredentialInputs {
            access_key_flag: Some("AKF".into()),
            ..Default::default()
        };
        assert_eq!(
            resolve_credentials(&half, &env).unwrap_err(),
            CredentialError::HalfPair("--access-key", "--secret-key")
        );
        let env = env_of(&[("AWS_SECRET_ACCESS_KEY", "SKE")]);
        assert!(matches!(
            resolve_credentials(&CredentialInputs::default(), &env),
            Err(CredentialError::HalfPair("AWS_SECRET_ACCESS_KEY", _))
        ));
    }

    #[test]
    fn profiles_from_the_shared_file() {
        let dir = std::env::temp_dir().join(format!("burnin-creds-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let file = dir.join("credentials");
        std::fs::write(
            &file,
            "# site keys\n[default]\naws_access_key_id = AKD\naws_secret_access_key = SKD\n\n\
             [profile aistor]\nAWS_ACCESS_KEY_ID=AKS\naws_secret_access_key= SKS \n\
             [broken]\naws_access_key_id = AKB\n",
        )
        .expect("write");
        let f = file.to_string_lossy().to_string();
        let env = env_of(&[("AWS_SHARED_CREDENTIALS_FILE", &f)]);
        let c = resolve_credentials(&CredentialInputs::default(), &env).expect("default");
        assert_eq!(c.access_key_id, "AKD");
        let named = |p: &str| CredentialInputs {
            profile_flag: Some(p.into()),
            ..Default::default()
        };
        let c = resolve_credentials(&named("aistor"), &env).expect("aistor");
        assert_eq!(
            (c.access_key_id.as_str(), c.secret_access_key.as_str()),
            ("AKS", "SKS")
        );
        assert!(matches!(
            resolve_credentials(&named("nope"), &env),
            Err(CredentialError::NoProfile { .. })
        ));
        assert!(matches!(
            resolve_credentials(&named("broken"), &env),
            Err(CredentialError::ProfileMissingKey {
                key: "aws_secret_access_key",
                ..
            })
        ));
        // A profile named in the environment beats the environment's keys only when asked.
        let env2 = env_of(&[
            ("AWS_SHARED_CREDENTIALS_FILE", &f),
            ("AWS_PROFILE", "aistor"),
        ]);
        let c = resolve_credentials(&CredentialInputs::default(), &env2).expect("AWS_PROFILE");
        assert_eq!(c.access_key_id, "AKS");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn nothing_anywhere_says_how_to_give_keys() {
        let env = env_of(&[("HOME", "/nonexistent-burnin-home")]);
        let e = resolve_credentials(&CredentialInputs::default(), &env).unwrap_err();
        assert_eq!(e, CredentialError::None);
        assert!(e.to_string().contains("--access-key"));
    }

    #[test]
    fn endpoints_are_checked() {
        assert_eq!(
            check_endpoint("http://127.0.0.1:9000/").expect("ok"),
            "http://127.0.0.1:9000"
        );
        assert!(matches!(
            check_endpoint("127.0.0.1:9000"),
            Err(ClientError::BadEndpoint(_))
        ));
        assert!(matches!(
            check_endpoint("http://"),
            Err(ClientError::BadEndpoint(_))
        ));
        assert!(matches!(
            check_endpoint("https://ak:sk@minio:9000"),
            Err(ClientError::CredentialsInUrl)
        ));
        assert_eq!(transfer_path("https://x"), "S3 over HTTPS (TCP; not RDMA)");
    }
}
