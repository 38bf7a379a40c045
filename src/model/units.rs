//! Units a person types: durations (`1s`, `250ms`, `2m`), for the command line and every file.

/// Parse `1s`, `250ms`, `2m` or plain milliseconds.
pub fn parse_duration(s: &str) -> Result<std::time::Duration, String> {
    let s = s.trim();
    let (num, unit) = match s.find(|c: char| !c.is_ascii_digit() && c != '.') {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, "ms"),
    };
    let v: f64 = num.parse().map_err(|_| {
        format!(
            "bad duration {:?}: use 1s, 500ms, 2m or 1h",
            super::excerpt(s)
        )
    })?;
    let secs = match unit {
        "ms" => v / 1000.0,
        "s" => v,
        "m" => v * 60.0,
        "h" => v * 3600.0,
        _ => {
            return Err(format!(
                "bad duration unit in {:?}: use ms, s, m or h",
                super::excerpt(s)
            ));
        }
    };
    // At least a millisecond (a zero period would spin), and no more than a day (a typo such as
    // `1e30s` must be an error, not a panic).
    if !(secs.is_finite() && (0.001..=86_400.0).contains(&secs)) {
        return Err(format!(
            "duration {:?} must be between 1ms and 24h",
            super::excerpt(s)
        ));
    }
    Ok(std::time::Duration::from_secs_f64(secs))
}

/// A whole number within `LO..=HI`, for counts and sizes given on the command line.
pub fn count<const LO: usize, const HI: usize>(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (LO..=HI).contains(&n) => Ok(n),
        _ => Err(format!(
            "{:?}: give a whole number from {LO} to {HI}",
            super::excerpt(s)
        )),
    }
}
