//! Layouts: a TOML file lays panes out as rows of cells, each sized by weight or by lines/columns,
//! and may hide a row or cell below a terminal size, which is how one layout serves 80×24 and a
//! wall-sized screen. `1`–`9` pick among the loaded layouts.

use std::collections::BTreeSet;

use ratatui::layout::Rect;
use serde::Deserialize;

use crate::config::ConfigError;

/// The shipped layouts, embedded, in key order; each is also a test case.
pub const EMBEDDED: &[(&str, &str)] = &[
    ("overview.toml", include_str!("../../layouts/overview.toml")),
    ("gpus.toml", include_str!("../../layouts/gpus.toml")),
    ("nccl.toml", include_str!("../../layouts/nccl.toml")),
    ("storage.toml", include_str!("../../layouts/storage.toml")),
    ("triage.toml", include_str!("../../layouts/triage.toml")),
    ("fabric.toml", include_str!("../../layouts/fabric.toml")),
];

/// Every pane the console can draw.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PaneKind {
    /// Node × GPU grid.
    Gpus,
    /// NVLink Tx/Rx per node and per GPU.
    Nvlink,
    /// RDMA ports per node.
    Fabric,
    /// NCCL busbw vs message size.
    Nccl,
    /// AIStor GET latency and throughput.
    Storage,
    /// Dataloader wait per step.
    Loader,
    /// The T1–T8 plan.
    Phases,
    /// Findings.
    Triage,
    /// Output of the selected phase.
    Log,
}

impl PaneKind {
    /// Every pane, in focus order.
    pub const ALL: [PaneKind; 9] = [
        PaneKind::Gpus,
        PaneKind::Triage,
        PaneKind::Phases,
        PaneKind::Nccl,
        PaneKind::Nvlink,
        PaneKind::Fabric,
        PaneKind::Storage,
        PaneKind::Loader,
        PaneKind::Log,
    ];

    /// Name in layout files.
    pub fn name(self) -> &'static str {
        match self {
            PaneKind::Gpus => "gpus",
            PaneKind::Nvlink => "nvlink",
            PaneKind::Fabric => "fabric",
            PaneKind::Nccl => "nccl",
            PaneKind::Storage => "storage",
            PaneKind::Loader => "loader",
            PaneKind::Phases => "phases",
            PaneKind::Triage => "triage",
            PaneKind::Log => "log",
        }
    }

    fn parse(name: &str) -> Option<PaneKind> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }
}

/// How much room a row or cell takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Size {
    /// A share of what is left after fixed sizes.
    Weight(u16),
    /// Exactly this many lines (rows) or columns (cells).
    Fixed(u16),
}

/// One pane in a row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    /// Which pane.
    pub pane: PaneKind,
    /// Its width.
    pub size: Size,
    /// Hidden when the screen has fewer columns.
    pub hide_below_cols: Option<u16>,
}

/// One row of panes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    /// Its height.
    pub size: Size,
    /// Hidden when the screen has fewer lines.
    pub hide_below_rows: Option<u16>,
    /// The panes, left to right.
    pub cells: Vec<Cell>,
}

