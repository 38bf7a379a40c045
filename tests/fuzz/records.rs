//! Records on disk.

use super::*;

/// A run record of the fixtures, file by file (telemetry decompressed).
pub(crate) struct RecordSeed {
    /// Its directory, relative to the package.
    pub(crate) name: String,
    pub(crate) summary: Option<Vec<u8>>,
    pub(crate) events: Option<Vec<u8>>,
    pub(crate) plan: Option<Vec<u8>>,
    pub(crate) telemetry: Option<Vec<u8>>,
}

/// Every run record among the fixtures (a directory with a `summary.json`).
pub(crate) fn record_seeds() -> &'static [RecordSeed] {
    static R: OnceLock<Vec<RecordSeed>> = OnceLock::new();
    R.get_or_init(|| {
        files_under("tests/fixtures", &|n| n == "summary.json")
            .into_iter()
            .map(|rel| {
                let dir = root()
                    .join(&rel)
                    .parent()
                    .expect("a directory")
                    .to_path_buf();
                let read = |name: &str| std::fs::read(dir.join(name)).ok();
                let telemetry = read("telemetry/000.jsonl.gz").map(|gz| {
                    let mut text = Vec::new();
                    std::io::Read::read_to_end(
                        &mut flate2::read::MultiGzDecoder::new(&gz[..]),
                        &mut text,
                    )
                    .expect("a whole segment");
                    text
                });
                RecordSeed {
                    name: rel.trim_end_matches("/summary.json").to_string(),
                    summary: read("summary.json"),
                    events: read("events.jsonl"),
                    plan: read("plan.toml"),
                    telemetry,
                }
            })
            .collect()
    })
}

/// A mutated record: a fixture record and the changes to each of its files (the telemetry
/// segment's text before compression, and its compressed bytes after).
#[derive(Clone)]
pub(crate) struct RecordCase {
    pub(crate) record: usize,
    pub(crate) summary: Vec<Op>,
    pub(crate) events: Vec<Op>,
    pub(crate) plan: Vec<Op>,
    pub(crate) telemetry: Vec<Op>,
    pub(crate) gz: Vec<Op>,
    /// The segment written twice (`000` and `001`).
    pub(crate) two_segments: bool,
}

/// The files of a mutated record, by name (`None`: left out).
pub(crate) struct RecordFiles {
    pub(crate) summary: Option<Vec<u8>>,
    pub(crate) events: Option<Vec<u8>>,
    pub(crate) plan: Option<Vec<u8>>,
    pub(crate) segment: Option<Vec<u8>>,
}

impl RecordCase {
    /// The mutated files; splices take partners from the same file of the other records.
    pub(crate) fn files(&self) -> RecordFiles {
        let all = record_seeds();
        let seed = &all[self.record];
        let change =
            |own: &Option<Vec<u8>>, pick: &dyn Fn(&RecordSeed) -> &Option<Vec<u8>>, ops: &[Op]| {
                let pool: Vec<&[u8]> = all.iter().filter_map(|r| pick(r).as_deref()).collect();
                own.as_ref().map(|b| mutate(b, &pool, ops))
            };
        let telemetry = change(&seed.telemetry, &|r| &r.telemetry, &self.telemetry);
        let segment = telemetry.map(|text| {
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            gz.write_all(&text).expect("in memory");
            let gz = gz.finish().expect("in memory");
            mutate(&gz, &[&gz], &self.gz)
        });
        RecordFiles {
            summary: change(&seed.summary, &|r| &r.summary, &self.summary),
            events: change(&seed.events, &|r| &r.events, &self.events),
            plan: change(&seed.plan, &|r| &r.plan, &self.plan),
            segment,
        }
    }
}

impl fmt::Debug for RecordCase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let files = self.files();
        let show = |ops: &[Op], b: &Option<Vec<u8>>| match b {
            Some(b) if !ops.is_empty() => format!("{ops:?} → {}", preview(b, 1500)),
            Some(_) => "as recorded".to_string(),
            None => "absent".to_string(),
        };
        f.debug_struct("RecordCase")
            .field("record", &record_seeds()[self.record].name)
            .field("summary.json", &show(&self.summary, &files.summary))
            .field("events.jsonl", &show(&self.events, &files.events))
            .field("plan.toml", &show(&self.plan, &files.plan))
            .field("telemetry text", &self.telemetry)
            .field("000.jsonl.gz", &show(&self.gz, &files.segment))
            .field("two_segments", &self.two_segments)
            .finish()
    }
}

/// A record of the fixtures with up to four changes to each file.
pub(crate) fn record_case() -> impl Strategy<Value = RecordCase> {
    let ops = || proptest::collection::vec(op(), 0..=4);
    (
        0..record_seeds().len(),
        ops(),
        ops(),
        ops(),
        ops(),
        ops(),
        any::<bool>(),
    )
        .prop_map(
            |(record, summary, events, plan, telemetry, gz, two_segments)| RecordCase {
                record,
                summary,
                events,
                plan,
                telemetry,
                gz,
                two_segments,
            },
        )
}

