//! A client of Prometheus's HTTP API (`/api/v1/query`, `/api/v1/query_range`): the site's
//! credentials (bearer token or basic auth from files, a CA bundle), a timeout, and answers
//! decoded into label sets and numbers. Every failure is one line naming the server and what it
//! said, fit to stand as a node's "unreachable" reason.

use std::time::Duration;

use serde::Deserialize;
use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};

use crate::config::inventory::PrometheusSpec;
use crate::model::UnixMillis;
use crate::model::excerpt;

/// Why a question to Prometheus got no answer. Each reads as one line naming the server, fit
/// to stand as a node's "unreachable" reason.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum PromError {
    /// A file named in `[prometheus]` (token, password, CA bundle) could not be used.
    #[error("[prometheus] {setting} {path}: {reason}")]
    Setting {
        /// The setting that names the file.
        setting: &'static str,
        /// The file.
        path: String,
        /// What was wrong with it.
        reason: String,
    },
    /// The HTTP client could not be made, or the URL not formed.
    #[error("Prometheus {server}: {reason}")]
    Client {
        /// The server's base URL.
        server: String,
        /// What failed.
        reason: String,
    },
    /// The connection or the transfer failed.
    #[error("Prometheus {server}: {doing}{reason}")]
    Transport {
        /// The server's base URL.
        server: String,
        /// What was under way ("" for the request itself).
        doing: &'static str,
        /// The transport's reason.
        reason: String,
    },
    /// The answer grew past [`MAX_ANSWER_BYTES`], or the answers of one poll together past
    /// their [`ReadBudget`].
    #[error("Prometheus {server}: an answer (or one poll's answers together) over {} MiB: narrow [prometheus] selector", MAX_ANSWER_BYTES >> 20)]
    TooLarge {
        /// The server's base URL.
        server: String,
    },
    /// HTTP 401 or 403: the credentials.
    #[error(
        "Prometheus {server} refused the query (HTTP {code}): check bearer_token_file or basic auth"
    )]
    Refused {
        /// The server's base URL.
        server: String,
        /// The HTTP status.
        code: u16,
    },
    /// Another HTTP status than success.
    #[error("Prometheus {server} answered HTTP {code}")]
    Status {
        /// The server's base URL.
        server: String,
        /// The HTTP status.
        code: u16,
    },
    /// The API's own error answer.
    #[error("{server}: {kind} {message}")]
    Api {
        /// Who answered, as the caller named it.
        server: String,
        /// The API's `errorType`, cut short.
        kind: String,
        /// The API's `error`, cut short.
        message: String,
    },
    /// Something that is not the Prometheus API answered (a proxy's page, a file server).
    #[error("{server} answered something that is not the Prometheus API ({reason}): {start}")]
    NotApi {
        /// Who answered, as the caller named it.
        server: String,
        /// The decoder's reason, cut short.
        reason: String,
        /// The answer's first bytes.
        start: String,
    },
    /// An answer of a kind other than vector or matrix.
    #[error("{server}: answered a {got} where a vector or matrix was asked")]
    WrongShape {
        /// Who answered, as the caller named it.
        server: String,
        /// The `resultType` it sent, cut short.
        got: String,
    },
    /// `status: success` without `data`.
    #[error("{server}: a success without data")]
    NoData {
        /// Who answered, as the caller named it.
        server: String,
    },
}

/// A series' labels, in the order the server sent them: their text in one string, with where
/// each name and value ends. A handful per series, searched in order (cheaper than a map to
/// build: 1024 nodes × 8 GPUs × 30 families of them arrive every period), and one allocation
/// per series, not two per label: an answer of many tiny labels costs about twice its JSON,
/// not ten times.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Labels {
    text: String,
    /// Per label: where its name ends and where its value ends in `text`.
    ends: Vec<(u32, u32)>,
}

