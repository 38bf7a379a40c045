//! NCCL bus bandwidth against message size for the running (or newest) collective phase: one
//! bar per size with the median over nodes, the slowest node, and #wrong. The trailer is
//! nccl-tests' own "Avg bus bandwidth" (mean over sizes).

use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Widget;

use crate::model::format_size;
use crate::model::phase::{GateStatus, Verdict};
use crate::plan::Gate;
use crate::store::{PhaseState, PhaseView};
use crate::ui::{Ctx, fit, pane_block};

/// The NCCL pane.
pub struct NcclPane<'a> {
    /// Draw context.
    pub ctx: &'a Ctx<'a>,
    /// Whether it has focus.
    pub focused: bool,
}

impl Widget for &NcclPane<'_> {
    fn render(self, area: Rect, buf: &mut Buffer) {
        let ctx = self.ctx;
        let theme = ctx.theme;
        let Some(phase) = ctx.store.busbw_phase() else {
            let block = pane_block(" NCCL busbw ", area, self.focused, theme);
            let inner = block.inner(area);
            block.render(area, buf);
            Line::styled(
                "no collective has run yet (T4 and T7 report busbw)",
                theme.muted,
            )
            .render(inner, buf);
            return;
        };
        let first_row = phase.busbw.values().next();
        let ranks = first_row.map_or(0, |r| r.ranks);
        let state = match phase.state {
            PhaseState::Running => "running".to_string(),
            PhaseState::Done(v) => v.label().to_string(),
            PhaseState::Pending => "pending".to_string(),
        };
        let title = format!(
            " NCCL {} {} · {ranks} ranks · {state} ",
            phase.spec.id,
            phase.collective.as_deref().unwrap_or("collective"),
        );
        let block = pane_block(&title, area, self.focused, theme);
        let inner = block.inner(area);
        block.render(area, buf);
        if inner.height == 0 || inner.width < 24 {
            return;
        }
        let width = inner.width as usize;
        let gates = BusbwGates::of(ctx, phase);
        // The scale holds the gate lines too, so a floor above every bar still shows.
        let max = phase
            .busbw
            .values()
            .filter_map(|r| r.median())
            .chain(gates.lines.iter().map(|(_, v)| *v))
            .fold(0.0_f64, f64::max)
            .max(1.0);
        // Two lines under the rows: nccl-tests' average, and the gates.
        let rows_room = (inner.height as usize).saturating_sub(3);
        let right = 34;
        let bar_w = width.saturating_sub(6 + right).max(4);
        let gate_cols: Vec<usize> = gates
            .lines
            .iter()
            .map(|(_, v)| (((v / max) * bar_w as f64).round() as usize).clamp(1, bar_w) - 1)
            .collect();
        let mut lines = vec![Line::styled(
            fit(
                &format!(
                    "{:>5} {:<bar_w$} {:>9} {:>16} {:>6}",
                    "size", "busbw (median over nodes)", "GB/s", "slowest", "#wrong"
                ),
                width,
            ),
            theme.muted,
        )];
        let skip = phase.busbw.len().saturating_sub(rows_room);
        for (size, row) in phase.busbw.iter().skip(skip) {
            let med = row.median().unwrap_or(0.0);
            let filled = (((med / max) * bar_w as f64).round() as usize).min(bar_w);
            let slowest = row.slowest().filter(|_| row.per_node.len() > 1);
            // The peers gate, per size: a slowest node under its share of the median is red.
            let slow_style = match (slowest, gates.peers_pct) {
                (Some((_, v)), Some(pct)) if med > 0.0 && v < med * pct / 100.0 => theme.crit,
                _ => theme.muted,
            };
            let slowest = slowest.map_or(String::new(), |(n, v)| {
                format!("{} {v:.0}", ctx.short_name(n))
            });
            let (wrong_text, wrong_style) = if row.unvalidated {
                ("N/A".to_string(), theme.warn)
            } else if row.wrong > 0 {
                (row.wrong.to_string(), theme.crit)
            } else {
                ("0".to_string(), theme.ok)
            };
            let mut spans = vec![Span::styled(
                format!("{:>5} ", format_size(*size)),
                theme.text,
            )];
            // The bar, with a mark where each gate line crosses it.
            let mut run = String::new();
            let mut run_is_mark = false;
            for col in 0..bar_w {
                let is_mark = gate_cols.contains(&col);
                let c = match (is_mark, col < filled) {
                    (true, true) => '╋',
                    (true, false) => '┊',
                    (false, true) => '█',
                    (false, false) => ' ',
                };
                if is_mark != run_is_mark && !run.is_empty() {
                    let style = if run_is_mark { theme.warn } else { theme.bar };
                    spans.push(Span::styled(std::mem::take(&mut run), style));
                }
                run_is_mark = is_mark;
                run.push(c);
            }
            if !run.is_empty() {
                spans.push(Span::styled(
                    run,
                    if run_is_mark { theme.warn } else { theme.bar },
                ));
            }
            spans.extend([
                Span::styled(format!(" {med:>9.1}"), theme.accent),
                Span::styled(format!(" {:>16}", fit(&slowest, 16)), slow_style),
                Span::styled(format!(" {wrong_text:>6}"), wrong_style),
            ]);
            lines.push(Line::from(spans));
        }
        let medians: Vec<f64> = phase.busbw.values().filter_map(|r| r.median()).collect();
        let avg = if medians.is_empty() {
            0.0
        } else {
            medians.iter().sum::<f64>() / medians.len() as f64
        };
        let wrong: u64 = phase
            .busbw
            .values()
            .map(|r| r.wrong)
            .fold(0, u64::saturating_add);
        // A node that stopped mid-sweep is named here, where the eye goes, not only counted:
        // "behind" while the phase runs (nodes sweep at their own pace), "missing" once it
        // ended without that node's largest sizes.
        let stopped = phase.busbw_stopped();
        let ended = matches!(phase.state, PhaseState::Done(_));
        let missing = if stopped.is_empty() {
            String::new()
        } else {
            let named: Vec<String> = stopped
                .iter()
                .map(|(n, last)| format!("{} (last {})", ctx.short_name(n), format_size(*last)))
                .collect();
            let word = if ended { "missing" } else { "behind" };
            format!(" · {word}: {}", named.join(", "))
        };
        lines.push(Line::styled(
            fit(
                &format!(
                    "Avg bus bandwidth {avg:.1} GB/s over {} sizes · #wrong {wrong} · nodes reporting {}{missing}",
                    medians.len(),
                    phase.busbw.values().last().map_or(0, |r| r.per_node.len())
                ),
                width,
            ),
            if wrong > 0 || (ended && !stopped.is_empty()) {
                theme.crit
            } else {
                theme.text
            },
        ));
        lines.push(gates.summary(ctx, phase, width));
        for (i, line) in lines.into_iter().enumerate().take(inner.height as usize) {
            line.render(Rect::new(inner.x, inner.y + i as u16, inner.width, 1), buf);
        }
    }
}

