//! The report's "Where the fault is": each fault search run into this record (`burnin localize
//! --run RUN`, kept as `RUN/localize-<id>/localize.json`), with what it named and how, every
//! test as a table row, and a picture of each test's figure, slow ones red.

use std::path::Path;

use super::plots::{Axis, Chart, Series};
use super::render::{Block, Cell};
use crate::model::{fit, strip_controls};
use crate::phases::localize::doc::LocalizeDoc;

/// Most bytes of one `localize.json` read (a search over 1024 nodes writes about 1 MB).
const MAX_DOC_BYTES: u64 = 16 << 20;
/// Most searches read from one record.
const MAX_SEARCHES: usize = 16;
/// Most tests of one search given a table row (the rest are counted).
const MAX_ROWS: usize = 200;
/// Most tests drawn in one picture.
const MAX_BARS: usize = 96;

/// One search as the report shows it.
pub struct SearchShown {
    /// Its directory in the record.
    pub dir: String,
    /// Its answer.
    pub doc: LocalizeDoc,
    /// The words above its table.
    pub words: Vec<String>,
    /// Its picture.
    pub chart: Chart,
}

/// Every search in `run_dir`, oldest first; what could not be read goes to `damage`.
pub fn read_searches(run_dir: &Path, damage: &mut Vec<String>) -> Vec<SearchShown> {
    let Ok(entries) = std::fs::read_dir(run_dir) else {
        return Vec::new();
    };
    let mut dirs: Vec<String> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().map(str::to_string))
        .filter(|n| n.starts_with("localize-"))
        .collect();
    dirs.sort();
    if dirs.len() > MAX_SEARCHES {
        damage.push(format!(
            "{} fault searches in the record: the first {MAX_SEARCHES} are shown",
            dirs.len()
        ));
        dirs.truncate(MAX_SEARCHES);
    }
    let mut out = Vec::new();
    for dir in dirs {
        let path = run_dir.join(&dir).join("localize.json");
        let shown = fit(&strip_controls(&dir), 80);
        let read = std::fs::File::open(&path).and_then(|f| {
            use std::io::Read;
            let mut text = String::new();
            f.take(MAX_DOC_BYTES + 1).read_to_string(&mut text)?;
            Ok(text)
        });
        let doc = match read {
            Ok(t) if t.len() as u64 > MAX_DOC_BYTES => {
                damage.push(format!(
                    "{shown}/localize.json is past {MAX_DOC_BYTES} bytes: not read"
                ));
                continue;
            }
            Ok(t) => match serde_json::from_str::<LocalizeDoc>(&t) {
                Ok(d) => d,
                Err(e) => {
                    damage.push(format!("{shown}/localize.json does not read: {e}"));
                    continue;
                }
            },
            Err(e) => {
                damage.push(format!("{shown}/localize.json: {e}"));
                continue;
            }
        };
        let words: Vec<String> = doc
            .words()
            .lines()
            .map(|l| fit(&strip_controls(l.trim()), 600))
            .filter(|l| !l.is_empty())
            .collect();
        let chart = picture(&doc);
        out.push(SearchShown {
            dir: shown,
            doc,
            words,
            chart,
        });
    }
    out
}

fn name(doc: &LocalizeDoc, i: usize) -> String {
    doc.nodes
        .get(i)
        .map(|n| fit(&strip_controls(n), 40))
        .unwrap_or_else(|| format!("#{i}"))
}

/// Each test's figure as a bar, by test, slow ones red.
fn picture(doc: &LocalizeDoc) -> Chart {
    let tests: Vec<_> = doc.groups.iter().take(MAX_BARS).collect();
    let point = |slow: bool| -> Vec<(f64, f64)> {
        tests
            .iter()
            .enumerate()
            .filter(|(_, g)| g.slow == slow)
            .filter_map(|(i, g)| Some((i as f64, g.result.figure.filter(|f| f.is_finite())?)))
            .collect()
    };
    Chart {
        title: format!(
            "{}: each test's figure, round by round (slow in red)",
            fit(&strip_controls(&doc.phase), 40)
        ),
        x: Axis::Plain,
        x_label: "test (round)".into(),
        y_label: "figure".into(),
        series: vec![
            Series {
                label: "not slow".into(),
                points: point(false),
                color: "#2ca02c",
                dashed: false,
                thin: false,
            },
            Series {
                label: "slow".into(),
                points: point(true),
                color: "#d62728",
                dashed: false,
                thin: false,
            },
        ],
        legend_note: (doc.groups.len() > MAX_BARS).then(|| {
            format!(
                "the first {MAX_BARS} of {} tests; the table has them all",
                doc.groups.len()
            )
        }),
        categories: tests
            .iter()
            .map(|g| format!("t{} (r{})", g.test.id, g.test.round))
            .collect(),
    }
}

/// The section's blocks (none where the record holds no search).
pub(super) fn section(searches: &[SearchShown]) -> Vec<Block<'_>> {
    if searches.is_empty() {
        return Vec::new();
    }
    let mut out = vec![
        Block::Heading("Where the fault is"),
        Block::Empty(
            "Each fault search (burnin localize) run into this record: the phase's own command on groups of nodes, round by round; a node is named only when slow beside two different good partners, a link only when each node passes with others and the pair alone is slow twice.",
        ),
    ];
    for s in searches {
        for w in &s.words {
            out.push(Block::Note(w));
        }
        let mut rows: Vec<Vec<Cell>> = s
            .doc
            .groups
            .iter()
            .take(MAX_ROWS)
            .map(|g| {
                let nodes: Vec<String> = g
                    .test
                    .members
                    .iter()
                    .take(12)
                    .map(|i| name(&s.doc, *i))
                    .collect();
                let padding: Vec<String> = g
                    .test
                    .padding
                    .iter()
                    .take(4)
                    .map(|i| name(&s.doc, *i))
                    .collect();
                let more = if g.test.members.len() > 12 {
                    format!(" +{} more", g.test.members.len() - 12)
                } else {
                    String::new()
                };
                vec![
                    Cell::plain(g.test.round.to_string()),
                    Cell::plain(g.test.id.to_string()),
                    Cell::plain(
                        serde_json::to_value(g.test.purpose)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_string))
                            .unwrap_or_default(),
                    ),
                    Cell::plain(format!("{}{more}", nodes.join(", "))),
                    Cell::plain(if padding.is_empty() {
                        "—".to_string()
                    } else {
                        padding.join(", ")
                    }),
                    Cell::plain(
                        g.result
                            .figure
                            .filter(|f| f.is_finite())
                            .map_or_else(|| "—".into(), |f| format!("{f:.1}")),
                    ),
                    if g.slow {
                        Cell::badge("slow", "fail")
                    } else {
                        Cell::badge("ok", "pass")
                    },
                    Cell::plain(fit(&strip_controls(&g.why), 300)),
                ]
            })
            .collect();
        if s.doc.groups.len() > MAX_ROWS {
            rows.push(vec![
                Cell::plain(""),
                Cell::plain(""),
                Cell::plain(""),
                Cell::plain(format!(
                    "{} more tests in {}/localize.json",
                    s.doc.groups.len() - MAX_ROWS,
                    s.dir
                )),
                Cell::plain(""),
                Cell::plain(""),
                Cell::plain(""),
                Cell::plain(""),
            ]);
        }
        out.push(Block::Table {
            header: &[
                "round",
                "test",
                "why it ran",
                "nodes under test",
                "good partner",
                "figure",
                "read",
                "how",
            ],
            rows,
        });
        out.push(Block::Plot(&s.dir, &s.chart));
    }
    out
}
