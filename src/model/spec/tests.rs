use super::*;

#[test]
fn the_shipped_table_reads_and_every_figure_has_a_source_and_a_known_unit() {
    let spec = HardwareSpec::parse("specs/hardware.toml", SHIPPED).expect("the shipped table");
    assert!(!spec.gpus.is_empty() && !spec.nics.is_empty());
    for g in &spec.gpus {
        assert!(!g.names.is_empty(), "{}: a name nvidia-smi prints", g.model);
        for (name, f) in &g.figures {
            assert!(GPU_FIGURES.iter().any(|(k, _, _)| k == name), "{name}");
            assert!(f.source.len() > 10, "{} {name}: {:?}", g.model, f.source);
        }
    }
    for n in &spec.nics {
        for (name, f) in &n.figures {
            assert!(NIC_FIGURES.iter().any(|(k, _, _)| k == name), "{name}");
            assert!(f.source.len() > 10, "{} {name}: {:?}", n.model, f.source);
        }
    }
    // The models the issue names are all there.
    for model in [
        "H100 SXM", "H100 NVL", "H200", "B200", "B300", "GB200", "GB300",
    ] {
        assert!(
            spec.gpus.iter().any(|g| g.model == model),
            "{model} is in the table"
        );
    }
    for model in ["ConnectX-7", "ConnectX-8", "BlueField-3"] {
        assert!(spec.nics.iter().any(|n| n.model == model), "{model}");
    }
}

/// The IDs and names of real boards, as real tools printed them: the H200 of
/// shared/fixtures/h200/nvidia-smi-q.txt (`Device Id : 0x233510DE`, `NVIDIA H200`), the H100
/// of shared/fixtures/nvidia-smi/csv-full-query-h100-590-load.txt (`0x233010DE`, `NVIDIA H100
/// 80GB HBM3`).
#[test]
fn real_boards_are_found_by_their_id_and_their_name() {
    let spec = HardwareSpec::shipped();
    let h200 = nvidia_device_id("0x233510DE").and_then(|id| spec.gpu_by_pci(id));
    assert_eq!(h200.map(|g| g.model.as_str()), Some("H200"));
    assert_eq!(
        spec.gpu_by_name("NVIDIA H200").map(|g| g.model.as_str()),
        Some("H200")
    );
    let h100 = nvidia_device_id("0x233010DE").and_then(|id| spec.gpu_by_pci(id));
    assert_eq!(h100.map(|g| g.model.as_str()), Some("H100 SXM"));
    assert_eq!(
        spec.gpu_by_name("NVIDIA H100 80GB HBM3")
            .map(|g| g.model.as_str()),
        Some("H100 SXM")
    );
    // An RTX card (the Windows capture beside them) is no model of the table: not guessed.
    assert!(
        nvidia_device_id("0x1E8110DE")
            .and_then(|id| spec.gpu_by_pci(id))
            .is_none()
    );
    assert!(spec.gpu_by_name("NVIDIA GeForce RTX 2080 SUPER").is_none());
}

#[test]
fn a_figure_without_a_source_or_of_an_unknown_name_is_refused() {
    let entry = |figure: &str| {
        format!(
            "[[gpu]]\nmodel = \"X\"\npci_device_ids = [\"0x1234\"]\nids_source = \"a test\"\nnames = [\"X\"]\n{figure}\n"
        )
    };
    let ok = HardwareSpec::parse(
        "t",
        &entry("tgp_w = { value = 700, source = \"a datasheet\" }"),
    );
    assert!(ok.is_ok(), "{ok:?}");
    for (bad, said) in [
        ("tgp_w = { value = 700, source = \" \" }", "has no source"),
        ("tgp_w = { value = 700 }", "source"),
        (
            "tgp_ww = { value = 700, source = \"x\" }",
            "no figure burnin knows",
        ),
        (
            "tgp_w = { value = -1, source = \"x\" }",
            "not a positive number",
        ),
        (
            "tgp_w = { value = nan, source = \"x\" }",
            "not a positive number",
        ),
    ] {
        let e = HardwareSpec::parse("t", &entry(bad))
            .expect_err(bad)
            .to_string();
        assert!(e.contains(said), "{bad}: {e}");
    }
    let no_ids_source = "[[gpu]]\nmodel = \"X\"\npci_device_ids = [\"0x1234\"]\nnames = [\"X\"]\n";
    let e = HardwareSpec::parse("t", no_ids_source)
        .expect_err("ids")
        .to_string();
    assert!(e.contains("ids_source"), "{e}");
    let twice = format!("{}{}", entry(""), entry("").replace("\"X\"", "\"Y\""));
    let e = HardwareSpec::parse("t", &twice)
        .expect_err("twice")
        .to_string();
    assert!(e.contains("0x1234 is in two entries"), "{e}");
}

#[test]
fn device_ids_read_as_nvidia_smi_prints_them_and_nothing_else() {
    assert_eq!(nvidia_device_id("0x233510DE"), Some(0x2335));
    assert_eq!(nvidia_device_id(" 0x2335 "), Some(0x2335));
    // Another vendor's ID in the low half: not an NVIDIA device.
    assert_eq!(nvidia_device_id("0x101915B3"), None);
    assert_eq!(parse_device_id("0x101915B3", 0x15B3), Some(0x1019));
    for bad in [
        "",
        "2335",
        "0x",
        "0xZZZZ",
        "0x23351",
        "[N/A]",
        "0x233510DE00",
    ] {
        assert_eq!(nvidia_device_id(bad), None, "{bad:?}");
    }
}

proptest::proptest! {
    /// Any text as a table: an error or a table, never a panic.
    #[test]
    fn garbage_tables_never_panic(text in "\\PC{0,400}") {
        let _ = HardwareSpec::parse("t", &text);
    }

    #[test]
    fn garbage_ids_never_panic(text in "\\PC{0,20}") {
        let _ = nvidia_device_id(&text);
    }
}
