//! Properties every reader holds: errors short, numbers finite.

use super::*;

/// An error is a few lines whatever the input (see [`MAX_ERROR_BYTES`]).
pub(crate) fn check_error(what: &str, e: &str) -> Result<(), TestCaseError> {
    prop_assert!(
        e.len() <= MAX_ERROR_BYTES,
        "{what}: an error of {} bytes: {}",
        e.len(),
        preview(e.as_bytes(), 300)
    );
    Ok(())
}

/// How errors are held: to [`MAX_ERROR_BYTES`] ([`check_error`]), whatever the input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Errors {
    /// A few lines whatever the input.
    Short,
}

impl Errors {
    /// Check `e`, an error from reading some bytes (their count no longer matters: every
    /// reader's errors are short since issue 26; the enum keeps the call sites' one shape).
    pub(crate) fn check(self, what: &str, e: &str, _input_len: usize) -> Result<(), TestCaseError> {
        match self {
            Errors::Short => check_error(what, e),
        }
    }
}

/// The fields of a value's `Debug` text that hold a non-finite float (`NaN`, `inf`, `-inf`
/// outside string literals), by the name of the field they are in.
pub(crate) fn non_finite_fields(debug: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut field = String::new();
    let mut word = String::new();
    let mut chars = debug.chars().peekable();
    let flush = |word: &mut String, field: &String, out: &mut Vec<String>| {
        if matches!(word.as_str(), "NaN" | "inf" | "-inf") {
            out.push(field.clone());
        }
        word.clear();
    };
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                flush(&mut word, &field, &mut out);
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '"' => break,
                        _ => {}
                    }
                }
            }
            '\'' => {
                flush(&mut word, &field, &mut out);
                while let Some(c) = chars.next() {
                    match c {
                        '\\' => {
                            chars.next();
                        }
                        '\'' => break,
                        _ => {}
                    }
                }
            }
            c if c.is_alphanumeric() || c == '_' || c == '-' || c == '.' => word.push(c),
            ':' => {
                if !word.is_empty() {
                    field = word.clone();
                }
                word.clear();
            }
            _ => flush(&mut word, &field, &mut out),
        }
    }
    flush(&mut word, &field, &mut out);
    out
}

#[test]
pub(crate) fn the_non_finite_scanner_names_the_fields_and_skips_text() {
    #[derive(Debug)]
    #[allow(dead_code)]
    struct T {
        a: Option<f32>,
        b: Vec<f64>,
        name: &'static str,
        c: char,
        d: f64,
    }
    let t = T {
        a: Some(f32::INFINITY),
        b: vec![1.0, f64::NAN],
        name: "inf: NaN \" -inf",
        c: '"',
        d: -f64::INFINITY,
    };
    assert_eq!(non_finite_fields(&format!("{t:?}")), ["a", "b", "d"]);
    assert!(non_finite_fields(&format!("{:?}", (1.5f32, "nan", 1e300))).is_empty());
}

/// Fields that keep a non-finite value on purpose: a training log's loss printed as `nan` or
/// `inf` is the divergence the loss gates fail (src/parsers/trainlog.rs); a storage probe's
/// window in which no request finished has NaN latencies, its `null`s (src/probes/mod.rs).
pub(crate) const NON_FINITE_BY_DESIGN: &[&str] =
    &["loss", "ttfb_p50_ms", "ttfb_p99_ms", "total_p99_ms"];

/// A value holds no non-finite number, except where [`NON_FINITE_BY_DESIGN`] says.
pub(crate) fn check_finite(what: &str, value: &impl fmt::Debug) -> Result<(), TestCaseError> {
    let debug = format!("{value:?}");
    let bad: Vec<String> = non_finite_fields(&debug)
        .into_iter()
        .filter(|f| !NON_FINITE_BY_DESIGN.contains(&f.as_str()))
        .collect();
    prop_assert!(
        bad.is_empty(),
        "{what}: non-finite {bad:?} in {}",
        preview(debug.as_bytes(), 600)
    );
    Ok(())
}

/// The lines a node's stream hands the decoder, as the fleet reads them: split at `\n`, invalid
/// UTF-8 replaced, a line of [`burnin::sources::fleet::MAX_LINE_BYTES`] or more dropped.
pub(crate) fn stream_lines(bytes: &[u8]) -> Vec<String> {
    bytes
        .split_inclusive(|&c| c == b'\n')
        .map(|l| {
            if l.len() as u64 >= burnin::sources::fleet::MAX_LINE_BYTES {
                "<line too long>".to_string()
            } else {
                String::from_utf8_lossy(l).into_owned()
            }
        })
        .collect()
}
