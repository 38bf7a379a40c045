//! Why a request failed, in the classes an engineer acts on: a timeout, 403 (keys or policy),
//! 404 (bucket or object), 5xx (the server), a reset or refused connection (the network or a
//! dead server), other 4xx, and the rest. Every failure is counted in its class; none is hidden.

use std::fmt;
use std::io;

use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use serde::{Deserialize, Serialize};

/// The class of a failed request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorClass {
    /// Connect, read or operation timeout.
    Timeout,
    /// HTTP 403: wrong keys, a bad signature or a policy that denies it.
    Forbidden,
    /// HTTP 404: no such bucket or object.
    NotFound,
    /// HTTP 5xx: the server failed (503 SlowDown included).
    ServerError,
    /// The connection was reset, closed early or broke mid-transfer.
    Reset,
    /// Nobody listens at the endpoint (connection refused, no route).
    Refused,
    /// Any other HTTP 4xx.
    ClientError,
    /// Anything else (TLS, DNS, a response we could not read).
    Other,
}

impl ErrorClass {
    /// Every class, in the order tables print them.
    pub const ALL: [ErrorClass; 8] = [
        ErrorClass::Timeout,
        ErrorClass::Forbidden,
        ErrorClass::NotFound,
        ErrorClass::ServerError,
        ErrorClass::Reset,
        ErrorClass::Refused,
        ErrorClass::ClientError,
        ErrorClass::Other,
    ];

    /// Short name for tables and JSON keys.
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Timeout => "timeout",
            ErrorClass::Forbidden => "403",
            ErrorClass::NotFound => "404",
            ErrorClass::ServerError => "5xx",
            ErrorClass::Reset => "reset",
            ErrorClass::Refused => "refused",
            ErrorClass::ClientError => "4xx",
            ErrorClass::Other => "other",
        }
    }
}

/// One failed request: its class and what the server or the connection said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// Class.
    pub class: ErrorClass,
    /// HTTP status, when a response came.
    pub status: Option<u16>,
    /// S3 error code (`InvalidAccessKeyId`, `NoSuchBucket`, `SlowDown`, …), when the body had one.
    pub code: Option<String>,
    /// One line of detail, credentials removed.
    pub detail: String,
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.status, &self.code) {
            (Some(s), Some(c)) => write!(f, "HTTP {s} {c}: {}", self.detail),
            (Some(s), None) => write!(f, "HTTP {s}: {}", self.detail),
            (None, _) => write!(f, "{}: {}", self.class.name(), self.detail),
        }
    }
}

/// The class of a failure from what is known of it: the HTTP status when a response came,
/// otherwise whether it timed out and the I/O error underneath.
pub fn classify(
    status: Option<u16>,
    timed_out: bool,
    io_kind: Option<io::ErrorKind>,
) -> ErrorClass {
    if let Some(s) = status {
        return match s {
            403 => ErrorClass::Forbidden,
            404 => ErrorClass::NotFound,
            408 => ErrorClass::Timeout,
            500..=599 => ErrorClass::ServerError,
            400..=499 => ErrorClass::ClientError,
            _ => ErrorClass::Other,
        };
    }
    if timed_out {
        return ErrorClass::Timeout;
    }
    match io_kind {
        Some(io::ErrorKind::TimedOut) => ErrorClass::Timeout,
        Some(
            io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
            | io::ErrorKind::BrokenPipe
            | io::ErrorKind::UnexpectedEof
            | io::ErrorKind::NotConnected,
        ) => ErrorClass::Reset,
        Some(
            io::ErrorKind::ConnectionRefused
            | io::ErrorKind::AddrNotAvailable
            | io::ErrorKind::HostUnreachable
            | io::ErrorKind::NetworkUnreachable,
        ) => ErrorClass::Refused,
        _ => ErrorClass::Other,
    }
}

