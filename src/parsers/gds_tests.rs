//! Tests of `gdscheck -p`'s reader and judge, on real outputs (src/parsers/gds.rs).

use super::*;

const HEALTHY_114: &str = " GDS release version: 1.14.0.30
 nvidia_fs version:  2.24 libcufile version: 2.12
 NVMe P2PDMA        : Unsupported
 NVMe               : Supported
 NVMeOF             : Unsupported
 Userspace RDMA     : Unsupported
 --Mellanox PeerDirect : Enabled
 --rdma devices        : Not configured
 --rdma_device_status  : Up: 0 Down: 0
 properties.use_compat_mode : false
 properties.force_compat_mode : false
 GPU index 0 NVIDIA RTX 6000 Ada Generation bar:1 bar size (MiB):65536 supports GDS, IOMMU State: Disabled
 IOMMU: disabled
 Platform verification succeeded";

fn lines(t: &str) -> Vec<&str> {
    t.lines().collect()
}

fn status(checks: &[GdsCheckLine], name: &str) -> Option<CheckStatus> {
    checks.iter().find(|c| c.0 == name).map(|c| c.1)
}

#[test]
fn a_healthy_nvme_node_passes_every_check() {
    let c = GdsCheck::read(&lines(HEALTHY_114));
    assert_eq!(c.release.as_deref(), Some("1.14.0.30"));
    assert_eq!(c.nvidia_fs.as_deref(), Some("2.24"));
    assert_eq!(c.libcufile.as_deref(), Some("2.12"));
    assert_eq!(c.rdma_up_down, Some((0, 0)));
    let checks = judge(None, &c, "NVMe");
    for (name, s, why) in &checks {
        assert_eq!(*s, CheckStatus::Ok, "{name}: {why}");
    }
    assert_eq!(status(&checks, "gds-backend"), Some(CheckStatus::Ok));
    assert_eq!(
        status(&judge(None, &c, "NVMeOF"), "gds-backend"),
        Some(CheckStatus::Failed)
    );
}

#[test]
fn modes_of_1_16_are_direct_only_with_a_direct_mode() {
    let row = |v: &str| Backend {
        name: "NVMe".into(),
        value: v.into(),
    };
    assert!(row("nvfs, compat").direct());
    assert!(row("p2pdma, compat").direct());
    assert!(row("c2c, nvfs, compat").direct());
    assert!(!row("compat").direct());
    assert!(!row("Unsupported").direct());
}

#[test]
fn no_module_and_compat_only_fails_where_the_path_cannot_be_direct() {
    let text = " GDS release version: 1.16.0.49
 nvidia_fs minimum version: 2.12
 NVMe               : compat
 NFS                : compat
 properties.use_compat_mode : true
 Platform verification succeeded";
    let c = GdsCheck::read(&lines(text));
    assert_eq!(c.nvidia_fs, None, "the minimum is not the loaded version");
    let checks = judge(Some(&["nvidia_fs: not loaded".to_string()]), &c, "");
    assert_eq!(status(&checks, "gds-nvidia-fs"), Some(CheckStatus::Failed));
    assert_eq!(status(&checks, "gds-backend"), Some(CheckStatus::Failed));
    assert_eq!(status(&checks, "gds-compat-mode"), Some(CheckStatus::Warn));
}

/// Two healthy nodes a first version failed: a container without lsmod (the module's own
/// version file says it is loaded), and a 1.15 VM whose NVMe is direct through P2PDMA
/// (`NVMe : Unsupported` beside `NVMe P2PDMA : Supported`) with the site naming "NVMe".
#[test]
fn a_container_without_lsmod_and_an_nvme_read_through_p2pdma_pass() {
    let l4 = crate::parsers::fixtures::corpus_text(
        "gdscheck/nvidia-troubleshooting-guide-gds-1.16.0.49-l4-nvfs-compat-dmabuf-sample-spaces-collapsed.txt",
    );
    let c = GdsCheck::read(&l4.lines().collect::<Vec<_>>());
    let module = [
        "version: 2.27".to_string(),
        "nvidia_fs: not loaded".to_string(),
    ];
    assert_eq!(
        status(&judge(Some(&module), &c, "NVMe"), "gds-nvidia-fs"),
        Some(CheckStatus::Ok)
    );
    let vm = crate::parsers::fixtures::corpus_text(
        "gdscheck/gds-1.15.0.42-l40s-vm-p2pdma-no-nvidia-fs-nvme-p2pdma-supported.txt",
    );
    let c = GdsCheck::read(&vm.lines().collect::<Vec<_>>());
    let checks = judge(None, &c, "NVMe");
    assert_eq!(
        status(&checks, "gds-backend"),
        Some(CheckStatus::Ok),
        "{checks:?}"
    );
    assert_eq!(
        status(&checks, "gds-nvidia-fs"),
        Some(CheckStatus::Warn),
        "{checks:?}"
    );
}

