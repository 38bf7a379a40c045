//! The Kubernetes Job launcher: a phase with `launcher = "kubernetes"` runs on each node as a
//! Job the site's own `kubectl` (its config, context and credentials) applies from the console
//! host. burnin builds the manifest from the plan: the phase's command in the plan's `image`,
//! pinned to the node by its hostname label, the node's GPUs as resource limits, the phase's
//! time limit as `activeDeadlineSeconds`, the workload files burnin ships as a ConfigMap
//! mounted at [`POD_WORKLOADS`]. A small shell script, run where the runner runs local
//! phases, applies it, follows the pod's log with `kubectl logs -f` (that log is what the
//! phase's parser reads), and exits with the container's exit code. Stopping the phase (abort,
//! time limit) sends the script TERM, and its trap deletes the Job and the ConfigMap: nothing
//! keeps running on the cluster.

use crate::plan::KubeSettings;
use serde_json::{Value, json};

/// Where a pod finds the workload files (`{workloads}` inside a Kubernetes phase).
pub const POD_WORKLOADS: &str = "/burnin/workloads";
/// A pod's working directory (`{dir}` inside a Kubernetes phase).
pub const POD_DIR: &str = "/burnin/run";

/// One Job: which run, phase and node it is for, and what it runs.
#[derive(Debug, Clone, PartialEq)]
pub struct JobRequest<'a> {
    /// The run id.
    pub run: &'a str,
    /// The phase's directory component (`T4`, or `T4.2` for a retry).
    pub phase: &'a str,
    /// The node's name in the cluster (its hostname label's value).
    pub node: &'a str,
    /// GPUs to ask for.
    pub gpus: u32,
    /// The command, rendered for the pod (`{workloads}` = [`POD_WORKLOADS`]).
    pub command: &'a str,
    /// The phase's time limit in seconds.
    pub timeout_s: u64,
    /// Workload files the command uses: name and content.
    pub files: &'a [(&'a str, &'a str)],
}

/// A Kubernetes name from free text: lower case, `[a-z0-9-]`, at most `max` characters,
/// starting and ending with an alphanumeric; when cut, a hash of the whole keeps it unique.
pub fn dns_label(text: &str, max: usize) -> String {
    let mut s: String = text
        .chars()
        .map(|c| {
            let c = c.to_ascii_lowercase();
            if c.is_ascii_alphanumeric() { c } else { '-' }
        })
        .collect();
    while s.contains("--") {
        s = s.replace("--", "-");
    }
    let s = s.trim_matches('-').to_string();
    if s.len() <= max && !s.is_empty() {
        return s;
    }
    use sha2::Digest;
    let digest = sha2::Sha256::digest(text.as_bytes());
    let hash: String = digest[..4].iter().map(|b| format!("{b:02x}")).collect();
    let keep = max.saturating_sub(hash.len() + 1);
    let head = s[..s.len().min(keep)].trim_end_matches('-');
    if head.is_empty() {
        hash
    } else {
        format!("{head}-{hash}")
    }
}

/// A label value: at most 63 of `[A-Za-z0-9-_.]`, alphanumeric at both ends.
fn label_value(text: &str) -> String {
    let s: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(63)
        .collect();
    s.trim_matches(|c: char| !c.is_ascii_alphanumeric())
        .to_string()
}

/// The Job's name for `req` (also its ConfigMap's).
pub fn job_name(req: &JobRequest<'_>) -> String {
    dns_label(
        &format!("burnin-{}-{}-{}", req.run, req.phase, req.node),
        63,
    )
}

/// The manifest `kubectl apply -f -` reads: a `List` of the ConfigMap (when the command uses
/// workload files) and the Job.
pub fn manifest(k: &KubeSettings, req: &JobRequest<'_>) -> Value {
    let name = job_name(req);
    let labels = json!({
        "app.kubernetes.io/managed-by": "burnin",
        "burnin/run": label_value(req.run),
        "burnin/phase": label_value(req.phase),
        "burnin/node": label_value(req.node),
    });
    let mut container = json!({
        "name": "phase",
        "image": k.image,
        "command": ["/bin/sh", "-c", req.command],
        "workingDir": POD_DIR,
        "resources": { "limits": { k.gpu_resource.as_str(): req.gpus.to_string() } },
        "volumeMounts": [{ "name": "run", "mountPath": POD_DIR }],
    });
    let mut volumes = vec![json!({ "name": "run", "emptyDir": {} })];
    let mut items = Vec::new();
    if !req.files.is_empty() {
        let data: serde_json::Map<String, Value> = req
            .files
            .iter()
            .map(|(n, c)| (n.to_string(), Value::String(c.to_string())))
            .collect();
        items.push(json!({
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": { "name": name, "namespace": k.namespace, "labels": labels },
            "data": data,
        }));
        if let Some(mounts) = container["volumeMounts"].as_array_mut() {
            mounts
                .push(json!({ "name": "workloads", "mountPath": POD_WORKLOADS, "readOnly": true }));
        }
        volumes.push(json!({ "name": "workloads", "configMap": { "name": name } }));
    }
    let mut pod = json!({
        "restartPolicy": "Never",
        "nodeSelector": { k.node_label.as_str(): req.node },
        // GPU nodes are often tainted for GPU work only; the phase is GPU work.
        "tolerations": [{ "key": k.gpu_resource, "operator": "Exists", "effect": "NoSchedule" }],
        "containers": [container.take()],
        "volumes": volumes,
    });
    if let Some(sa) = &k.service_account {
        pod["serviceAccountName"] = json!(sa);
    }
    items.push(json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": { "name": name, "namespace": k.namespace, "labels": labels },
        "spec": {
            // One attempt: a burn-in phase that failed must be seen, not retried away.
            "backoffLimit": 0,
            "activeDeadlineSeconds": req.timeout_s.max(1),
            "ttlSecondsAfterFinished": k.keep_finished_s,
            "template": { "metadata": { "labels": labels }, "spec": pod },
        },
    }));
    json!({ "apiVersion": "v1", "kind": "List", "items": items })
}