impl Labels {
    /// Labels from (name, value) pairs, in order.
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let mut out = Self::default();
        for (k, v) in pairs {
            out.push(k, v);
        }
        out
    }

    fn push(&mut self, name: &str, value: &str) {
        // An answer is at most MAX_ANSWER_BYTES, so offsets fit in u32; saturate regardless.
        self.text.push_str(name);
        let name_end = u32::try_from(self.text.len()).unwrap_or(u32::MAX);
        self.text.push_str(value);
        let value_end = u32::try_from(self.text.len()).unwrap_or(u32::MAX);
        self.ends.push((name_end, value_end));
    }

    /// Each (name, value), in the order the server sent them.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        let mut start = 0usize;
        self.ends.iter().map(move |&(n, v)| {
            let (n, v) = (n as usize, v as usize);
            let pair = (
                self.text.get(start..n).unwrap_or(""),
                self.text.get(n..v).unwrap_or(""),
            );
            start = v;
            pair
        })
    }

    /// A label's value.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.iter().find(|(k, _)| *k == name).map(|(_, v)| v)
    }
}

impl<'de> Deserialize<'de> for Labels {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Labels;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a map of label names to values")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Labels, A::Error> {
                use std::borrow::Cow;
                let mut out = Labels::default();
                while let Some((k, v)) = map.next_entry::<Cow<'de, str>, Cow<'de, str>>()? {
                    if out.ends.len() >= MAX_LABELS {
                        return Err(serde::de::Error::custom(format!(
                            "a series with more than {MAX_LABELS} labels"
                        )));
                    }
                    out.push(&k, &v);
                }
                out.text.shrink_to_fit();
                out.ends.shrink_to_fit();
                Ok(out)
            }
        }
        d.deserialize_map(V)
    }
}

/// Most labels a series may have: dcgm-exporter's carry about a dozen, kube-state's a few
/// dozen; past this the answer is not what burnin asked for.
pub const MAX_LABELS: usize = 256;

/// A sample's value as Prometheus writes it (a string: `"41"`, `"NaN"`, `"+Inf"`), read
/// without keeping the string.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Number(f64);

impl<'de> Deserialize<'de> for Number {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Ok(Number(number(&text)))
    }
}

/// One series of an answer: its labels and its newest (instant) or every (range) point.
/// Decoded through [`Item`] one series at a time, so an answer is never held twice.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(from = "Item")]
pub struct Series {
    /// Labels, `__name__` included when the query kept it.
    pub labels: Labels,
    /// `(sample time, value)`, oldest first; NaN where Prometheus said `NaN`.
    pub points: Vec<(UnixMillis, f64)>,
}

impl Series {
    /// A label's value, empty when absent (as PromQL treats it).
    pub fn label(&self, name: &str) -> &str {
        self.labels.get(name).unwrap_or("")
    }
}

#[derive(Deserialize)]
struct Envelope {
    status: String,
    data: Option<Data>,
    #[serde(rename = "errorType")]
    error_type: Option<String>,
    error: Option<String>,
}

/// `data` read straight into series: no JSON tree in between (an answer for a big cluster is
/// tens of MB).
#[derive(Deserialize)]
struct Data {
    #[serde(rename = "resultType")]
    result_type: String,
    result: Vec<Series>,
}

/// `data` of an answer that is not series, for the error's words.
#[derive(Deserialize)]
struct DataKind {
    #[serde(rename = "resultType")]
    result_type: Option<String>,
    #[serde(rename = "result")]
    _result: Option<IgnoredAny>,
}

#[derive(Deserialize)]
struct Item {
    #[serde(default)]
    metric: Labels,
    value: Option<(f64, Number)>,
    values: Option<Vec<(f64, Number)>>,
}

impl From<Item> for Series {
    fn from(i: Item) -> Series {
        let points = match (i.value, i.values) {
            (Some((t, v)), _) => vec![(millis(t), v.0)],
            (None, Some(vs)) => vs.into_iter().map(|(t, v)| (millis(t), v.0)).collect(),
            (None, None) => Vec::new(),
        };
        Series {
            labels: i.metric,
            points,
        }
    }
}

