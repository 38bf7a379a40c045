//! Issue 41, case 4: a record at the volume of a verbose job stays reportable. A phase that
//! prints a million lines keeps every one in its node's compressed log and a sample in
//! `events.jsonl`; `report` and `replay` walk a record of a million events (as records written
//! before the sample kept them) in little memory, measured with GNU time.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Stdio;

const BIN: &str = env!("CARGO_BIN_EXE_burnin");

use common::prom::TempDir;

/// `burnin args` in `dir` under GNU time: (exit code, stdout, stderr, peak RSS kB).
fn burnin_measured(dir: &Path, args: &[&str]) -> (i32, String, String, i64) {
    let rss = dir.join("peak-rss");
    let out = common::under_gnu_time(BIN, &rss)
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env_remove("BURNIN_LOG")
        .stdin(Stdio::null())
        .output()
        .expect("burnin runs");
    let peak = common::gnu_time_peak_kb(&rss);
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        peak,
    )
}

fn the_run(runs: &Path) -> PathBuf {
    std::fs::read_dir(runs)
        .expect("runs")
        .flatten()
        .map(|e| e.path())
        .find(|p| p.is_dir())
        .expect("a run directory")
}

fn gunzip(path: &Path) -> String {
    let mut out = String::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path).expect("log"))
        .read_to_string(&mut out)
        .expect("gzip");
    out
}

/// A local node's phase prints 1 000 000 lines (as `NCCL_DEBUG=INFO` on many ranks does): the
/// run passes; every line is in `logs/T1/n1.log.gz`; `events.jsonl` keeps its first 1000 and
/// a few a second, and says how many it left to the log; the report says where the whole is.
#[test]
fn a_phase_printing_a_million_lines_keeps_them_in_its_log_and_a_sample_in_the_events() {
    let dir = TempDir::new("volume-flood");
    common::local_node_with_phase(&dir.0, "seq 1 1000000");
    let (code, _, err, run_kb) =
        burnin_measured(&dir.0, &["run", "--no-telemetry", "--runs-dir", "runs"]);
    assert_eq!(code, 0, "{err}");
    let run = the_run(&dir.0.join("runs"));
    // Every line, in order, compressed; no plain log left once the phase ended.
    let log = gunzip(&run.join("logs/T1/n1.log.gz"));
    assert_eq!(log.lines().count(), 1_000_000);
    assert_eq!(log.lines().last(), Some("1000000"));
    assert!(!run.join("logs/T1/n1.log").exists());
    // events.jsonl: the sample, and the count of the rest.
    let events = std::fs::File::open(run.join("events.jsonl")).expect("events");
    let (mut kept, mut held) = (0u64, 0u64);
    for l in std::io::BufReader::new(events).lines() {
        let v: serde_json::Value = serde_json::from_str(&l.expect("line")).expect("json");
        match v["event"].as_str() {
            Some("line") if v["node"] == "n1" => kept += 1,
            Some("held") => held += v["lines"].as_u64().expect("lines"),
            _ => {}
        }
    }
    assert!(
        (1000..20_000).contains(&kept),
        "{kept} lines kept in events.jsonl"
    );
    assert_eq!(kept + held, 1_000_000);
    let size = std::fs::metadata(run.join("events.jsonl"))
        .expect("events")
        .len();
    assert!(size < 4 << 20, "events.jsonl is {size} bytes");
    // A replay says once where the whole output is, not once per held count.
    let timeline = burnin::sources::replay::Timeline::load(&run).expect("timeline");
    let said: Vec<String> = timeline
        .play()
        .filter_map(|(_, e)| match e {
            burnin::model::SourceEvent::Notice { text } if text.contains("keeps a sample") => {
                Some(text)
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        said,
        [
            "replay: the record keeps a sample of T1's output past each node's first lines; all of it is in logs/T1/"
        ]
    );
    // The report, in little memory, says where the whole output is.
    let (code, _, err, report_kb) = burnin_measured(&dir.0, &["report", run.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let md = std::fs::read_to_string(run.join("report.md")).expect("report.md");
    assert!(
        md.contains(&format!(
            "T1 n1 printed 1000000 lines; the record's events keep {kept} of them, the whole output is logs/T1/n1.log.gz"
        )),
        "{md}"
    );
    eprintln!("peak RSS: run {run_kb} kB, report {report_kb} kB");
    assert!(run_kb < 200_000, "run: peak RSS {run_kb} kB");
    assert!(report_kb < 100_000, "report: peak RSS {report_kb} kB");
}

/// A record whose `events.jsonl` holds a million output lines (as every record before the
/// sample did, and past the 512 MiB they once were refused at, a verbose phase's): `report`
/// and `replay` walk it an event at a time, in memory that does not grow with it.
#[test]
fn report_and_replay_walk_a_million_events_in_little_memory() {
    let dir = TempDir::new("volume-walk");
    let (code, _, err, _) = burnin_measured(&dir.0, &["run", "--demo", "--runs-dir", "runs"]);
    assert!(matches!(code, 0..=2), "run --demo: {err}");
    let run = the_run(&dir.0.join("runs"));
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(run.join("summary.json")).unwrap()).unwrap();
    let start = summary["started_ms"].as_u64().expect("start");
    let phase = summary["phases"][0]["id"]
        .as_str()
        .expect("phase")
        .to_string();
    let mut events = std::io::BufWriter::new(
        std::fs::OpenOptions::new()
            .append(true)
            .open(run.join("events.jsonl"))
            .expect("events"),
    );
    for i in 0..1_000_000u64 {
        writeln!(
            events,
            r#"{{"event":"line","phase":"{phase}","at_ms":{},"node":"node{:02}","text":"NCCL INFO Channel {i:07}/32 : 0[0] -> 1[1] via P2P/IPC"}}"#,
            start + 1000 + i / 4000,
            i % 12
        )
        .unwrap();
    }
    events.flush().unwrap();
    drop(events);
    let (code, _, err, report_kb) = burnin_measured(&dir.0, &["report", run.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err, replay_kb) = burnin_measured(
        &dir.0,
        &[
            "replay",
            run.to_str().unwrap(),
            "--headless",
            "160x48",
            "--duration",
            "3",
            "--speed",
            "1024",
        ],
    );
    assert_eq!(code, 0, "{err}");
    eprintln!("peak RSS over 1 000 000 events: report {report_kb} kB, replay {replay_kb} kB");
    // Holding them cost about 200 bytes an event (over 200 MB here); walked, the peak is the
    // binary's own.
    assert!(report_kb < 100_000, "report: peak RSS {report_kb} kB");
    assert!(replay_kb < 150_000, "replay: peak RSS {replay_kb} kB");
}
