//! The budget of the cases: how many, how long, which seed, how much memory.

use super::*;

/// Cases per target when neither `BURNIN_FUZZ_CASES` nor `PROPTEST_CASES` says: the whole
/// target stays well under 90 s in the debug profile on a 2-core machine (docs/fuzzing.md).
pub(crate) const DEFAULT_CASES: u32 = 256;

/// A case slower than this (debug profile) is a hang.
pub(crate) const DEFAULT_TIMEOUT_MS: u32 = 60_000;

/// The longest error a reader may return, whatever the input: a few lines naming the place
/// and the cause, never the input copied back.
pub(crate) const MAX_ERROR_BYTES: usize = 4096;

/// An environment variable as a number, if set and valid.
pub(crate) fn env_u32(name: &str) -> Option<u32> {
    std::env::var(name).ok()?.trim().parse().ok()
}

/// Cases per target: `BURNIN_FUZZ_CASES`, else `PROPTEST_CASES`, else [`DEFAULT_CASES`].
pub(crate) fn cases() -> u32 {
    env_u32("BURNIN_FUZZ_CASES")
        .or_else(|| env_u32("PROPTEST_CASES"))
        .unwrap_or(DEFAULT_CASES)
}

/// The seed of the cases when `BURNIN_FUZZ_SEED` does not say: CI runs the same cases every
/// time (a failure there is the code's, never the draw's).
pub(crate) const DEFAULT_SEED: u64 = 26;

/// The proptest configuration of one target: the budget, the hang limit, the seed
/// (`BURNIN_FUZZ_SEED`: a number, or `random`; else `PROPTEST_RNG_SEED`, else [`DEFAULT_SEED`]),
/// and failures kept in `proptest-regressions/fuzz/<target>.txt` (relative to the package,
/// where cargo runs tests).
pub(crate) fn config(target: &str) -> ProptestConfig {
    let mut c = ProptestConfig::with_cases(cases());
    let path: &'static str =
        Box::leak(format!("proptest-regressions/fuzz/{target}.txt").into_boxed_str());
    c.failure_persistence = Some(Box::new(FileFailurePersistence::Direct(path)));
    c.timeout = env_u32("BURNIN_FUZZ_TIMEOUT_MS").unwrap_or(DEFAULT_TIMEOUT_MS);
    match std::env::var("BURNIN_FUZZ_SEED")
        .ok()
        .as_deref()
        .map(str::trim)
    {
        Some("random") => c.rng_seed = RngSeed::Random,
        Some(n) => {
            c.rng_seed = RngSeed::Fixed(n.parse().expect("BURNIN_FUZZ_SEED: a number or `random`"))
        }
        None if std::env::var_os("PROPTEST_RNG_SEED").is_some() => {}
        None => c.rng_seed = RngSeed::Fixed(DEFAULT_SEED),
    }
    c
}

/// Most memory (address space, MiB) the process that runs the cases may take
/// (`BURNIN_FUZZ_MEMORY_MB`): a reader that grows without bound fails the case (the allocation
/// fails and the process aborts) instead of taking the machine down.
pub(crate) const DEFAULT_MEMORY_MB: u64 = 3072;

/// Cap this process's address space at `BURNIN_FUZZ_MEMORY_MB` or [`DEFAULT_MEMORY_MB`]
/// (once). With a hang limit the cases run in a child process of their own, which is the one
/// capped.
pub(crate) fn cap_memory() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        cap_memory_to(env_u32("BURNIN_FUZZ_MEMORY_MB").map_or(DEFAULT_MEMORY_MB, u64::from))
    });
}

/// Cap this process's address space at `mb` MiB (or its hard limit, if lower).
pub(crate) fn cap_memory_to(mb: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct we pass.
    let rc = unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) };
    assert_eq!(rc, 0, "getrlimit(RLIMIT_AS)");
    limit.rlim_cur = ((mb << 20) as libc::rlim_t).min(limit.rlim_max);
    // SAFETY: setrlimit reads the struct we pass.
    let rc = unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) };
    assert_eq!(rc, 0, "setrlimit(RLIMIT_AS)");
}
