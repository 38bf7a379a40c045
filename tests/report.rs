//! `burnin run --demo` writes a real record; `burnin report` turns it into Markdown (checked
//! against a golden file), SVG plots and one self-contained HTML file that headless Chromium
//! renders with its plots visible. A run killed with SIGKILL mid-phase still reports, marked
//! INCOMPLETE. Set UPDATE_GOLDEN=1 to rewrite the golden files after a deliberate change.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_burnin")
}

fn tmp(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("burnin-report-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("tmp dir");
    d
}

fn run(args: &[&str], dir: &Path) -> Output {
    Command::new(bin())
        .args(args)
        .env("BURNIN_LOG", dir.join("burnin.log"))
        .output()
        .expect("burnin")
}

/// `burnin report DIR`, which must succeed.
fn report(dir: &Path, root: &Path) -> Output {
    let o = run(&["report", dir.to_str().expect("utf-8")], root);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

/// The one run directory under `runs`.
fn run_dir(runs: &Path) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(runs)
        .expect("runs dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs[0].clone()
}

fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("UPDATE_GOLDEN").is_some() {
        std::fs::create_dir_all(path.parent().expect("dir")).expect("golden dir");
        std::fs::write(&path, actual).expect("write golden");
        return;
    }
    let want = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("{}: {e} (UPDATE_GOLDEN=1 writes it)", path.display()));
    if want != actual {
        let first = want
            .lines()
            .zip(actual.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(want.lines().count().min(actual.lines().count()));
        panic!(
            "{name} differs from the golden file at line {}:\n  want: {:?}\n  got:  {:?}\n(UPDATE_GOLDEN=1 rewrites it after a deliberate change)",
            first + 1,
            want.lines().nth(first),
            actual.lines().nth(first)
        );
    }
}

/// A finished demo run (seed 1, the demo's faults) and its report.
fn demo_report(name: &str) -> (PathBuf, PathBuf) {
    let root = tmp(name);
    let runs = root.join("runs");
    let o = run(
        &["run", "--demo", "--runs-dir", runs.to_str().expect("utf-8")],
        &root,
    );
    // The demo's faults fail phases: exit 1, with a record.
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let dir = run_dir(&runs);
    let o = report(&dir, &root);
    let printed = String::from_utf8_lossy(&o.stdout);
    assert!(
        printed.contains("report.md") && printed.contains("report.html"),
        "{printed}"
    );
    (root, dir)
}

#[test]
fn the_demo_run_reports_like_the_golden_file() {
    let (root, dir) = demo_report("golden");
    let id = dir
        .file_name()
        .and_then(|n| n.to_str())
        .expect("run id")
        .to_string();
    let md = std::fs::read_to_string(dir.join("report.md"))
        .expect("report.md")
        .replace(&root.display().to_string(), "ROOT")
        .replace(&id, "RUN");
    golden("report-demo-seed1.md", &md);
    // The first table is for returns: the failing node, its GPU with what identifies it to the
    // vendor, the finding and the next step; nodes nothing names share one PASS row; a node
    // a passing gate merely names (T3's slowest pair, node09) is not failed for it.
    assert!(
        md.contains("| node07 | **FAIL** | GPU3 | SIM0603000001 | 00000000:48:00.0 | GPU-5e000001-0603-sim | 97.00.00.00.00 (simulated) | stalled: util 0 %"),
        "{md}"
    );
    assert!(md.contains("| node01, node04, node06, node08, node10, node12 | **PASS** |"));
    assert!(md.contains("| node09 | **WARN** |"), "{md}");
    // Reasons are bullets; the report ends with a sign-off.
    assert!(md.contains("| • node07 exited 1<br>• 1 below 90 % of baseline"));
    assert!(md.contains("## Sign-off") && md.contains("| the customer | | | |"));
    // Every plot the Markdown names is beside it.
    for line in md.lines().filter(|l| l.starts_with("![")) {
        let file = line
            .rsplit_once('(')
            .and_then(|(_, f)| f.strip_suffix(')'))
            .expect("image link");
        assert!(dir.join(file).exists(), "{file}");
    }
    let busbw = std::fs::read_to_string(dir.join("report-busbw-T4.svg")).expect("busbw svg");
    golden("report-demo-seed1-busbw-T4.svg", &busbw);
    assert!(busbw.contains("peers gate: 90 % of the node median"));

    // One self-contained HTML file: no scripts, no external fetches.
    let html = std::fs::read_to_string(dir.join("report.html")).expect("report.html");
    for heading in [
        "Nodes",
        "Sign-off",
        "Phases",
        "Figures against gates",
        "Plots",
        "Findings",
        "Bill of materials",
    ] {
        assert!(html.contains(&format!("<h2>{heading}</h2>")), "{heading}");
    }
    // Every gate as judged: T4's baseline gate missed on node07's stall, and the figures
    // table says which gates read each figure.
    assert!(html.contains("<h2>Gates, as judged</h2>"), "gates table");
    let md_gates = md
        .lines()
        .find(|l| l.starts_with("| T4 | busbw_all_reduce >= 90 % of baseline |"))
        .unwrap_or_else(|| panic!("T4's baseline gate row: {md}"));
    assert!(md_gates.contains("missed"), "{md_gates}");
    assert!(
        md.lines()
            .any(|l| l.starts_with("| T4 | busbw_all_reduce |")
                && l.contains("✓ >= 100 (met)")
                && l.contains("✗ >= 90 % of baseline (missed)")),
        "{md}"
    );
    assert!(!html.contains("<script") && !html.contains(" src=") && !html.contains("<link"));
    let external = html
        .match_indices("http")
        .filter(|(i, _)| !html[*i..].starts_with("http://www.w3.org/2000/svg"))
        .count();
    assert_eq!(external, 0, "only the SVG namespace may name a URL");
    assert!(
        html.matches("<svg").count() >= 4,
        "power, busbw T4/T7, data wait"
    );
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn the_record_holds_findings_and_per_second_telemetry() {
    let (root, dir) = demo_report("record");
    let events = std::fs::read_to_string(dir.join("events.jsonl")).expect("events");
    assert!(
        events.lines().any(|l| l.contains(r#""event":"finding""#)
            && l.contains(
                r#""change":"raised","severity":"crit","rule":"stalled","subject":"node07 GPU3""#
            )),
        "the stall is in the record"
    );
    assert!(events.contains(r#""change":"cleared""#));
    let segment = dir.join("telemetry/000.jsonl.gz");
    let size = std::fs::metadata(&segment)
        .expect("telemetry segment")
        .len();
    assert!(
        size > 100_000,
        "{size} bytes for ~6 simulated minutes of 96 GPUs"
    );
    let _ = std::fs::remove_dir_all(root);
}

#[test]
fn a_run_killed_mid_phase_still_reports_as_incomplete() {
    let root = tmp("kill");
    let runs = root.join("runs");
    // 40 simulated seconds per second: T1 ends at 9 s, T2 at 51 s, T3 starts at 53 s; kill
    // once T3 has started.
    let mut child = Command::new(bin())
        .args([
            "run",
            "--demo",
            "--speed",
            "40",
            "--runs-dir",
            runs.to_str().expect("utf-8"),
        ])
        .env("BURNIN_LOG", root.join("burnin.log"))
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("spawn");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let dir = loop {
        assert!(std::time::Instant::now() < deadline, "T3 never started");
        std::thread::sleep(std::time::Duration::from_millis(50));
        let Ok(mut rd) = std::fs::read_dir(&runs) else {
            continue;
        };
        let Some(Ok(d)) = rd.next() else { continue };
        let events = std::fs::read_to_string(d.path().join("events.jsonl")).unwrap_or_default();
        if events.contains(r#"{"event":"started","phase":"T3""#) {
            break d.path();
        }
    };
    // SIGKILL: no chance to finish anything.
    child.kill().expect("kill");
    let _ = child.wait();
    // And the last line torn inside a multi-byte character, as a crash mid-write can leave it.
    {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(dir.join("events.jsonl"))
            .expect("events");
        f.write_all(b"{\"event\":\"line\",\"phase\":\"T3\",\"text\":\"12 \xc3")
            .expect("tear");
    }
    let o = report(&dir, &root);
    assert!(String::from_utf8_lossy(&o.stderr).contains("INCOMPLETE"));
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(md.contains("**Verdict: INCOMPLETE"), "{md}");
    assert!(md.contains("| T1 | GPU/CUDA sanity | **PASS** |"), "{md}");
    assert!(md.contains("| T3 | | **NO VERDICT** |"), "{md}");
    assert!(md.contains("| ended | — (no end recorded) |"));
    assert!(
        md.contains("> 1 line(s) of events.jsonl did not decode"),
        "the torn line is named, not fatal: {md}"
    );
    // The telemetry up to the last flush is there even though the segment was never closed.
    assert!(md.contains("![Power per GPU (1 s mean)](report-power.svg)"));
    let power = std::fs::read_to_string(dir.join("report-power.svg")).expect("svg");
    assert!(
        !power.contains("no data recorded"),
        "telemetry survived the kill"
    );
    let _ = std::fs::remove_dir_all(root);
}

fn chromium() -> Option<PathBuf> {
    for name in ["chromium", "chromium-browser", "google-chrome"] {
        if let Ok(o) = Command::new("which").arg(name).output()
            && o.status.success()
        {
            let p = String::from_utf8_lossy(&o.stdout).trim().to_string();
            if !p.is_empty() {
                return Some(PathBuf::from(p));
            }
        }
    }
    if std::env::var("BURNIN_REQUIRE_REAL").as_deref() == Ok("1") {
        panic!("chromium not found (Debian: apt-get install chromium) and BURNIN_REQUIRE_REAL=1");
    }
    eprintln!("skipping: no chromium (apt-get install chromium)");
    None
}

/// Pixels of the PNG close to `rgb`.
fn count_colour(png_path: &Path, rgb: [u8; 3]) -> usize {
    let file = std::fs::File::open(png_path).expect("png");
    let mut reader = png::Decoder::new(std::io::BufReader::new(file))
        .read_info()
        .expect("png header");
    let mut buf = vec![0; reader.output_buffer_size().expect("size")];
    let info = reader.next_frame(&mut buf).expect("png frame");
    let step = info.color_type.samples();
    buf[..info.buffer_size()]
        .chunks(step)
        .filter(|px| {
            px.len() >= 3 && (0..3).all(|i| (i32::from(px[i]) - i32::from(rgb[i])).abs() <= 24)
        })
        .count()
}

#[test]
fn the_html_renders_in_headless_chromium_with_its_plots() {
    let Some(chrome) = chromium() else { return };
    let (root, dir) = demo_report("chromium");
    let shot = root.join("report.png");
    let o = Command::new(chrome)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            // Tall enough for every plot below the node and phase tables (reasons are bullets).
            "--window-size=1200,9000",
            &format!("--screenshot={}", shot.display()),
            &format!("file://{}", dir.join("report.html").display()),
        ])
        .env("HOME", &root)
        .output()
        .expect("chromium");
    assert!(shot.exists(), "{}", String::from_utf8_lossy(&o.stderr));
    // The plots are drawn: the power-limit and gate lines (#d62728) and node01's blue (#1f77b4)
    // cover real area of the page, and the FAIL banner's pink is there.
    let red = count_colour(&shot, [0xd6, 0x27, 0x28]);
    let blue = count_colour(&shot, [0x1f, 0x77, 0xb4]);
    let banner = count_colour(&shot, [0xf8, 0xd0, 0xd0]);
    assert!(red > 500, "gate/limit lines: {red} pixels");
    assert!(blue > 500, "node lines: {blue} pixels");
    assert!(banner > 10_000, "verdict banner: {banner} pixels");
    let _ = std::fs::remove_dir_all(root);
}

/// The checkpoint drill as it ran on the H200: the report's Drills table carries the step,
/// the steady tokens/s, the stall, and the times measured there.
#[test]
fn a_real_h200_drill_record_reports_its_step() {
    let root = tmp("h200-drill");
    let dir = root.join("run6");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/h200-run/run6-drill-record"),
        &dir,
    );
    report(&dir, &root);
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(md.contains("**Verdict: PASS**"), "{md}");
    assert!(
        md.contains("| D2 | 1. burnin kills the training job (the checkpoint restores it) | tokens_per_sec | h200 | 260484 | 0.00 | recovered in 19.0 s | none |"),
        "{md}"
    );
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).expect("summary"))
            .expect("json");
    let row = &summary["phases"][0]["drill"][0];
    assert_eq!(row["first_after_s"].as_f64(), Some(18.986));
    let _ = std::fs::remove_dir_all(root);
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("dir");
    for e in std::fs::read_dir(from).expect("read dir").flatten() {
        let p = e.path();
        if p.is_dir() {
            copy_dir(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).expect("copy");
        }
    }
}

