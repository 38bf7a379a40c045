//! Test-only: loading the captured tool output under `tests/fixtures/`. Files copied from
//! `shared/fixtures` begin with one `# source: …` line that is not part of the tool's output;
//! everything after it is kept byte for byte (shared/fixtures/INDEX.md).

/// The tool output of `tests/fixtures/REL`, without its `# source:` line.
pub fn tool_output(rel: &str) -> String {
    let path = format!("{}/tests/fixtures/{rel}", env!("CARGO_MANIFEST_DIR"));
    let text = if rel.ends_with(".gz") {
        // A long real log kept compressed (a whole T8 run's step lines).
        use std::io::Read;
        let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut text = String::new();
        flate2::read::GzDecoder::new(file)
            .read_to_string(&mut text)
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        text
    } else {
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    match text.split_once('\n') {
        Some((first, rest)) if first.starts_with("# source:") => rest.to_string(),
        _ => text,
    }
}

/// The text of `tests/corpus/REL` (real outputs of others, kept byte for byte).
pub fn corpus_text(rel: &str) -> String {
    let path = format!("{}/tests/corpus/{rel}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}
