//! The README shows the console as it is: its picture of the demo is drawn here, from the same
//! code and the same simulated second as the snapshots, and must match what the README holds.
//! `UPDATE_README=1 cargo test --test readme` redraws it after a deliberate change. The README
//! keeps exactly two set-up commands: one runs the demo, one runs every test.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

const START: &str = "<!-- demo-screen:";
const END: &str = "<!-- demo-screen end -->";

fn readme_path() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")
}

/// The demo at 125 s on a 120×36 terminal, as plain text (trailing blanks trimmed).
fn demo_screen() -> String {
    let state = common::demo_state(125, (120, 36));
    let term = common::screen(&state);
    let buf = term.backend().buffer();
    let area = buf.area;
    let mut out = String::new();
    for y in area.top()..area.bottom() {
        let line: String = (area.left()..area.right())
            .map(|x| buf[(x, y)].symbol().to_string())
            .collect();
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[test]
fn the_readme_shows_the_demo_as_the_console_draws_it() {
    let text = std::fs::read_to_string(readme_path()).expect("README.md");
    let start = text.find(START).expect("the README's demo-screen marker");
    let fence_open = start + text[start..].find("```text\n").expect("a text fence") + 8;
    let end = text.find(END).expect("the README's demo-screen end marker");
    let fence_close = text[..end].rfind("```").expect("the closing fence");
    let shown = &text[fence_open..fence_close];
    let drawn = demo_screen();
    if shown != drawn {
        if std::env::var_os("UPDATE_README").is_some() {
            let updated = format!("{}{drawn}{}", &text[..fence_open], &text[fence_close..]);
            std::fs::write(readme_path(), updated).expect("write README.md");
            return;
        }
        let first = shown
            .lines()
            .zip(drawn.lines())
            .position(|(a, b)| a != b)
            .unwrap_or(0);
        panic!(
            "the README's picture of the demo is not what the console draws (line {first}); \
             UPDATE_README=1 cargo test --test readme redraws it:\n  README:  {:?}\n  console: {:?}",
            shown.lines().nth(first).unwrap_or(""),
            drawn.lines().nth(first).unwrap_or("")
        );
    }
    assert!(drawn.contains("node07 GPU3"), "the stall is on screen");
}

#[test]
fn the_readme_keeps_two_set_up_commands() {
    let text = std::fs::read_to_string(readme_path()).expect("README.md");
    let commands: Vec<&str> = text
        .split("```sh\n")
        .skip(1)
        .filter_map(|block| block.split("```").next())
        .map(str::trim)
        .collect();
    assert_eq!(
        commands,
        ["cargo run --release -- demo", "scripts/test.sh"],
        "the README's set-up commands"
    );
}