/// A resolved layout.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// Name shown in the status bar.
    pub name: String,
    /// What it is for.
    pub description: String,
    /// Rows, top to bottom.
    pub rows: Vec<Row>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct LayoutFile {
    name: String,
    #[serde(default)]
    description: String,
    row: Vec<toml::Spanned<RowFile>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RowFile {
    weight: Option<u16>,
    lines: Option<u16>,
    hide_below_rows: Option<u16>,
    cells: Vec<toml::Spanned<CellFile>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CellFile {
    pane: toml::Spanned<String>,
    weight: Option<u16>,
    cols: Option<u16>,
    hide_below_cols: Option<u16>,
}

fn size_of(weight: Option<u16>, fixed: Option<u16>, fixed_name: &str) -> Result<Size, String> {
    match (weight, fixed) {
        (Some(_), Some(_)) => Err(format!("give either weight or {fixed_name}, not both")),
        (Some(0), None) => Err("weight must be at least 1".into()),
        (Some(w), None) => Ok(Size::Weight(w)),
        (None, Some(n)) => Ok(Size::Fixed(n)),
        (None, None) => Ok(Size::Weight(1)),
    }
}

/// Fewest lines a weighted row shrinks to before a row is dropped: a border and four lines.
pub const MIN_LINES: u16 = 6;
/// Fewest columns a weighted cell shrinks to before a cell is dropped.
pub const MIN_COLS: u16 = 30;

/// The least room `sizes` need: fixed ones their size, weighted ones `min` each.
fn min_sum(sizes: impl Iterator<Item = Size>, min: u16) -> u16 {
    sizes.fold(0u16, |acc, s| {
        acc.saturating_add(match s {
            Size::Fixed(n) => n,
            Size::Weight(_) => min,
        })
    })
}

/// Split `total` among `sizes`: fixed ones first (cut where they do not fit), then the rest by
/// weight, where no weighted one gets less than `min` while the room allows it (a share under
/// it is raised to it, and the others split what remains); rounding's remainder goes to the
/// last weighted one.
fn shares(sizes: &[Size], total: u16, min: u16) -> Vec<u16> {
    let mut out = vec![0u16; sizes.len()];
    let mut left = total;
    for (i, s) in sizes.iter().enumerate() {
        if let Size::Fixed(n) = s {
            out[i] = (*n).min(left);
            left -= out[i];
        }
    }
    let weight_of = |i: usize| match sizes[i] {
        Size::Weight(w) => Some(u32::from(w)),
        Size::Fixed(_) => None,
    };
    let mut floored: Vec<usize> = Vec::new();
    loop {
        let room = u32::from(left.saturating_sub(min.saturating_mul(floored.len() as u16)));
        let free: Vec<usize> = (0..sizes.len())
            .filter(|i| weight_of(*i).is_some() && !floored.contains(i))
            .collect();
        let weight: u32 = free.iter().filter_map(|i| weight_of(*i)).sum();
        for &i in &free {
            let share = (room * weight_of(i).unwrap_or(0))
                .checked_div(weight)
                .unwrap_or(0);
            out[i] = u16::try_from(share).unwrap_or(u16::MAX);
        }
        // The smallest share under the minimum is raised to it, if the room holds it.
        let under = free
            .iter()
            .copied()
            .filter(|i| out[*i] < min)
            .min_by_key(|i| out[*i]);
        match under {
            Some(i) if room >= u32::from(min) && free.len() > 1 => floored.push(i),
            _ => break,
        }
    }
    for &i in &floored {
        out[i] = min;
    }
    let used: u16 = out.iter().fold(0u16, |a, b| a.saturating_add(*b));
    if let Some(last) = sizes.iter().rposition(|s| matches!(s, Size::Weight(_))) {
        out[last] = out[last].saturating_add(total.saturating_sub(used));
    }
    out
}

impl Layout {
    /// Parse and resolve a layout file. `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Layout, ConfigError> {
        let shape: LayoutFile =
            toml::from_str(text).map_err(|e| ConfigError::from_toml(file, text, &e))?;
        if shape.row.is_empty() {
            return Err(ConfigError::at(
                file,
                text,
                None,
                "a layout needs at least one [[row]]",
            ));
        }
        let mut seen = BTreeSet::new();
        let mut rows = Vec::new();
        for row in &shape.row {
            let span = row.span();
            let r = row.get_ref();
            let size = size_of(r.weight, r.lines, "lines")
                .map_err(|m| ConfigError::at(file, text, Some(span.clone()), m))?;
            if r.cells.is_empty() {
                return Err(ConfigError::at(
                    file,
                    text,
                    Some(span),
                    "a row needs at least one cell",
                ));
            }
            let mut cells = Vec::new();
            for cell in &r.cells {
                let c = cell.get_ref();
                let name = c.pane.get_ref();
                let pane = PaneKind::parse(name).ok_or_else(|| {
                    let names: Vec<_> = PaneKind::ALL.iter().map(|p| p.name()).collect();
                    ConfigError::at(
                        file,
                        text,
                        Some(c.pane.span()),
                        format!("unknown pane {name:?}; panes are: {}", names.join(", ")),
                    )
                })?;
                if !seen.insert(pane) {
                    return Err(ConfigError::at(
                        file,
                        text,
                        Some(c.pane.span()),
                        format!("pane {name:?} appears twice"),
                    ));
                }
                let size = size_of(c.weight, c.cols, "cols")
                    .map_err(|m| ConfigError::at(file, text, Some(cell.span()), m))?;
                cells.push(Cell {
                    pane,
                    size,
                    hide_below_cols: c.hide_below_cols,
                });
            }
            rows.push(Row {
                size,
                hide_below_rows: r.hide_below_rows,
                cells,
            });
        }
        Ok(Layout {
            name: shape.name,
            description: shape.description,
            rows,
        })
    }

    /// The embedded overview layout.
    pub fn fallback() -> Layout {
        Layout::parse("<embedded>/overview.toml", EMBEDDED[0].1)
            .unwrap_or_else(|e| panic!("shipped default layout is broken: {e}"))
    }

    /// Place the panes that fit `area`. Rows and cells shrink to their minimum before any is
    /// dropped (as btop does); when even the minimums do not fit, the last row (and within a
    /// row the rightmost cell) goes first, and its room goes to the others. `hide_below_rows`
    /// and `hide_below_cols` drop a row or cell outright below a size.
    pub fn arrange(&self, area: Rect) -> Vec<(PaneKind, Rect)> {
        let mut rows: Vec<(&Row, Vec<&Cell>)> = self
            .rows
            .iter()
            .filter(|r| r.hide_below_rows.is_none_or(|min| area.height >= min))
            .map(|r| {
                let mut cells = r
                    .cells
                    .iter()
                    .filter(|c| c.hide_below_cols.is_none_or(|min| area.width >= min))
                    .collect::<Vec<_>>();
                while cells.len() > 1
                    && min_sum(cells.iter().map(|c| c.size), MIN_COLS) > area.width
                {
                    cells.pop();
                }
                (r, cells)
            })
            .filter(|(_, cells)| !cells.is_empty())
            .collect();
        while rows.len() > 1 && min_sum(rows.iter().map(|(r, _)| r.size), MIN_LINES) > area.height {
            rows.pop();
        }
        let heights = shares(
            &rows.iter().map(|(r, _)| r.size).collect::<Vec<_>>(),
            area.height,
            MIN_LINES,
        );
        let mut out = Vec::new();
        let mut y = area.y;
        for ((_, cells), h) in rows.iter().zip(heights) {
            let widths = shares(
                &cells.iter().map(|c| c.size).collect::<Vec<_>>(),
                area.width,
                MIN_COLS,
            );
            let mut x = area.x;
            // Never past the area, whatever the sizes said.
            let h = h.min(area.bottom().saturating_sub(y));
            for (cell, w) in cells.iter().zip(widths) {
                let w = w.min(area.right().saturating_sub(x));
                if w > 0 && h > 0 {
                    out.push((cell.pane, Rect::new(x, y, w, h)));
                }
                x = x.saturating_add(w);
            }
            y = y.saturating_add(h);
        }
        out
    }

    /// The panes visible at `area`, in focus order: as the screen reads, row by row from the
    /// top, left to right within a row.
    pub fn visible(&self, area: Rect) -> Vec<PaneKind> {
        let mut placed: Vec<PaneKind> = Vec::new();
        for (pane, _) in self.arrange(area) {
            if !placed.contains(&pane) {
                placed.push(pane);
            }
        }
        placed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_layout_loads_and_shows_panes_at_80x24() {
        for (name, text) in EMBEDDED {
            let layout = Layout::parse(name, text).unwrap_or_else(|e| panic!("{e}"));
            assert!(
                !layout.arrange(Rect::new(0, 0, 80, 23)).is_empty(),
                "{name}"
            );
            assert!(
                !layout.arrange(Rect::new(0, 0, 240, 70)).is_empty(),
                "{name}"
            );
        }
    }

    #[test]
    fn small_screens_hide_what_does_not_fit() {
        let overview = Layout::fallback();
        let small = overview.visible(Rect::new(0, 0, 80, 23));
        let large = overview.visible(Rect::new(0, 0, 160, 47));
        assert!(small.len() < large.len(), "{small:?} vs {large:?}");
        assert!(small.contains(&PaneKind::Gpus));
        assert_eq!(large.len(), 8, "{large:?}");
    }

    #[test]
    fn panes_shrink_before_they_drop() {
        let overview = Layout::fallback();
        // 120x36 less the status line: the NCCL row shrinks in beside the plan and findings.
        let placed = overview.arrange(Rect::new(0, 0, 120, 35));
        let kinds: Vec<PaneKind> = placed.iter().map(|(p, _)| *p).collect();
        for want in [
            PaneKind::Gpus,
            PaneKind::Phases,
            PaneKind::Triage,
            PaneKind::Nccl,
        ] {
            assert!(kinds.contains(&want), "{want:?} in {kinds:?}");
        }
        let nccl = placed
            .iter()
            .find(|(p, _)| *p == PaneKind::Nccl)
            .map(|(_, r)| *r);
        assert!(nccl.is_some_and(|r| r.height >= MIN_LINES), "{nccl:?}");
        // Nothing overlaps and nothing leaves the screen, at any size.
        for w in [1u16, 20, 79, 80, 119, 120, 161, 240] {
            for h in [1u16, 5, 23, 35, 47, 70] {
                let area = Rect::new(0, 0, w, h);
                for (name, text) in EMBEDDED {
                    let placed = Layout::parse(name, text).unwrap().arrange(area);
                    for (i, (_, a)) in placed.iter().enumerate() {
                        assert!(
                            area.contains(a.as_position()) && a.right() <= w && a.bottom() <= h,
                            "{name} {w}x{h}: {a:?}"
                        );
                        for (_, b) in &placed[i + 1..] {
                            assert!(!a.intersects(*b), "{name} {w}x{h}: {a:?} {b:?}");
                        }
                    }
                }
            }
        }
    }
}
