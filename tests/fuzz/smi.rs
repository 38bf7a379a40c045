//! nvidia-smi CSV.

use super::*;

/// Stamps for the lines of a stream: one a second from an arbitrary start.
pub(crate) const T0_MS: u64 = 1_796_202_000_000;

/// The `--query-gpu` fields a seed answers: its own (header-less corpus captures), else what
/// burnin asks modern or legacy drivers (a header, when the text has one, re-maps them).
pub(crate) fn smi_fields(seed: &Seed, legacy: bool) -> Vec<&'static str> {
    match &seed.fields {
        Some(f) => f
            .iter()
            .map(|s| &*Box::leak(s.clone().into_boxed_str()))
            .collect(),
        None if legacy => LEGACY_FIELDS.to_vec(),
        None => MODERN_FIELDS.to_vec(),
    }
}

/// Every line through `SmiDecoder::push_line`, then `finish`: the messages, with errors short
/// and no frame holding more GPUs than the node is expected to have.
pub(crate) fn decode_smi(
    c: &Case,
    legacy: bool,
    expected_gpus: u32,
) -> Result<Vec<WireMessage>, TestCaseError> {
    let fields = smi_fields(c.seed(), legacy);
    let mut d = SmiDecoder::new("n0", &fields, expected_gpus);
    let mut out = Vec::new();
    let lines = stream_lines(&c.bytes());
    for (i, line) in lines.iter().enumerate() {
        match d.push_line(line, T0_MS + i as u64 * 1000) {
            Ok(m) => out.extend(m),
            Err(g) => check_error("SmiDecoder::push_line", &g.to_string())?,
        }
    }
    out.extend(d.finish(T0_MS + lines.len() as u64 * 1000));
    prop_assert!(d.garbled() <= lines.len() as u64);
    for m in &out {
        match m {
            WireMessage::Frame(f) => prop_assert!(
                f.gpus.len() <= expected_gpus.max(1) as usize,
                "a frame of {} GPUs from a node of {expected_gpus}",
                f.gpus.len()
            ),
            WireMessage::Hello(h) => prop_assert!(h.gpus.len() <= expected_gpus.max(1) as usize),
            WireMessage::Error(e) => {
                prop_assert!(e.len() <= burnin::sources::fleet::MAX_LINE_BYTES as usize + 64)
            }
        }
    }
    Ok(out)
}

proptest! {
    #![proptest_config(config("smi"))]

    /// nvidia-smi CSV (corpus and fixtures), mutated, through `SmiDecoder`.
    #[test]
    fn smi_decoder_takes_any_csv(
        c in case(Family::Smi),
        legacy in any::<bool>(),
        expected_gpus in prop_oneof![Just(1u32), Just(8), 0..=16u32],
    ) {
        cap_memory();
        decode_smi(&c, legacy, expected_gpus)?;
    }
}

proptest! {
    #![proptest_config(config("smi-finite"))]

    /// A value nvidia-smi prints that overflows the reading's type (`1e308` W in an `f32`) is
    /// no reading, never `inf`.
    #[test]
    fn smi_decoder_never_yields_a_non_finite_reading(
        c in case(Family::Smi),
        legacy in any::<bool>(),
    ) {
        cap_memory();
        for m in decode_smi(&c, legacy, 8)? {
            check_finite("smi message", &m)?;
        }
    }
}