fn number(text: &str) -> f64 {
    match text {
        "NaN" => f64::NAN,
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        _ => text.parse().unwrap_or(f64::NAN),
    }
}

fn millis(seconds: f64) -> UnixMillis {
    if seconds.is_finite() && seconds > 0.0 {
        (seconds * 1000.0).round() as UnixMillis
    } else {
        0
    }
}

/// Decode an API answer (`vector` or `matrix`); `server` names it in errors.
pub fn decode(server: &str, body: &[u8]) -> Result<Vec<Series>, PromError> {
    let env: Envelope = serde_json::from_slice(body).map_err(|e| {
        // Valid JSON of another shape: say what kind of answer it was.
        #[derive(Deserialize)]
        struct Kind {
            data: Option<DataKind>,
        }
        if let Ok(Kind {
            data:
                Some(DataKind {
                    result_type: Some(t),
                    ..
                }),
        }) = serde_json::from_slice::<Kind>(body)
            && !matches!(t.as_str(), "vector" | "matrix")
        {
            return PromError::WrongShape {
                server: server.to_string(),
                got: excerpt(&t),
            };
        }
        PromError::NotApi {
            server: server.to_string(),
            reason: excerpt(&e.to_string()),
            start: String::from_utf8_lossy(&body[..body.len().min(120)]).into_owned(),
        }
    })?;
    if env.status != "success" {
        return Err(PromError::Api {
            server: server.to_string(),
            kind: excerpt(env.error_type.as_deref().unwrap_or("error")),
            message: excerpt(env.error.as_deref().unwrap_or("(no message)")),
        });
    }
    let data = env.data.ok_or_else(|| PromError::NoData {
        server: server.to_string(),
    })?;
    if !matches!(data.result_type.as_str(), "vector" | "matrix") {
        return Err(PromError::WrongShape {
            server: server.to_string(),
            got: excerpt(&data.result_type),
        });
    }
    Ok(data.result)
}

/// Largest answer read, and the most the answers of one poll may take together
/// ([`ReadBudget`]). One poll of 1024 nodes × 8 GPUs is tens of MB (an estimate: about
/// 270 000 series of about 150 bytes each; not measured); decoded, an answer costs about twice
/// its size at worst (tiny labels), so this bounds a poll near half a gigabyte. At 512 MiB a
/// hostile 400 MB answer cost 7 GB.
pub const MAX_ANSWER_BYTES: usize = 128 << 20;

/// The bytes the answers of queries asked together may take, all of them: a poll asks up to
/// three at once, and three answers each under [`MAX_ANSWER_BYTES`] would hold three times it
/// (a hostile server answering every query with 100 MB cost `status` 650 MB). Shared by the
/// queries of one poll; each answer is counted as it arrives (its announced length first).
#[derive(Debug)]
pub struct ReadBudget {
    used: std::sync::atomic::AtomicUsize,
    limit: usize,
}

impl ReadBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self {
            used: std::sync::atomic::AtomicUsize::new(0),
            limit,
        }
    }

    /// Count `n` more bytes; false once the total is past the limit (and stays so).
    fn take(&self, n: usize) -> bool {
        let before = self.used.fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        before.saturating_add(n) <= self.limit
    }
}