/// The plan's gates on a collective phase's busbw, as the pane draws them: the lines it can
/// place on the bars (an absolute floor, a share of the baseline), the peers share for the
/// slowest node of each size, and the words for the rest.
struct BusbwGates {
    /// (what, GB/s) of each line drawn on the bars.
    lines: Vec<(String, f64)>,
    /// The `peers` gate's share, %.
    peers_pct: Option<f64>,
    /// Gates that cannot be drawn, in words (a baseline gate without a baseline).
    unplaced: Vec<String>,
}

impl BusbwGates {
    fn of(ctx: &Ctx, phase: &PhaseView) -> Self {
        let figure = format!(
            "busbw_{}",
            phase.collective.as_deref().unwrap_or("all_reduce")
        );
        let mut out = BusbwGates {
            lines: Vec::new(),
            peers_pct: None,
            unplaced: Vec::new(),
        };
        for gate in &phase.spec.gates {
            match gate {
                Gate::Min {
                    figure: f,
                    value,
                    unless,
                } if *f == figure => {
                    // A floor the spec replaces where it knows the model: said so on the line.
                    let label = match unless {
                        Some(_) => format!("floor {value:.0} unless spec"),
                        None => format!("floor {value:.0}"),
                    };
                    out.lines.push((label, *value));
                }
                Gate::Baseline { figure: f, pct } if *f == figure => {
                    match ctx.store.baseline_line(&phase.spec.id, f, *pct) {
                        Some(v) => out
                            .lines
                            .push((format!("{pct:.0} % of baseline {v:.0}"), v)),
                        None => out
                            .unplaced
                            .push(format!("{pct:.0} % of baseline: no baseline here")),
                    }
                }
                Gate::Peers { figure: f, pct } if *f == figure => out.peers_pct = Some(*pct),
                _ => {}
            }
        }
        out
    }

