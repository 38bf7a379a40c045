//! Reproducers: the minimal inputs of what the harness found, fixed since.

use super::*;

/// A string of `n` x's in JSON quotes.
pub(crate) fn long_json_string(n: usize) -> String {
    format!("\"{}\"", "x".repeat(n))
}

#[test]
pub(crate) fn repro_wire_f32_overflow_is_not_a_reading() {
    let line = r#"{"frame":{"node":"n","at_ms":1,"gpus":[{"index":0,"power_avg_watts":1e308}]}}"#;
    let Ok(Decoded::Message(WireMessage::Frame(f))) = Decoder::new().decode(line) else {
        panic!("the frame decodes: its numbers are valid JSON");
    };
    let p = f.gpus[0].power_avg_watts;
    assert!(p.is_none_or(f32::is_finite), "power {p:?}");
}

#[test]
pub(crate) fn repro_smi_f32_overflow_is_not_a_reading() {
    let mut d = SmiDecoder::new("n", &["index", "power.draw"], 1);
    let frames: Vec<_> = d
        .push_line("0, 1e308", T0_MS)
        .expect("a row")
        .into_iter()
        .filter_map(|m| match m {
            WireMessage::Frame(f) => Some(f),
            _ => None,
        })
        .collect();
    assert_eq!(frames.len(), 1, "one GPU expected, one frame");
    let p = frames[0].gpus[0].power_avg_watts;
    assert!(p.is_none_or(f32::is_finite), "power {p:?}");
}

#[test]
pub(crate) fn repro_wire_garbled_reason_is_short() {
    let line = format!(
        r#"{{"frame":{{"node":"n","at_ms":{}}}}}"#,
        long_json_string(70_000)
    );
    let e = Decoder::new().decode(&line).expect_err("garbled");
    assert!(
        e.to_string().len() <= MAX_ERROR_BYTES,
        "{} bytes",
        e.to_string().len()
    );
}

#[test]
pub(crate) fn repro_config_error_is_short() {
    let text = format!("{} = 1\n", "k".repeat(70_000));
    let e = Inventory::parse("burnin.toml", &text).expect_err("unknown key");
    assert!(
        e.to_string().len() <= MAX_ERROR_BYTES,
        "{} bytes",
        e.to_string().len()
    );
}

#[test]
pub(crate) fn repro_report_md_holds_no_control_character() {
    let dir = TempDir::new("report-escape");
    let from = root().join("tests/fixtures/h200-run/run5-record");
    for name in ["summary.json", "events.jsonl"] {
        let text = std::fs::read_to_string(from.join(name)).expect("record file");
        let text = text.replace(
            "\"next\":\"none: at the power limit",
            "\"next\":\"\\u001b]0;pwned\\u0007none: at the power limit",
        );
        std::fs::write(dir.0.join(name), text).expect("record file");
    }
    let files = burnin::report::write(&dir.0).expect("a report");
    let md = std::fs::read_to_string(files.markdown).expect("report.md");
    let bad = md
        .chars()
        .find(|c| c.is_control() && !matches!(c, '\n' | '\t'));
    assert!(bad.is_none(), "report.md holds {bad:?}");
}

#[test]
pub(crate) fn repro_record_summary_error_is_short() {
    let dir = TempDir::new("summary");
    std::fs::write(
        dir.0.join("summary.json"),
        format!(r#"{{"schema":{}}}"#, long_json_string(70_000)),
    )
    .expect("summary");
    let e = burnin::record::read_summary(&dir.0)
        .expect_err("not a summary")
        .to_string();
    assert!(e.len() <= MAX_ERROR_BYTES, "{} bytes", e.len());
}
