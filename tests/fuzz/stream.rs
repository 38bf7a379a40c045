//! Agent NDJSON frames.

use super::*;

/// Decode every line with the decoder (fast path first) and with serde alone; errors stay
/// short, and where both read a line they read the same message.
pub(crate) fn decode_stream(
    lines: &[String],
    errors: Errors,
) -> Result<Vec<WireMessage>, TestCaseError> {
    let mut d = Decoder::new();
    let mut out = Vec::new();
    for line in lines {
        let fast = d.decode(line);
        let general = wire::decode_general(line.trim());
        match &fast {
            Ok(Decoded::Message(m)) => out.push(m.clone()),
            Ok(_) => {}
            Err(g) => errors.check("wire::Decoder::decode", &g.to_string(), line.len())?,
        }
        if let Err(e) = &general {
            errors.check("wire::decode_general", e, line.len())?;
        }
        // The fast path reads only what serde reads, and reads it the same.
        if line.trim().starts_with('{') {
            match (&fast, &general) {
                (Ok(a), Ok(b)) => prop_assert_eq!(
                    a,
                    b,
                    "fast path and serde read {} differently",
                    preview(line.as_bytes(), 300)
                ),
                (Ok(a), Err(e)) => {
                    return Err(TestCaseError::fail(format!(
                        "the fast path read {} as {a:?}, serde refuses it: {e}",
                        preview(line.as_bytes(), 300)
                    )));
                }
                _ => {}
            }
        }
    }
    prop_assert_eq!(d.lines(), lines.len() as u64);
    prop_assert!(d.garbled() <= d.lines());
    Ok(out)
}

proptest! {
    #![proptest_config(config("wire"))]

    /// Agent streams, mutated, through `wire::Decoder::decode` and `wire::decode_general`.
    #[test]
    fn wire_decoder_takes_any_stream(c in case(Family::Ndjson)) {
        cap_memory();
        decode_stream(&stream_lines(&c.bytes()), Errors::Short)?;
    }
}

proptest! {
    #![proptest_config(config("wire-errors"))]

    /// A garbled line's reason is a few lines, however long the line (serde_json's message
    /// quotes a whole string value of the wrong type).
    #[test]
    fn wire_decoder_errors_are_short(c in case(Family::Ndjson)) {
        cap_memory();
        decode_stream(&stream_lines(&c.bytes()), Errors::Short)?;
    }
}

proptest! {
    #![proptest_config(config("wire-finite"))]

    /// Non-finite readings decoded from a frame (`"power_avg_watts":1e308` read into an `f32`
    /// is `inf`): the rule says such a number is an error where it is read.
    #[test]
    fn wire_decoder_never_yields_a_non_finite_reading(c in case(Family::Ndjson)) {
        cap_memory();
        for m in decode_stream(&stream_lines(&c.bytes()), Errors::Short)? {
            check_finite("wire message", &m)?;
        }
    }
}