    /// One line: before the phase ends, what will be judged (the lines as `┊`); after, how
    /// each busbw gate (and #wrong) came out.
    fn summary(&self, ctx: &Ctx, phase: &PhaseView, width: usize) -> Line<'static> {
        let theme = ctx.theme;
        let figure = format!(
            "busbw_{} ",
            phase.collective.as_deref().unwrap_or("all_reduce")
        );
        // The pane is about this figure: its gates read without its name.
        let short = |g: &str| g.strip_prefix(figure.as_str()).unwrap_or(g).to_string();
        let busbw_gate = |g: &str| g.starts_with("busbw_") || g == "#wrong = 0";
        let mut judged: Vec<_> = phase.gates.iter().filter(|g| busbw_gate(&g.gate)).collect();
        // The phase's other gates that failed or warned: a FAIL never reads as all ✓ here.
        judged.extend(phase.gates.iter().filter(|g| {
            !busbw_gate(&g.gate) && matches!(g.status, GateStatus::Missed | GateStatus::Warned)
        }));
        // What failed first: the line is cut at the pane's width, and a gate not judged (a
        // model without that floor) must not push a missed one out of sight.
        judged.sort_by_key(|g| std::cmp::Reverse(severity(g.status)));
        if !judged.is_empty() {
            let worst = judged.iter().map(|g| g.status).max_by_key(|s| severity(*s));
            let mut text = judged
                .iter()
                .map(|g| match g.status {
                    GateStatus::Met => format!("{} {}", g.status.mark(), short(&g.gate)),
                    s => format!("{} {}: {}", s.mark(), short(&g.gate), g.words),
                })
                .collect::<Vec<_>>()
                .join(" · ");
            // A verdict worse than its gates (a node exited, ranks missing): its reason.
            let mut worst = worst;
            let said = match phase.state {
                PhaseState::Done(Verdict::Warn) => Some(GateStatus::Warned),
                PhaseState::Done(Verdict::Pass | Verdict::Skipped) | PhaseState::Pending => None,
                PhaseState::Running => None,
                PhaseState::Done(_) => Some(GateStatus::Missed),
            };
            if let (PhaseState::Done(v), Some(status)) = (phase.state, said)
                && !judged
                    .iter()
                    .any(|g| g.status == status || g.status == GateStatus::Missed)
            {
                let why = phase.reason.as_deref().unwrap_or("");
                text = format!("{} {}: {why} · {text}", status.mark(), v.label());
                worst = worst
                    .into_iter()
                    .chain([status])
                    .max_by_key(|s| severity(*s));
            }
            let style = match worst {
                Some(GateStatus::Missed) => theme.crit,
                Some(GateStatus::Warned | GateStatus::NotJudged) => theme.warn,
                _ => theme.ok,
            };
            return Line::styled(fit(&format!("gates: {text}"), width), style);
        }
        let mut parts: Vec<String> = self
            .lines
            .iter()
            .map(|(what, _)| format!("┊ {what}"))
            .collect();
        if let Some(pct) = self.peers_pct {
            parts.push(format!("slowest red under {pct:.0} % of the median"));
        }
        parts.extend(self.unplaced.iter().cloned());
        let text = if parts.is_empty() {
            "no busbw gate in the plan for this phase".to_string()
        } else {
            format!(
                "gates, judged when {} ends: {}",
                phase.spec.id,
                parts.join(" · ")
            )
        };
        Line::styled(fit(&text, width), theme.muted)
    }
}

/// How bad a gate's outcome is, for the colour of the line that sums them up.
fn severity(status: GateStatus) -> u8 {
    match status {
        GateStatus::Met => 0,
        GateStatus::NotJudged => 1,
        GateStatus::Warned => 2,
        GateStatus::Missed => 3,
    }
}