/// Single-quote for sh.
fn sq(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// The kubectl command line prefix: the program, the context when set, the namespace.
pub fn kubectl_prefix(k: &KubeSettings) -> String {
    let mut parts = vec![sq(&k.kubectl)];
    if let Some(c) = &k.context {
        parts.push("--context".into());
        parts.push(sq(c));
    }
    parts.push("-n".into());
    parts.push(sq(&k.namespace));
    parts.join(" ")
}

/// Marks the end of the manifest in the script's here-document.
const EOF_MARK: &str = "BURNIN_MANIFEST_END";

/// The shell script the runner starts for one node: apply, wait for the pod to start (saying
/// why it waits), follow its log, exit with its exit code; on TERM/INT/HUP delete the Job.
pub fn script(k: &KubeSettings, req: &JobRequest<'_>) -> String {
    let name = job_name(req);
    let manifest = serde_json::to_string_pretty(&manifest(k, req)).unwrap_or_default();
    let has_files = !req.files.is_empty();
    format!(
        r#"k() {{ {prefix} "$@"; }}
job={job}
gone() {{
  echo "burnin: deleting job $job"
  k delete job "$job" --ignore-not-found --wait=false --cascade=foreground
  {cm_delete}
}}
trap 'gone; exit 143' TERM INT HUP
k apply -f - <<'{eof}' || {{ echo "burnin: kubectl apply failed"; exit 90; }}
{manifest}
{eof}
echo "burnin: job $job applied; waiting for its pod on "{node}
said=""
while :; do
  st=$(k get pods -l job-name="$job" -o jsonpath='{{.items[0].status.phase}} {{.items[0].status.containerStatuses[0].state.waiting.reason}}' 2>&1)
  case "$st" in
    Running*|Succeeded*|Failed*) break ;;
  esac
  [ "$st" != "$said" ] && echo "burnin: pod: ${{st:-not created yet}}" && said="$st"
  sleep 2
done
k logs -f "job/$job"
i=0
while :; do
  res=$(k get job "$job" -o jsonpath='{{.status.succeeded}}:{{.status.failed}}' 2>&1)
  case "$res" in
    [1-9]*:*) exit 0 ;;
    *:[1-9]*)
      rc=$(k get pods -l job-name="$job" -o jsonpath='{{.items[0].status.containerStatuses[0].state.terminated.exitCode}}' 2>/dev/null)
      echo "burnin: job $job failed (container exit code ${{rc:-unknown}})"
      exit "${{rc:-1}}" ;;
  esac
  i=$((i+1))
  [ "$i" -ge 30 ] && {{ echo "burnin: job $job has no result after its log ended: $res"; exit 1; }}
  sleep 2
