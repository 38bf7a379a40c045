//! Tool parsers (`ParserKind`) and launcher prefixes.

use super::*;

/// Every parser kind.
pub(crate) const PARSERS: [ParserKind; 11] = [
    ParserKind::NcclTests,
    ParserKind::Perftest,
    ParserKind::Nvbandwidth,
    ParserKind::Workload,
    ParserKind::Trainlog,
    ParserKind::Sanity,
    ParserKind::Preflight,
    ParserKind::S3Probe,
    ParserKind::Gdsio,
    ParserKind::DcgmDiag,
    ParserKind::None,
];

/// Where a kind sits in [`PARSERS`]: a new `ParserKind` does not compile here until it is
/// listed, so none goes unfuzzed.
pub(crate) fn parser_slot(k: ParserKind) -> usize {
    match k {
        ParserKind::NcclTests => 0,
        ParserKind::Perftest => 1,
        ParserKind::Nvbandwidth => 2,
        ParserKind::Workload => 3,
        ParserKind::Trainlog => 4,
        ParserKind::Sanity => 5,
        ParserKind::Preflight => 6,
        ParserKind::S3Probe => 7,
        ParserKind::Gdsio => 8,
        ParserKind::DcgmDiag => 9,
        ParserKind::None => 10,
    }
}

#[test]
pub(crate) fn every_parser_kind_is_fuzzed() {
    for (i, k) in PARSERS.iter().enumerate() {
        assert_eq!(parser_slot(*k), i, "{k:?}");
    }
}

/// The parser a case goes to: its seed's own, unless `other` names another (and always one for
/// outputs no parser of a phase reads).
pub(crate) fn parser_for(seed: &Seed, other: Option<Index>) -> ParserKind {
    match (seed.kind, other) {
        (_, Some(i)) => PARSERS[i.index(PARSERS.len())],
        (Some(Kind::Tool(p)), None) => p,
        (_, None) => ParserKind::NcclTests,
    }
}

proptest! {
    #![proptest_config(config("parsers"))]

    /// Tool outputs, mutated, line by line through `OutputParser` (its launcher-prefix
    /// splitting included) and `launcher::strip`, then the gates' figures: errors short, every
    /// figure finite (a loss may be `nan`: it is what the loss gates fail).
    #[test]
    fn tool_parsers_take_any_output(
        c in case(Family::Outputs),
        other in proptest::option::weighted(0.3, any::<Index>()),
        gpus in prop_oneof![Just(8u32), Just(1), 0..=1024u32],
    ) {
        cap_memory();
        let kind = parser_for(c.seed(), other);
        let text = c.text();
        let mut p = OutputParser::new(kind, ParseContext { node: "n0".into(), expected_gpus: gpus });
        let mut metrics = Vec::new();
        for line in text.lines() {
            let l = launcher::strip(line);
            let (start, end) = (line.as_ptr() as usize, line.as_ptr() as usize + line.len());
            let body = l.body.as_ptr() as usize;
            prop_assert!(start <= body && body + l.body.len() <= end, "the body is part of the line");
            match p.push(line) {
                Ok(m) => metrics.extend(m),
                Err(e) => check_error("OutputParser::push", &e.to_string())?,
            }
        }
        metrics.extend(p.finish());
        prop_assert_eq!(p.lines(), text.lines().count());
        for m in &metrics {
            check_finite("phase metric", m)?;
        }
        let figures = burnin::plan::gates::figures(&metrics);
        check_finite("figures", &figures)?;
    }
}

/// What `burnin parse` prints from a file holds no control character but the newline (it all
/// goes through `model::strip_controls`).
pub(crate) fn check_printable(what: &str, text: &str) -> Result<(), TestCaseError> {
    let bad = text.chars().find(|c| c.is_control() && *c != '\n');
    prop_assert!(
        bad.is_none(),
        "{what}: prints {bad:?}: {}",
        preview(text.as_bytes(), 600)
    );
    Ok(())
}

/// The options `burnin parse` reads a case with: the shipped plan, 8 GPUs, the seed's smi
/// fields, and a saved baseline when `baseline` says.
pub(crate) fn parse_options(seed: &Seed, baseline: bool) -> Options {
    Options {
        plan: burnin::plan::default_plan().clone(),
        baseline: baseline.then(|| {
            burnin::record::session::read_baseline(
                &root().join("tests/fixtures/h200-verdicts/burnin-baseline.json"),
            )
            .expect("the H200 baseline")
        }),
        gpus: 8,
        smi_fields: seed.fields.clone(),
        // With a baseline, also as the nodes of a B300 site of 96 nodes (eight ConnectX-8 ports
        // each): the `spec` gates judge the mutated output too.
        hardware: baseline.then(|| parse::hardware::NodesAs {
            nodes: 96,
            parts: burnin::model::spec::NodeParts {
                gpus: vec![burnin::model::spec::Part {
                    pci_id: Some(0x3182),
                    name: "NVIDIA B300 SXM6 AC".into(),
                    count: 8,
                }],
                nics: vec![burnin::model::spec::Part {
                    pci_id: Some(0x1023),
                    name: "InfiniBand".into(),
                    count: 8,
                }],
                from: "fuzz".into(),
            },
        }),
    }
}

/// As what kind `burnin parse` reads a case.
#[derive(Debug, Clone)]
pub(crate) enum KindChoice {
    /// The seed's own kind (detected when it has none).
    Own,
    /// Whatever `parse::detect` finds.
    Detect,
    /// One of every kind.
    Any(Index),
}

proptest! {
    #![proptest_config(config("parse-cmd"))]

    /// Every file `burnin parse` reads, mutated, through `parse::read_text` as its own
    /// kind, as any kind, or detected, then judged by the shipped plan and printed: errors
    /// short, the printout free of control characters.
    #[test]
    fn burnin_parse_takes_any_file(
        c in case(Family::Outputs),
        kind in prop_oneof![
            Just(KindChoice::Own),
            Just(KindChoice::Detect),
            any::<Index>().prop_map(KindChoice::Any),
        ],
        baseline in any::<bool>(),
    ) {
        cap_memory();
        let text = c.text();
        let kind = match kind {
            KindChoice::Own => c.seed().kind,
            KindChoice::Detect => None,
            KindChoice::Any(i) => Some(KINDS[i.index(KINDS.len())].1),
        };
        match parse::read_text("n0.log", &text, kind, &parse_options(c.seed(), baseline)) {
            Ok(r) => {
                check_printable("parse::render", &parse::render(&r))?;
                for m in &r.metrics {
                    check_finite("phase metric", m)?;
                }
            }
            Err(e) => check_error("parse::read_text", &e)?,
        }
    }
}
