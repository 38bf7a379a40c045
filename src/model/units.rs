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

/// A sample period: how often a node is sampled, and the width of one slot of the store's
/// histories. A whole number of milliseconds from 1 ms to 24 h (the bounds of
/// [`parse_duration`]): never zero (a zero period would spin), and one number wherever it
/// travels, from burnin.toml's `interval` to the store and the agent's `--interval 250ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Period(std::num::NonZeroU64);

impl Period {
    /// The longest period, in milliseconds (24 h).
    pub const MAX_MS: u64 = 86_400_000;
    /// One millisecond: a history indexed by step rather than time keeps one slot per unit.
    pub const MILLISECOND: Period = match std::num::NonZeroU64::new(1) {
        Some(ms) => Period(ms),
        None => panic!("1 is not zero"),
    };
    /// One second, the default everywhere.
    pub const SECOND: Period = match std::num::NonZeroU64::new(1000) {
        Some(ms) => Period(ms),
        None => panic!("1000 is not zero"),
    };

    /// A period of `ms` milliseconds; `None` for 0 or more than [`Period::MAX_MS`].
    pub fn from_millis(ms: u64) -> Option<Period> {
        std::num::NonZeroU64::new(ms)
            .filter(|ms| ms.get() <= Self::MAX_MS)
            .map(Period)
    }

    /// The period in whole milliseconds (at least 1).
    pub const fn millis(self) -> u64 {
        self.0.get()
    }

    /// The period as a [`std::time::Duration`] (timers).
    pub fn duration(self) -> std::time::Duration {
        std::time::Duration::from_millis(self.millis())
    }

    /// How the agent's command line says it: `--interval 250ms`.
    pub fn arg(self) -> String {
        format!("{}ms", self.millis())
    }
}

impl Default for Period {
    fn default() -> Self {
        Period::SECOND
    }
}

impl std::fmt::Display for Period {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.millis() {
            ms if ms % 1000 == 0 => write!(f, "{}s", ms / 1000),
            ms => write!(f, "{ms}ms"),
        }
    }
}

impl TryFrom<std::time::Duration> for Period {
    type Error = String;

    /// Whole milliseconds of `d` (a fraction of one is dropped); an error below 1 ms or above 24 h.
    fn try_from(d: std::time::Duration) -> Result<Period, String> {
        u64::try_from(d.as_millis())
            .ok()
            .and_then(Period::from_millis)
            .ok_or_else(|| format!("a period of {d:?} is outside 1ms to 24h"))
    }
}

/// Parse a period as [`parse_duration`] reads it (`1s`, `250ms`, `2m` or plain milliseconds).
pub fn parse_period(s: &str) -> Result<Period, String> {
    parse_duration(s).and_then(Period::try_from)
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_period_is_whole_milliseconds_from_1ms_to_24h() {
        assert_eq!(parse_period("250ms").map(Period::millis), Ok(250));
        assert_eq!(parse_period("1s"), Ok(Period::SECOND));
        // A fraction of a millisecond is dropped; below one is refused where it is read.
        assert_eq!(parse_period("1.5ms").map(Period::millis), Ok(1));
        assert!(parse_period("0.5ms").is_err());
        assert!(parse_period("0").is_err());
        assert_eq!(parse_period("24h").map(Period::millis), Ok(Period::MAX_MS));
        assert!(parse_period("25h").is_err());
        assert_eq!(Period::from_millis(0), None);
        assert_eq!(Period::from_millis(Period::MAX_MS + 1), None);
        assert!(Period::try_from(std::time::Duration::from_micros(999)).is_err());
    }

    #[test]
    fn a_period_says_itself_as_the_agent_and_a_person_read_it() {
        let p = Period::from_millis(250).expect("period");
        assert_eq!(p.arg(), "250ms");
        assert_eq!(parse_period(&p.arg()), Ok(p));
        assert_eq!(p.to_string(), "250ms");
        assert_eq!(Period::SECOND.to_string(), "1s");
        assert_eq!(Period::SECOND.duration(), std::time::Duration::from_secs(1));
        assert_eq!(Period::default(), Period::SECOND);
    }
}