done
"#,
        prefix = kubectl_prefix(k),
        job = sq(&name),
        cm_delete = if has_files {
            "k delete configmap \"$job\" --ignore-not-found --wait=false"
        } else {
            ":"
        },
        eof = EOF_MARK,
        // Quoted like every other text in the script: a node name is not shell.
        node = sq(req.node),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> KubeSettings {
        KubeSettings {
            context: Some("site-a".into()),
            namespace: "burn-in".into(),
            image: "nvcr.io/nvidia/pytorch:25.01-py3".into(),
            service_account: Some("burnin".into()),
            ..KubeSettings::default()
        }
    }

    fn request<'a>(files: &'a [(&'a str, &'a str)]) -> JobRequest<'a> {
        JobRequest {
            run: "20261203-1712-ab12",
            phase: "T2",
            node: "gpu07",
            gpus: 8,
            command: "python3 /burnin/workloads/gemm.py --seconds 20",
            timeout_s: 600,
            files,
        }
    }

    #[test]
    fn names_are_dns_labels_and_stay_unique_when_cut() {
        assert_eq!(
            dns_label("burnin-Run_1-T4.2-gpu07", 63),
            "burnin-run-1-t4-2-gpu07"
        );
        let long = format!("burnin-{}-T4-gpu07", "x".repeat(80));
        let other = format!("burnin-{}-T4-gpu08", "x".repeat(80));
        let (a, b) = (dns_label(&long, 63), dns_label(&other, 63));
        assert!(a.len() <= 63 && b.len() <= 63);
        assert_ne!(a, b);
        assert!(
            a.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        );
        assert_eq!(dns_label("---", 63).len(), 8, "a hash when nothing is left");
    }

    #[test]
    fn the_job_pins_the_node_asks_its_gpus_and_mounts_the_workloads() {
        let files = [("gemm.py", "print('gemm')\n")];
        let m = manifest(&settings(), &request(&files));
        assert_eq!(m["kind"], "List");
        let items = m["items"].as_array().expect("items");
        assert_eq!(items.len(), 2);
        assert_eq!(items[0]["kind"], "ConfigMap");
        assert_eq!(items[0]["data"]["gemm.py"], "print('gemm')\n");
        let job = &items[1];
        assert_eq!(job["kind"], "Job");
        assert_eq!(
            job["metadata"]["name"],
            "burnin-20261203-1712-ab12-t2-gpu07"
        );
        assert_eq!(job["metadata"]["namespace"], "burn-in");
        assert_eq!(job["spec"]["backoffLimit"], 0);
        assert_eq!(job["spec"]["activeDeadlineSeconds"], 600);
        let pod = &job["spec"]["template"]["spec"];
        assert_eq!(pod["restartPolicy"], "Never");
        assert_eq!(pod["nodeSelector"]["kubernetes.io/hostname"], "gpu07");
        assert_eq!(pod["serviceAccountName"], "burnin");
        let c = &pod["containers"][0];
        assert_eq!(c["image"], "nvcr.io/nvidia/pytorch:25.01-py3");
        assert_eq!(
            c["command"][2],
            "python3 /burnin/workloads/gemm.py --seconds 20"
        );
        assert_eq!(c["resources"]["limits"]["nvidia.com/gpu"], "8");
        assert_eq!(c["volumeMounts"][1]["mountPath"], POD_WORKLOADS);
        assert_eq!(
            pod["volumes"][1]["configMap"]["name"],
            job["metadata"]["name"]
        );
        assert_eq!(
            job["spec"]["template"]["metadata"]["labels"]["burnin/node"],
            "gpu07"
        );
        // No files: no ConfigMap, no mount of it.
        let bare = manifest(&settings(), &request(&[]));
        assert_eq!(bare["items"].as_array().map(Vec::len), Some(1));
    }

    #[test]
    fn the_script_applies_follows_and_deletes_on_stop() {
        let s = script(&settings(), &request(&[("gemm.py", "x")]));
        assert!(
            s.starts_with("k() { 'kubectl' --context 'site-a' -n 'burn-in' \"$@\"; }"),
            "{s}"
        );
        assert!(s.contains("trap 'gone; exit 143' TERM INT HUP"));
        assert!(s.contains(
            "k delete job \"$job\" --ignore-not-found --wait=false --cascade=foreground"
        ));
        assert!(s.contains("k delete configmap \"$job\""));
        assert!(s.contains("k logs -f \"job/$job\""));
        // The manifest travels inside the script, so the run record keeps what was applied.
        let start = s.find("<<'BURNIN_MANIFEST_END'").expect("heredoc");
        let body = &s[start..];
        let json_start = body.find('\n').expect("line") + 1;
        let json_end = body.find("\nBURNIN_MANIFEST_END\n").expect("end");
        let m: Value = serde_json::from_str(&body[json_start..json_end]).expect("json");
        assert_eq!(m, manifest(&settings(), &request(&[("gemm.py", "x")])));
    }

    #[test]
    fn a_node_name_reaches_the_shell_as_text() {
        let odd = JobRequest {
            node: "gpu07$(touch pwned)'",
            ..request(&[])
        };
        let text = script(&settings(), &odd);
        let line = text
            .lines()
            .find(|l| l.contains("waiting for its pod on"))
            .expect("the waiting line");
        let dir = std::env::temp_dir().join(format!("burnin-kube-sh-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(format!("job=j; {line}"))
            .current_dir(&dir)
            .output()
            .expect("sh");
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        let ran = dir.join("pwned").exists();
        let _ = std::fs::remove_dir_all(&dir);
        assert_eq!(
            said,
            "burnin: job j applied; waiting for its pod on gpu07$(touch pwned)'\n"
        );
        assert!(!ran, "the name was run as a command");
    }

    proptest::proptest! {
        #[test]
        fn any_text_makes_a_valid_name(text in "\\PC{0,120}", max in 8usize..64) {
            let n = dns_label(&text, max);
            proptest::prop_assert!(!n.is_empty() && n.len() <= max);
            proptest::prop_assert!(n.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'));
            proptest::prop_assert!(!n.starts_with('-') && !n.ends_with('-'));
        }
    }
}