/// Walks an error's sources for the I/O error underneath and a one-line description.
fn chain(err: &(dyn std::error::Error + 'static)) -> (Option<io::ErrorKind>, String) {
    let mut kind = None;
    let mut parts: Vec<String> = Vec::new();
    let mut cur: Option<&(dyn std::error::Error + 'static)> = Some(err);
    while let Some(e) = cur {
        if kind.is_none()
            && let Some(ioe) = e.downcast_ref::<io::Error>()
        {
            kind = Some(ioe.kind());
        }
        let text = e.to_string();
        if !text.is_empty() && !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        cur = e.source();
    }
    (kind, parts.join(": "))
}

/// The class hyper's words give when no `io::Error` is underneath (it reports an early close
/// as "connection closed before message completed").
fn class_from_words(text: &str) -> Option<ErrorClass> {
    let t = text.to_ascii_lowercase();
    if t.contains("timed out") || t.contains("timeout") {
        Some(ErrorClass::Timeout)
    } else if t.contains("refused") {
        Some(ErrorClass::Refused)
    } else if t.contains("reset")
        || t.contains("connection closed")
        || t.contains("broken pipe")
        || t.contains("incomplete")
        || t.contains("unexpected eof")
    {
        Some(ErrorClass::Reset)
    } else {
        None
    }
}

/// A failure from an error without an HTTP response (a body stream broke, a local read failed).
pub fn from_error(err: &(dyn std::error::Error + 'static)) -> Failure {
    without_response(err, false)
}

/// A failure without an HTTP response: the I/O error underneath decides, else hyper's words.
fn without_response(err: &(dyn std::error::Error + 'static), timed_out: bool) -> Failure {
    let (kind, detail) = chain(err);
    let mut class = classify(None, timed_out, kind);
    if class == ErrorClass::Other
        && let Some(c) = class_from_words(&detail)
    {
        class = c;
    }
    Failure {
        class,
        status: None,
        code: None,
        detail,
    }
}

/// A failure from an S3 operation's error.
pub fn from_sdk<E, R>(err: &SdkError<E, R>) -> Failure
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: fmt::Debug + HasStatus + 'static,
{
    match err {
        SdkError::ServiceError(service) => {
            let status = service.raw().status_code();
            let meta = service.err();
            let code = meta.code().map(str::to_string);
            let detail = match (meta.message(), status) {
                (Some(m), _) => m.to_string(),
                // A success status with a body that is no S3 answer (S3 itself may answer
                // CompleteMultipartUpload 200 and fail in the body): what the body said.
                (None, 200..=299) => format!(
                    "the server answered {status} with a body that is no S3 answer: {}",
                    service
                        .raw()
                        .body_excerpt()
                        .unwrap_or_else(|| "(empty)".into())
                ),
                (None, _) => status_words(status),
            };
            Failure {
                class: classify(Some(status), false, None),
                status: Some(status),
                code,
                detail,
            }
        }
        SdkError::TimeoutError(_) => Failure {
            class: ErrorClass::Timeout,
            status: None,
            code: None,
            detail: "the operation timed out".into(),
        },
        SdkError::ResponseError(resp) => {
            let status = resp.raw().status_code();
            let (_, detail) = chain(err);
            Failure {
                class: classify(Some(status), false, None),
                status: Some(status),
                code: None,
                detail,
            }
        }
        SdkError::DispatchFailure(dispatch) => without_response(err, dispatch.is_timeout()),
        _ => {
            let (_, detail) = chain(err);
            Failure {
                class: ErrorClass::Other,
                status: None,
                code: None,
                detail,
            }
        }
    }
}

fn status_words(status: u16) -> String {
    match status {
        403 => "forbidden (no error body: a HEAD request, or a proxy answered)".into(),
        404 => "not found".into(),
        s => format!("status {s}"),
    }
}

/// The HTTP status of a raw response (the SDK's response type, or a test's).
pub trait HasStatus {
    /// Status code.
    fn status_code(&self) -> u16;

    /// The start of the body as one line of text, where the response still holds it.
    fn body_excerpt(&self) -> Option<String> {
        None
    }
}

impl HasStatus for aws_sdk_s3::config::http::HttpResponse {
    fn status_code(&self) -> u16 {
        self.status().as_u16()
    }

    fn body_excerpt(&self) -> Option<String> {
        let bytes = self.body().bytes()?;
        let text = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]);
        let line =
            crate::model::strip_controls(&text.split_whitespace().collect::<Vec<_>>().join(" "));
        (!line.is_empty()).then(|| crate::model::excerpt(&line))
    }
}

/// Removes secrets from text before it is printed or recorded. An access key id is not a
/// secret, but servers echo it in messages and records outlive the site visit: it goes too.
#[derive(Debug, Clone, Default)]
pub struct Redactor {
    secrets: Vec<String>,
}

impl Redactor {
    /// A redactor for these strings (empty ones are ignored).
    pub fn new(secrets: impl IntoIterator<Item = String>) -> Self {
        Self {
            secrets: secrets.into_iter().filter(|s| s.len() >= 4).collect(),
        }
    }

    /// The text with every secret replaced by `***`.
    pub fn clean(&self, text: &str) -> String {
        let mut out = text.to_string();
        for s in &self.secrets {
            out = out.replace(s.as_str(), "***");
        }
        out
    }

    /// The failure with its detail and code cleaned.
    pub fn failure(&self, mut f: Failure) -> Failure {
        f.detail = self.clean(&f.detail);
        f.code = f.code.map(|c| self.clean(&c));
        f
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_classes() {
        assert_eq!(classify(Some(403), false, None), ErrorClass::Forbidden);
        assert_eq!(classify(Some(404), true, None), ErrorClass::NotFound);
        assert_eq!(classify(Some(503), false, None), ErrorClass::ServerError);
        assert_eq!(classify(Some(400), false, None), ErrorClass::ClientError);
        assert_eq!(classify(Some(408), false, None), ErrorClass::Timeout);
        assert_eq!(classify(Some(302), false, None), ErrorClass::Other);
    }

    #[test]
    fn io_kinds_map_to_classes() {
        use io::ErrorKind as K;
        assert_eq!(classify(None, true, None), ErrorClass::Timeout);
        assert_eq!(
            classify(None, false, Some(K::TimedOut)),
            ErrorClass::Timeout
        );
        for k in [K::ConnectionReset, K::BrokenPipe, K::UnexpectedEof] {
            assert_eq!(classify(None, false, Some(k)), ErrorClass::Reset, "{k:?}");
        }
        assert_eq!(
            classify(None, false, Some(K::ConnectionRefused)),
            ErrorClass::Refused
        );
        assert_eq!(
            classify(None, false, Some(K::PermissionDenied)),
            ErrorClass::Other
        );
        assert_eq!(classify(None, false, None), ErrorClass::Other);
    }

    #[derive(Debug)]
    struct Wrapper(io::Error);
    impl fmt::Display for Wrapper {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "body stream failed")
        }
    }
    impl std::error::Error for Wrapper {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.0)
        }
    }

    #[test]
    fn the_io_error_underneath_decides() {
        let e = Wrapper(io::Error::new(io::ErrorKind::ConnectionReset, "peer reset"));
        let f = from_error(&e);
        assert_eq!(f.class, ErrorClass::Reset);
        assert_eq!(f.detail, "body stream failed: peer reset");
    }

    #[test]
    fn hyper_words_give_the_class_when_no_io_error_is_underneath() {
        let e = io::Error::other("connection closed before message completed");
        assert_eq!(from_error(&e).class, ErrorClass::Reset);
        let e = io::Error::other("tcp connect error: Connection refused (os error 111)");
        assert_eq!(from_error(&e).class, ErrorClass::Refused);
    }

    #[test]
    fn redactor_removes_keys_from_messages() {
        let r = Redactor::new([
            "AKIAEXAMPLE".to_string(),
            "s3cr3tkey".to_string(),
            String::new(),
        ]);
        let f = Failure {
            class: ErrorClass::Forbidden,
            status: Some(403),
            code: Some("InvalidAccessKeyId".into()),
            detail: "The access key AKIAEXAMPLE does not exist (s3cr3tkey)".into(),
        };
        let clean = r.failure(f);
        assert_eq!(clean.detail, "The access key *** does not exist (***)");
        assert_eq!(
            clean.to_string(),
            "HTTP 403 InvalidAccessKeyId: The access key *** does not exist (***)"
        );
    }
}
