//! What an output is: the kinds `burnin parse` reads, told apart by their signatures.

use crate::parsers::ParserKind;

/// What an output is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A phase output read by one of the plan's parsers.
    Tool(ParserKind),
    /// One command of T0's, read as that section (`driver`, `xid`, `acs`,
    /// `fabricmanager-version`).
    T0Section(&'static str),
    /// `nvidia-smi --query-gpu=… --format=csv`.
    SmiCsv,
    /// `nvidia-smi topo -m`.
    Topo,
    /// A dcgm-exporter (or `burnin agent --listen`) scrape.
    DcgmExporter,
    /// A MinIO metrics scrape.
    Minio,
}

/// Every kind by its name on the command line.
pub const KINDS: &[(&str, Kind)] = &[
    ("nccl-tests", Kind::Tool(ParserKind::NcclTests)),
    ("perftest", Kind::Tool(ParserKind::Perftest)),
    ("nvbandwidth", Kind::Tool(ParserKind::Nvbandwidth)),
    ("trainlog", Kind::Tool(ParserKind::Trainlog)),
    ("workload", Kind::Tool(ParserKind::Workload)),
    ("sanity", Kind::Tool(ParserKind::Sanity)),
    ("preflight", Kind::Tool(ParserKind::Preflight)),
    ("s3-probe", Kind::Tool(ParserKind::S3Probe)),
    ("gdsio", Kind::Tool(ParserKind::Gdsio)),
    ("dcgm-diag", Kind::Tool(ParserKind::DcgmDiag)),
    ("driver-version", Kind::T0Section("driver")),
    ("kernel-log", Kind::T0Section("xid")),
    ("lspci", Kind::T0Section("acs")),
    ("gdscheck", Kind::T0Section("gdscheck")),
    (
        "fabricmanager-version",
        Kind::T0Section("fabricmanager-version"),
    ),
    ("smi-csv", Kind::SmiCsv),
    ("topo", Kind::Topo),
    ("dcgm-exporter", Kind::DcgmExporter),
    ("minio", Kind::Minio),
];

impl Kind {
    /// The kind named `name` on the command line.
    pub fn from_name(name: &str) -> Option<Kind> {
        KINDS.iter().find(|(n, _)| *n == name).map(|(_, k)| *k)
    }

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        KINDS
            .iter()
            .find(|(_, k)| *k == self)
            .map_or("?", |(n, _)| n)
    }

    /// Every name, for messages.
    pub fn names() -> String {
        KINDS.iter().map(|(n, _)| *n).collect::<Vec<_>>().join(", ")
    }
}

/// The T0 checks a section answers (the rest of T0's checks need other sections).
pub(super) fn t0_checks_of(section: &str) -> &'static [&'static str] {
    match section {
        "driver" => &["driver-branch", "open-kernel-module"],
        "xid" => &["xid"],
        "acs" => &["pcie-acs"],
        "fabricmanager-version" => &[
            "fabric-manager",
            "fabric-manager-version",
            "fabric-manager-active",
        ],
        "gdscheck" => &[
            "gds-platform",
            "gds-nvidia-fs",
            "gds-backend",
            "gds-compat-mode",
            "gds-rdma",
            "gds-iommu",
            "gds-gpus",
        ],
        _ => &[],
    }
}