/// A directory of its own under the system's temporary directory, removed when dropped.
pub(crate) struct TempDir(pub(crate) PathBuf);

impl TempDir {
    /// A new, empty one.
    pub(crate) fn new(what: &str) -> TempDir {
        static N: AtomicU64 = AtomicU64::new(0);
        let p = std::env::temp_dir().join(format!(
            "burnin-fuzz-{what}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("a temporary directory");
        TempDir(p)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Write the record's files into `dir`.
pub(crate) fn write_record(dir: &Path, files: &RecordFiles, two_segments: bool) {
    let put = |name: &str, b: &Option<Vec<u8>>| {
        if let Some(b) = b {
            let p = dir.join(name);
            std::fs::create_dir_all(p.parent().expect("a parent")).expect("record directory");
            std::fs::write(p, b).expect("record file");
        }
    };
    put("summary.json", &files.summary);
    put("events.jsonl", &files.events);
    put("plan.toml", &files.plan);
    put("telemetry/000.jsonl.gz", &files.segment);
    if two_segments {
        put("telemetry/001.jsonl.gz", &files.segment);
    }
}

/// Events a replay plays at most per case (a record may span a month of clock ticks).
pub(crate) const REPLAY_EVENTS: usize = 3000;

/// Every reader of a record over `c` written out: events, summary, recorded plan, state,
/// telemetry (whole and streamed), the replay's timeline into a store, and the report (with
/// `printable`, `report.md` holds no control character but newline and tab).
pub(crate) fn read_record(
    c: &RecordCase,
    errors: Errors,
    printable: bool,
) -> Result<(), TestCaseError> {
    let dir = TempDir::new("record");
    let run = dir.0.as_path();
    let files = c.files();
    write_record(run, &files, c.two_segments);
    let size = |b: &Option<Vec<u8>>| b.as_ref().map_or(0, Vec::len);
    let all = size(&files.summary) + size(&files.events) + size(&files.plan) + size(&files.segment);
    match burnin::record::read_events(run) {
        Ok((events, bad)) => prop_assert!(bad as usize + events.len() <= size(&files.events)),
        Err(e) => errors.check("read_events", &e.to_string(), all)?,
    }
    match burnin::record::read_summary(run) {
        Ok(s) => {
            let (_, note) = burnin::record::recorded_plan(run, &s);
            if let Some(n) = note {
                errors.check("recorded_plan", &n, all)?;
            }
        }
        Err(e) => errors.check("read_summary", &e.to_string(), all)?,
    }
    if let Err(e) = burnin::record::read_state(run) {
        errors.check("read_state", &e.to_string(), all)?;
    }
    match burnin::record::telemetry::read_telemetry(run) {
        Ok(t) => prop_assert!(t.torn.len() <= 2),
        Err(e) => errors.check("read_telemetry", &e.to_string(), all)?,
    }
    let mut stream = burnin::record::telemetry::TelemetryStream::open(run);
    for item in stream.by_ref() {
        if let Err(e) = item {
            errors.check("TelemetryStream", &e.to_string(), all)?;
        }
    }
    match burnin::sources::replay::Timeline::load(run) {
        Ok(t) => {
            let mut store = ClusterStore::new();
            for ev in t.play().take(REPLAY_EVENTS).map(|(_, e)| e) {
                store.ingest(ev);
            }
        }
        Err(e) => errors.check("Timeline::load", &e.to_string(), all)?,
    }
    match burnin::report::write(run) {
        Ok(files) if printable => {
            let md = std::fs::read_to_string(&files.markdown).expect("report.md");
            let bad = md
                .chars()
                .find(|c| c.is_control() && !matches!(c, '\n' | '\t'));
            prop_assert!(bad.is_none(), "report.md holds {bad:?}");
        }
        Ok(_) => {}
        Err(e) => errors.check("report::write", &e.to_string(), all)?,
    }
    Ok(())
}

proptest! {
    #![proptest_config(config("record"))]

    /// Records, mutated file by file, through every reader of a record ([`read_record`]).
    #[test]
    fn record_readers_take_any_record(c in record_case()) {
        cap_memory();
        read_record(&c, Errors::Short, false)?;
    }
}

proptest! {
    #![proptest_config(config("record-report"))]

    /// What a record says reaches `report.md` without control characters: someone `cat`s the
    /// report in a terminal.
    #[test]
    fn report_md_holds_no_control_character(c in record_case()) {
        cap_memory();
        read_record(&c, Errors::Short, true)?;
    }
}

proptest! {
    #![proptest_config(config("record-errors"))]

    /// The record's readers' errors are a few lines, however long what they read (serde_json's
    /// message quotes a whole string value of the wrong type).
    #[test]
    fn record_errors_are_short(c in record_case()) {
        cap_memory();
        read_record(&c, Errors::Short, false)?;
    }
}
