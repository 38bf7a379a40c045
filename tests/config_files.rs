//! Every shipped theme and layout loads from disk exactly as embedded; every broken file under
//! tests/fixtures/broken gets a message naming the file, line and column; a broken file never
//! stops the console (it falls back and says so).

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::Path;

use burnin::app::catalog::{self, Sources};
use burnin::app::layout::{self, Layout};
use burnin::app::theme::{self, Theme};

#[test]
fn shipped_files_on_disk_load_and_match_the_embedded_copies() {
    for (dir, embedded) in [("themes", theme::EMBEDDED), ("layouts", layout::EMBEDDED)] {
        let mut on_disk: Vec<String> = std::fs::read_dir(dir)
            .expect("shipped folder")
            .filter_map(Result::ok)
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".toml"))
            .collect();
        on_disk.sort();
        let mut names: Vec<String> = embedded.iter().map(|(n, _)| n.to_string()).collect();
        names.sort();
        assert_eq!(on_disk, names, "every file in {dir}/ is embedded");
        for (name, text) in embedded {
            let disk = std::fs::read_to_string(Path::new(dir).join(name)).expect("read");
            assert_eq!(&disk, text, "{dir}/{name}");
            let ok = if dir == "themes" {
                Theme::parse(name, text).map(|_| ())
            } else {
                Layout::parse(name, text).map(|_| ())
            };
            ok.unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

fn theme_error(file: &str) -> String {
    let path = format!("tests/fixtures/broken/themes/{file}");
    let text = std::fs::read_to_string(&path).expect("fixture");
    Theme::parse(&path, &text)
        .expect_err("must fail")
        .to_string()
}

fn layout_error(file: &str) -> String {
    let path = format!("tests/fixtures/broken/layouts/{file}");
    let text = std::fs::read_to_string(&path).expect("fixture");
    Layout::parse(&path, &text)
        .expect_err("must fail")
        .to_string()
}

/// Every file in `tests/fixtures/broken/DIR` has a case, and each error contains its expected
/// `file:line:col: message`.
fn assert_each_broken_file(dir: &str, cases: &[(&str, &str)], error: fn(&str) -> String) {
    for (file, want) in cases {
        let got = error(file);
        assert!(got.contains(want), "{file}: got {got:?}, want {want:?}");
    }
    let files = std::fs::read_dir(format!("tests/fixtures/broken/{dir}"))
        .expect("dir")
        .count();
    assert_eq!(cases.len(), files, "every broken file in {dir} has a case");
}

#[test]
fn broken_themes_name_file_line_and_column() {
    let cases = [
        (
            "bad-colour.toml",
            "bad-colour.toml:11:6: unknown colour \"greeen\"",
        ),
        (
            "missing-role.toml",
            "missing-role.toml: [roles] is missing: accent, title",
        ),
        (
            "unknown-role.toml",
            "unknown-role.toml:4:1: unknown role \"txet\"",
        ),
        ("not-toml.toml", "not-toml.toml:1:"),
        (
            "bad-hex.toml",
            "bad-hex.toml:3:8: bad colour \"#12345\": expected #rrggbb",
        ),
        (
            "unknown-key.toml",
            "unknown-key.toml:2:1: unknown field `colour`",
        ),
    ];
    assert_each_broken_file("themes", &cases, theme_error);
}

#[test]
fn broken_layouts_name_file_line_and_column() {
    let cases = [
        (
            "unknown-pane.toml",
            "unknown-pane.toml:4:38: unknown pane \"gpu-grid\"; panes are: gpus,",
        ),
        ("twice.toml", "twice.toml:7:37: pane \"gpus\" appears twice"),
        (
            "both-sizes.toml",
            "both-sizes.toml:3:1: give either weight or lines, not both",
        ),
        (
            "no-rows.toml",
            "no-rows.toml: a layout needs at least one [[row]]",
        ),
        (
            "empty-row.toml",
            "empty-row.toml:3:1: a row needs at least one cell",
        ),
        ("typo-key.toml", "typo-key.toml:4:"),
        (
            "zero-weight.toml",
            "zero-weight.toml:4:10: weight must be at least 1",
        ),
    ];
    assert_each_broken_file("layouts", &cases, layout_error);
    assert!(layout_error("typo-key.toml").contains("wieght"));
}

#[test]
fn broken_user_files_fall_back_and_are_reported() {
    let dir = std::env::temp_dir().join(format!("burnin-cfg-{}", std::process::id()));
    let themes = dir.join("themes");
    let layouts = dir.join("layouts");
    std::fs::create_dir_all(&themes).expect("mkdir");
    std::fs::create_dir_all(&layouts).expect("mkdir");
    std::fs::copy(
        "tests/fixtures/broken/themes/bad-colour.toml",
        themes.join("bad.toml"),
    )
    .expect("copy");
    std::fs::copy(
        "tests/fixtures/broken/layouts/twice.toml",
        layouts.join("twice.toml"),
    )
    .expect("copy");
    std::fs::write(
        layouts.join("mine.toml"),
        "name = \"mine\"\n[[row]]\ncells = [{ pane = \"triage\" }]\n",
    )
    .expect("write");
    let cat = catalog::load(&Sources {
        config_dir: Some(dir.clone()),
        theme: Some(themes.join("bad.toml").display().to_string()),
        layout: Some("mine".into()),
        no_color: false,
    });
    std::fs::remove_dir_all(&dir).ok();
    assert_eq!(
        cat.themes.len(),
        theme::EMBEDDED.len(),
        "broken theme skipped"
    );
    assert_eq!(
        cat.themes[cat.start_theme].name, "default",
        "fell back to the default"
    );
    assert_eq!(cat.layouts.last().map(|l| l.name.as_str()), Some("mine"));
    assert_eq!(cat.layouts[cat.start_layout].name, "mine");
    assert!(
        cat.problems.iter().any(|p| p.contains("bad.toml:11:6")),
        "{:?}",
        cat.problems
    );
    assert!(
        cat.problems.iter().any(|p| p.contains("twice.toml:7:37")),
        "{:?}",
        cat.problems
    );
}