#[test]
fn gdscheck_missing_is_unknown_never_a_pass() {
    let c = GdsCheck::read(&["gdscheck: not installed"]);
    let checks = judge(Some(&["nvidia_fs: not loaded".to_string()]), &c, "");
    assert_eq!(status(&checks, "gds-platform"), Some(CheckStatus::Unknown));
    assert_eq!(status(&checks, "gds-nvidia-fs"), Some(CheckStatus::Failed));
    assert!(checks.iter().all(|c| c.1 != CheckStatus::Ok));
}

#[test]
fn a_hostile_backend_line_is_stripped_and_bounded() {
    let c = GdsCheck::read(&lines(HEALTHY_114));
    let wanted = format!("NVMe\u{1b}[2J{}", ",x".repeat(100_000));
    let checks = judge(None, &c, &wanted);
    let backend = checks
        .iter()
        .find(|c| c.0 == "gds-backend")
        .expect("gds-backend");
    assert!(!backend.2.contains('\u{1b}'), "{backend:?}");
    assert!(backend.2.len() < 2_000, "{}", backend.2.len());
}

proptest::proptest! {
    #[test]
    fn garbage_never_panics(lines in proptest::collection::vec(".{0,200}", 0..60), wanted in ".{0,40}") {
        let c = GdsCheck::read(&lines);
        let module: Vec<String> = lines.iter().take(3).cloned().collect();
        let _ = judge(Some(&module), &c, &wanted);
        proptest::prop_assert!(c.backends.len() <= MAX_BACKENDS);
        proptest::prop_assert!(c.errors.len() <= MAX_ERRORS);
    }
}

/// Two rows a translated document glued into one line are both read; a hostile line of
/// thousands of glued pairs is read in a loop (no recursion to overflow the stack), bounded.
#[test]
fn glued_rows_are_split_and_a_flood_of_them_is_bounded() {
    let c = GdsCheck::read(&[
        " NVMe               : Supported   NVMeOF             : Unsupported",
        " NFS                : Unsupported",
    ]);
    let rows: Vec<(&str, &str)> = c
        .backends
        .iter()
        .map(|b| (b.name.as_str(), b.value.as_str()))
        .collect();
    assert_eq!(
        rows,
        [
            ("NVMe", "Supported"),
            ("NVMeOF", "Unsupported"),
            ("NFS", "Unsupported")
        ]
    );
    let flood = "x:Supported ".repeat(20_000);
    let c = GdsCheck::read(&[flood.as_str()]);
    assert!(c.backends.len() <= MAX_BACKENDS);
}

/// An author's note after a value, as documents print them (tests/corpus/gdscheck/*-notes-*):
/// cut, and the value read; gdscheck's own lines, with their wide padding, are untouched.
#[test]
fn an_authors_note_after_a_value_is_cut() {
    assert_eq!(
        without_note("DDN EXAScaler : Supported                ← Lustre GDS 路径受支持"),
        "DDN EXAScaler : Supported"
    );
    assert_eq!(
        without_note(
            "Platform verification succeeded                                       <- good"
        ),
        "Platform verification succeeded"
    );
    assert_eq!(
        without_note(" NVMe               : Supported   # note"),
        " NVMe               : Supported"
    );
    let own = " --rdma_device_status  : Up: 0 Down: 0";
    assert_eq!(without_note(own), own);
    assert_eq!(without_note("x  ←"), "x");
    assert_eq!(without_note("←  ←  ←"), "←");
}