/// Guess the kind of `text` from lines only its tool prints; `None` when nothing fits.
pub fn detect(text: &str) -> Option<Kind> {
    let lines: Vec<&str> = text
        .lines()
        .take(20_000)
        .map(|l| crate::parsers::launcher::strip(l).body.trim())
        .collect();
    let any = |f: &dyn Fn(&str) -> bool| lines.iter().any(|l| f(l));
    let tagged = |tags: &[&str]| {
        any(&|l: &str| {
            l.starts_with('{')
                && tags.iter().any(|t| {
                    l.contains(&format!("\"burnin\":\"{t}\""))
                        || l.contains(&format!("\"burnin\": \"{t}\""))
                })
        })
    };
    if tagged(&["s3_window", "s3_report"]) {
        return Some(Kind::Tool(ParserKind::S3Probe));
    }
    if tagged(&["gemm", "step", "first_batch"]) {
        return Some(Kind::Tool(ParserKind::Workload));
    }
    let section = |name: &str| any(&|l: &str| l == format!("== {name}"));
    if any(&crate::parsers::dcgm_diag::is_diag_line) {
        return Some(Kind::Tool(ParserKind::DcgmDiag));
    }
    if any(&|l: &str| {
        crate::parsers::gdsio::gdsio_row(l).is_some()
            || crate::parsers::gdsio::gdsio_failure(l)
            // A result line a document wrapped: its first piece.
            || (l.starts_with("IoType:") && l.contains("XferType:"))
            // gds_stats' per-GPU count: the path a GPU-direct read took.
            || crate::parsers::gdsio::CufileReads::gds_stats_line(l).is_some()
    }) {
        return Some(Kind::Tool(ParserKind::Gdsio));
    }
    // `gdscheck -p` alone (T0 prints it under `== gdscheck`, read with the rest of T0).
    if !section("gdscheck")
        && any(&|l: &str| {
            l.starts_with("GDS release version")
                || l.starts_with("Platform verification")
                // A copy that kept only the driver section (a document's excerpt).
                || l.trim() == "DRIVER CONFIGURATION:"
                || l.eq_ignore_ascii_case("cufile configuration:")
        })
    {
        return Some(Kind::T0Section("gdscheck"));
    }
    if ["os", "numa", "acs", "packages", "kernel"]
        .iter()
        .any(|s| section(s))
    {
        return Some(Kind::Tool(ParserKind::Preflight));
    }
    if section("fabricmanager-active") || section("fabric") {
        return Some(Kind::Tool(ParserKind::Sanity));
    }
    let nccl_row = |l: &str| {
        let t: Vec<&str> = l.split_whitespace().collect();
        t.len() >= 8
            && t[0].bytes().all(|b| b.is_ascii_digit())
            && t[1].bytes().all(|b| b.is_ascii_digit())
            && matches!(
                t[2],
                "float"
                    | "half"
                    | "bfloat16"
                    | "double"
                    | "int8"
                    | "uint8"
                    | "int32"
                    | "uint32"
                    | "int64"
                    | "uint64"
                    | "f8e4m3"
                    | "f8e5m2"
                    | "char"
                    | "int"
            )
    };
    if any(&|l: &str| {
        nccl_row(l)
            || l.contains("Test NCCL failure")
            || l.contains("Test CUDA failure")
            || l.starts_with("# nThread")
            || l.starts_with("nThread ")
            || l.starts_with("# Collective test starting")
            || l.starts_with("# Avg bus bandwidth")
            || (l.starts_with('#') && l.contains("busbw") && l.contains("algbw"))
    }) {
        return Some(Kind::Tool(ParserKind::NcclTests));
    }
    if any(&|l: &str| {
        (l.starts_with("#bytes") && l.contains("#iterations"))
            || (l.ends_with(" Test") && (l.contains(" BW ") || l.contains(" Latency ")))
            || l.starts_with("Couldn't connect to ")
            || l.contains("Unable to init the socket connection")
            || l.starts_with("Completion with error")
    }) {
        return Some(Kind::Tool(ParserKind::Perftest));
    }
    if any(&|l: &str| {
        l.starts_with("nvbandwidth Version")
            || l.starts_with("\"nvbandwidth\"")
            || (l.starts_with("Running ")
                && ["device_to", "host_to", "multinode_", "all_to", "one_to"]
                    .iter()
                    .any(|t| l[8..].starts_with(t)))
            || (l.contains("(row)") && l.contains("(column)"))
    }) {
        return Some(Kind::Tool(ParserKind::Nvbandwidth));
    }
    {
        let mut p = crate::parsers::trainlog::TrainLogParser::new();
        let steps: usize = lines.iter().take(5000).map(|l| p.push(l).len()).sum();
        if steps > 0
            || p.framework().is_some()
            || any(&|l: &str| {
                l.contains("Watchdog caught collective operation timeout")
                    || l.contains("ProcessGroupNCCL")
            })
        {
            return Some(Kind::Tool(ParserKind::Trainlog));
        }
    }
    if any(&|l: &str| l.starts_with("NVRM version:")) {
        return Some(Kind::T0Section("driver"));
    }
    if any(&|l: &str| l.contains("Fabric Manager version is")) {
        return Some(Kind::T0Section("fabricmanager-version"));
    }
    if any(&|l: &str| l.contains("ACSCtl:")) {
        return Some(Kind::T0Section("acs"));
    }
    if any(&|l: &str| l.contains("NVRM: Xid") || l.contains("NVRM:")) {
        return Some(Kind::T0Section("xid"));
    }
    if any(&|l: &str| l.split_whitespace().next() == Some("GPU0"))
        && any(&|l: &str| l.starts_with("Legend") || l.contains("Affinity"))
    {
        return Some(Kind::Topo);
    }
    if any(&|l: &str| l.starts_with("DCGM_FI_") || l.contains(" DCGM_FI_")) {
        return Some(Kind::DcgmExporter);
    }
    // MinIO's metrics, its health check's answer (`curl -i …/minio/health/cluster`), `mc admin
    // info`'s summary, and its own log's quorum lines.
    if any(&|l: &str| {
        l.starts_with("minio_")
            || l.contains(" minio_")
            || l.starts_with("s3_ttfb_seconds")
            || l.to_ascii_lowercase().starts_with("x-minio-write-quorum:")
            || (l.contains(" drives online, ") && l.contains(" offline"))
            || l.contains("Write quorum could not be established")
            || l.contains("Storage resources are insufficient for the write operation")
            || l.contains("Insufficient number of drives online")
            || (l.contains("Waiting for a minimum of ") && l.contains("drives to come online"))
            || (l.trim_start().starts_with("Drives: ") && l.trim_end().ends_with(" OK"))
    }) {
        return Some(Kind::Minio);
    }
    // A `--format=csv` header: every cell a field name (`power.draw [W]`), one at least with
    // a dot or one of the plain names.
    let field = crate::sources::smi::is_field_name;
    if lines.iter().take(3).any(|l| {
        let cells: Vec<&str> = l.split(", ").collect();
        cells.iter().all(|c| field(c))
            && cells.iter().any(|c| {
                c.contains('.')
                    || matches!(
                        c.split(" [").next().unwrap_or(c).trim(),
                        "index" | "name" | "uuid" | "driver_version" | "timestamp"
                    )
            })
    }) {
        return Some(Kind::SmiCsv);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_help_names_every_kind() {
        use clap::CommandFactory;
        let mut cli = crate::commands::cli::Cli::command();
        let help = cli
            .find_subcommand_mut("parse")
            .expect("parse")
            .render_long_help()
            .to_string();
        let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
        for (name, _) in KINDS {
            assert!(
                help.contains(&format!(" {name},")) || help.contains(&format!(" {name};")),
                "{name}"
            );
        }
    }

    #[test]
    fn every_kind_has_a_name_it_reads_back() {
        for (name, kind) in KINDS {
            assert_eq!(Kind::from_name(name), Some(*kind));
            assert_eq!(kind.name(), *name);
        }
    }
}