/// A record left by `burnin run` on the real H200 (tests/fixtures/h200-run/README.md) reports
/// with its real figures, its GPU's power over time, and what the node said it runs.
#[test]
fn a_real_h200_record_reports() {
    let root = tmp("h200");
    let dir = root.join("run5");
    copy_dir(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/h200-run/run5-record"),
        &dir,
    );
    report(&dir, &root);
    let md = std::fs::read_to_string(dir.join("report.md")).expect("report.md");
    assert!(md.contains("**Verdict: WARN**"), "{md}");
    assert!(md.contains("| T2 | tflops_bf16 | TFLOP/s | 659 |"), "{md}");
    assert!(
        md.contains("driver 580.159.04, CUDA 13.0, 1 × NVIDIA H200, kernel 6.18.44-fc-v973-gpu, Ubuntu 24.04.3 LTS, fabric manager not installed, NCCL 2.28.3 (/usr/lib/x86_64-linux-gnu)"),
        "{md}"
    );
    assert!(md.contains("| info | cluster | power-capped |"), "{md}");
    let power = std::fs::read_to_string(dir.join("report-power.svg")).expect("power svg");
    assert!(!power.contains("no data recorded") && power.contains("power limit 700 W"));
    // The same record replays: 36 seconds of frames from the real agent.
    let timeline = burnin::sources::replay::Timeline::load(&dir).expect("timeline");
    let frames = timeline
        .play()
        .filter(|(_, e)| matches!(e, burnin::model::SourceEvent::Frame(_)))
        .count();
    assert_eq!(frames, 36);
    let _ = std::fs::remove_dir_all(root);
}