/// Quote a label value for PromQL (double quotes, backslash escapes).
pub fn quote(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Credentials read from their files when the client is made.
enum Auth {
    None,
    Bearer(String),
    Basic(String, String),
}

/// A Prometheus server to ask.
pub struct PromClient {
    http: reqwest::Client,
    base: String,
    auth: Auth,
}

impl PromClient {
    /// A client for `spec`: reads the token or password file and the CA bundle now, so a wrong
    /// path is said at once, naming the file.
    pub fn new(spec: &PrometheusSpec) -> Result<Self, PromError> {
        let setting =
            |setting: &'static str, path: &std::path::Path, reason: String| PromError::Setting {
                setting,
                path: path.display().to_string(),
                reason,
            };
        let read = |what: &'static str, path: &std::path::Path| {
            crate::config::read_file_bounded(path, crate::config::MAX_CONFIG_BYTES)
                .map(|s| s.trim().to_string())
                .map_err(|e| setting(what, path, e.to_string()))
        };
        let auth = match (&spec.bearer_token_file, &spec.basic_auth) {
            (Some(f), _) => Auth::Bearer(read("bearer_token_file", f)?),
            (None, Some((user, f))) => {
                Auth::Basic(user.clone(), read("basic_auth_password_file", f)?)
            }
            (None, None) => Auth::None,
        };
        // Straight to the server: a proxy in between would answer for it.
        let mut builder = reqwest::Client::builder()
            .no_proxy()
            .timeout(spec.timeout)
            .connect_timeout(spec.timeout.min(Duration::from_secs(5)));
        if let Some(path) = &spec.ca_file {
            let pem = crate::config::read_file_bounded(path, crate::config::MAX_CONFIG_BYTES)
                .map(String::into_bytes)
                .map_err(|e| setting("ca_file", path, e.to_string()))?;
            let certs = reqwest::Certificate::from_pem_bundle(&pem)
                .map_err(|e| setting("ca_file", path, e.to_string()))?;
            builder = builder.tls_certs_only(certs);
        }
        let base = spec.url.trim_end_matches('/').to_string();
        let http = builder.build().map_err(|e| PromError::Client {
            server: base.clone(),
            reason: format!("HTTP client: {e}"),
        })?;
        Ok(Self { http, base, auth })
    }

    /// The server's base URL, for messages.
    pub fn server(&self) -> &str {
        &self.base
    }

    async fn get(
        &self,
        path: &str,
        params: &[(&str, String)],
        budget: &ReadBudget,
    ) -> Result<Vec<Series>, PromError> {
        let mut url = reqwest::Url::parse(&format!("{}{path}", self.base)).map_err(|e| {
            PromError::Client {
                server: self.base.clone(),
                reason: format!("not a URL: {e}"),
            }
        })?;
        url.query_pairs_mut()
            .extend_pairs(params.iter().map(|(k, v)| (*k, v.as_str())));
        let mut req = self.http.get(url);
        req = match &self.auth {
            Auth::None => req,
            Auth::Bearer(t) => req.bearer_auth(t),
            Auth::Basic(u, p) => req.basic_auth(u, Some(p)),
        };
        // Without the URL: it holds the whole query, which would bury the reason.
        let failed = |doing: &'static str, e: reqwest::Error| PromError::Transport {
            server: self.base.clone(),
            doing,
            reason: crate::probes::s3::server_metrics::short_error(&e.without_url()),
        };
        let mut resp = req.send().await.map_err(|e| failed("", e))?;
        let status = resp.status();
        // Read in chunks up to a limit: a URL that points at something else (a file server, a
        // proxy's endless page) must not take the console's memory.
        // Sized once where the server says how long (within the limit): growing by doubling
        // would hold the old buffer beside the new one at the end.
        // The announced length is counted against the poll's budget before it is allocated,
        // so answers asked together cannot each reserve the whole limit.
        let too_large = || PromError::TooLarge {
            server: self.base.clone(),
        };
        let said = usize::try_from(resp.content_length().unwrap_or(0)).unwrap_or(usize::MAX);
        if said > MAX_ANSWER_BYTES || !budget.take(said) {
            return Err(too_large());
        }
        let mut counted = said;
        let mut body: Vec<u8> = Vec::with_capacity(said);
        loop {
            let chunk = resp
                .chunk()
                .await
                .map_err(|e| failed("reading the answer: ", e))?;
            let Some(chunk) = chunk else { break };
            let len = body.len() + chunk.len();
            if len > MAX_ANSWER_BYTES {
                return Err(too_large());
            }
            // Past what was announced (or with no length said): counted as it comes.
            if len > counted {
                if !budget.take(len - counted) {
                    return Err(too_large());
                }
                counted = len;
            }
            body.extend_from_slice(&chunk);
        }
        let server = format!("Prometheus {}", self.base);
        match status.as_u16() {
            // An answer for a big cluster is tens of MB: decoding it takes tens of ms, which
            // belong on a blocking thread, not on a runtime worker the console shares.
            200 => tokio::task::spawn_blocking(move || decode(&server, &body))
                .await
                .map_err(|e| PromError::Client {
                    server: self.base.clone(),
                    reason: format!("answer decoder: {e}"),
                })?,
            code @ (401 | 403) => Err(PromError::Refused {
                server: self.base.clone(),
                code,
            }),
            // The API answers 400/422/503 with its JSON error; anything else is someone else's page.
            code @ (400 | 422 | 503) => decode(&server, &body).and_then(|_| {
                Err(PromError::Status {
                    server: self.base.clone(),
                    code,
                })
            }),
            code => Err(PromError::Status {
                server: self.base.clone(),
                code,
            }),
        }
    }

    /// An instant query at the server's now.
    pub async fn instant(&self, query: &str) -> Result<Vec<Series>, PromError> {
        self.instant_within(query, &ReadBudget::new(MAX_ANSWER_BYTES))
            .await
    }

    /// An instant query whose answer counts against `budget`, shared with the queries asked
    /// beside it.
    pub async fn instant_within(
        &self,
        query: &str,
        budget: &ReadBudget,
    ) -> Result<Vec<Series>, PromError> {
        self.get("/api/v1/query", &[("query", query.to_string())], budget)
            .await
    }

    /// A range query from `start` to `end` every `step`.
    pub async fn range(
        &self,
        query: &str,
        start: UnixMillis,
        end: UnixMillis,
        step: Duration,
    ) -> Result<Vec<Series>, PromError> {
        let secs = |ms: UnixMillis| format!("{:.3}", ms as f64 / 1000.0);
        self.get(
            "/api/v1/query_range",
            &[
                ("query", query.to_string()),
                ("start", secs(start)),
                ("end", secs(end)),
                ("step", format!("{:.3}", step.as_secs_f64().max(0.001))),
            ],
            &ReadBudget::new(MAX_ANSWER_BYTES),
        )
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vector_and_matrix_answers() {
        let v = br#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"__name__":"DCGM_FI_DEV_GPU_TEMP","gpu":"0","Hostname":"n1"},"value":[1733150000.5,"41"]},
            {"metric":{"gpu":"1"},"value":[1733150000.5,"NaN"]}]}}"#;
        let s = decode("p", v).expect("vector");
        assert_eq!(s.len(), 2);
        assert_eq!(s[0].label("Hostname"), "n1");
        assert_eq!(s[0].label("absent"), "");
        assert_eq!(s[0].points, vec![(1_733_150_000_500, 41.0)]);
        assert!(s[1].points[0].1.is_nan());
        let m = br#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"gpu":"0"},"values":[[1.0,"1"],[2.0,"+Inf"]]}]}}"#;
        let s = decode("p", m).expect("matrix");
        assert_eq!(s[0].points[0], (1000, 1.0));
        assert_eq!(s[0].points[1].1, f64::INFINITY);
    }

    #[test]
    fn errors_name_the_server_and_say_what_it_said() {
        let e = decode(
            "Prometheus http://p",
            br#"{"status":"error","errorType":"bad_data","error":"parse error at char 3"}"#,
        )
        .expect_err("error");
        assert_eq!(
            e.to_string(),
            "Prometheus http://p: bad_data parse error at char 3"
        );
        let e = decode("Prometheus http://p", b"<html>proxy login</html>")
            .expect_err("html")
            .to_string();
        assert!(
            e.contains("not the Prometheus API") && e.contains("<html>"),
            "{e}"
        );
        let e = decode(
            "P",
            br#"{"status":"success","data":{"resultType":"scalar","result":[1,"2"]}}"#,
        )
        .expect_err("scalar");
        assert!(
            matches!(&e, PromError::WrongShape { got, .. } if got == "scalar"),
            "{e}"
        );
    }

    #[test]
    fn an_error_quotes_no_whole_value() {
        // serde_json quotes a string of the wrong type whole, and a server's error may be
        // long; found by tests/fuzz/.
        let long = "x".repeat(70_000);
        for body in [
            format!(
                r#"{{"status":"success","data":{{"resultType":"vector","result":[{{"value":[1,{long:?}],"values":"{long}"}}]}}}}"#
            ),
            format!(r#"{{"status":"error","errorType":"{long}","error":"{long}"}}"#),
            format!(r#"{{"status":"success","data":{{"resultType":"{long}","result":[]}}}}"#),
            format!(r#"{{"status":"success","data":{{"resultType":"{long}","result":7}}}}"#),
        ] {
            let e = decode("Prometheus http://p", body.as_bytes())
                .unwrap_err()
                .to_string();
            assert!(e.len() < 600, "{} bytes: {}", e.len(), &e[..200]);
        }
    }

    #[test]
    fn label_values_are_quoted_for_promql() {
        assert_eq!(quote(r#"a"b\c"#), r#""a\"b\\c""#);
    }

    /// One HTTP exchange on loopback: the request's head as received, and the answer sent.
    async fn serve_once(answer: &'static str) -> (String, tokio::task::JoinHandle<String>) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let task = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.expect("accept");
            let mut head = Vec::new();
            let mut buf = [0u8; 1024];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut buf).await.expect("read");
                if n == 0 {
                    break;
                }
                head.extend_from_slice(&buf[..n]);
            }
            let reply = format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{answer}",
                answer.len()
            );
            s.write_all(reply.as_bytes()).await.expect("write");
            String::from_utf8_lossy(&head).into_owned()
        });
        (format!("http://{addr}/prefix/"), task)
    }

    #[tokio::test]
    async fn the_bearer_token_file_is_sent_and_the_path_prefix_kept() {
        let dir = std::env::temp_dir().join(format!("burnin-promql-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let token = dir.join("token");
        std::fs::write(&token, "s3cr3t-token\n").expect("token");
        let (url, server) =
            serve_once(r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#).await;
        let spec = PrometheusSpec {
            url: url.trim_end_matches('/').to_string(),
            selector: String::new(),
            host_labels: vec!["Hostname".into()],
            bearer_token_file: Some(token),
            basic_auth: None,
            ca_file: None,
            timeout: Duration::from_secs(5),
        };
        let client = PromClient::new(&spec).expect("client");
        assert!(
            client
                .instant("up{job=\"a b\"}")
                .await
                .expect("answer")
                .is_empty()
        );
        let head = server.await.expect("server");
        assert!(
            head.starts_with("GET /prefix/api/v1/query?query=up%7Bjob%3D%22a+b%22%7D HTTP/1.1"),
            "{head}"
        );
        assert!(
            head.to_ascii_lowercase()
                .contains("authorization: bearer s3cr3t-token\r\n"),
            "the token, trimmed: {head}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    proptest::proptest! {
        #[test]
        fn garbage_never_panics(body in proptest::collection::vec(proptest::num::u8::ANY, 0..300)) {
            let _ = decode("p", &body);
        }

        #[test]
        fn json_shaped_garbage_never_panics(ty in "(vector|matrix|x)", t in proptest::num::f64::ANY, v in "\\PC{0,8}") {
            let body = format!(
                r#"{{"status":"success","data":{{"resultType":"{ty}","result":[{{"metric":{{}},"value":[{t},"{v}"]}}]}}}}"#
            );
            let _ = decode("p", body.as_bytes());
        }
    }
}
