//! Small SVG charts for the report (lines, and grouped bars where `categories` is set): no
//! external assets, no scripts, readable when printed.

use std::fmt::Write;

/// How an axis labels its ticks.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Axis {
    /// Seconds from the start, shown as m:ss or h:mm.
    Elapsed,
    /// Bytes on a log2 scale (message sizes).
    Bytes,
    /// Plain numbers.
    Plain,
}

/// One line of a chart.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend text.
    pub label: String,
    /// Points, x ascending.
    pub points: Vec<(f64, f64)>,
    /// Stroke colour.
    pub color: &'static str,
    /// Dashed (gate and limit lines).
    pub dashed: bool,
    /// Thin lines for many series (one per GPU).
    pub thin: bool,
}

/// A chart: title, axes and lines.
#[derive(Debug, Clone)]
pub struct Chart {
    /// Title above the plot.
    pub title: String,
    /// X axis.
    pub x: Axis,
    /// X axis caption.
    pub x_label: String,
    /// Y axis caption.
    pub y_label: String,
    /// The lines.
    pub series: Vec<Series>,
    /// Legend line shown instead of one entry per series (when there are many).
    pub legend_note: Option<String>,
    /// A bar chart's groups along x (empty: a line chart). Each series is one bar per group:
    /// its point `(i, v)` is the bar of group `i`; a group it has no point for has no bar.
    pub categories: Vec<String>,
}

/// Colours for node lines, in order.
pub const PALETTE: &[&str] = &[
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf", "#393b79", "#637939",
];

const W: f64 = 760.0;
const H: f64 = 300.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
const TOP: f64 = 30.0;
const BOTTOM: f64 = 58.0;

/// `s` made safe inside XML/HTML text and attributes.
pub(crate) fn esc(s: &str) -> String {
    // Control and bidi characters go first: an override in a node's name would reorder the
    // row it sits in, and XML forbids most C0 characters outright.
    crate::model::terminal_safe(s)
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

fn tick_label(axis: Axis, v: f64) -> String {
    match axis {
        Axis::Elapsed => {
            let s = v.max(0.0) as u64;
            if s >= 3600 {
                format!("{}:{:02}h", s / 3600, s / 60 % 60)
            } else {
                format!("{}:{:02}", s / 60, s % 60)
            }
        }
        Axis::Bytes => {
            let b = 2f64.powf(v);
            let units = [(1u64 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")];
            units.iter().find(|(u, _)| b >= *u as f64).map_or_else(
                || format!("{b:.0}"),
                |(u, n)| format!("{:.0}{n}", b / *u as f64),
            )
        }
        Axis::Plain if v == 0.0 => "0".into(),
        Axis::Plain if v.abs() >= 10.0 => format!("{v:.0}"),
        Axis::Plain => format!("{v:.1}"),
    }
}

/// Ticks at round steps covering `lo..=hi`.
fn ticks(lo: f64, hi: f64, axis: Axis) -> Vec<f64> {
    if axis == Axis::Bytes {
        let step = ((hi - lo) / 8.0).ceil().max(1.0);
        let mut v = lo.ceil();
        let mut out = Vec::new();
        while v <= hi + 1e-9 {
            out.push(v);
            v += step;
        }
        return out;
    }
    let span = (hi - lo).max(1e-9);
    let raw = span / 5.0;
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 6.0)
        .unwrap_or(10.0 * mag);
    let mut v = (lo / step).ceil() * step;
    let mut out = Vec::new();
    while v <= hi + step * 1e-9 {
        out.push(v);
        v += step;
    }
    out
}

/// Height of a legend row below the first.
const LEGEND_ROW: f64 = 14.0;

/// Legend entries, at most: more lines than this become thin, and a note says how many.
pub const LEGEND_ENTRIES: usize = 24;

/// The legend's entries laid out in rows under the plot: (x, label, colour, dashed). Gate and
/// limit lines come first, so they are never the entries left out; none is dropped for want
/// of width.
fn legend_rows(chart: &Chart) -> Vec<Vec<(f64, String, &'static str, bool)>> {
    let mut entries: Vec<(String, &'static str, bool)> = match &chart.legend_note {
        Some(note) => {
            let mut v: Vec<(String, &'static str, bool)> = chart
                .series
                .iter()
                .filter(|s| !s.thin)
                .map(|s| (s.label.clone(), s.color, s.dashed))
                .collect();
            v.insert(0, (note.clone(), "#777", false));
            v
        }
        None => chart
            .series
            .iter()
            .map(|s| (s.label.clone(), s.color, s.dashed))
            .collect(),
    };
    entries.sort_by_key(|e| !e.2);
    let mut rows: Vec<Vec<(f64, String, &'static str, bool)>> = vec![Vec::new()];
    let mut lx = LEFT;
    for (label, color, dashed) in entries.into_iter().take(LEGEND_ENTRIES) {
        let w = 28.0 + 6.5 * label.chars().count() as f64;
        if lx + w > W - RIGHT && rows.last().is_some_and(|r| !r.is_empty()) {
            rows.push(Vec::new());
            lx = LEFT;
        }
        if let Some(row) = rows.last_mut() {
            row.push((lx, label, color, dashed));
        }
        lx += w;
    }
    rows
}

/// The `<svg>` opening and the title, tall enough for the legend's rows.
fn open_svg(chart: &Chart) -> String {
    let legend_lines = legend_rows(chart).len().max(1);
    let height = H + (legend_lines - 1) as f64 * LEGEND_ROW;
    let mut out = String::new();
    let _ = write!(
        out,
        r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {W} {height}" width="{W}" height="{height}" role="img" font-family="sans-serif" font-size="11"><title>{t}</title><text x="{LEFT}" y="18" font-size="13" font-weight="bold">{t}</text>"#,
        t = esc(&chart.title)
    );
    out
}

/// Horizontal grid lines with their labels from `y0` to `y1`, placed by `sy`.
fn y_grid(out: &mut String, y0: f64, y1: f64, sy: impl Fn(f64) -> f64) {
    for t in ticks(y0, y1, Axis::Plain) {
        let y = sy(t);
        let _ = write!(
            out,
            r##"<line x1="{LEFT}" x2="{}" y1="{y:.1}" y2="{y:.1}" stroke="#e4e4e4"/><text x="{}" y="{:.1}" text-anchor="end">{}</text>"##,
            W - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            tick_label(Axis::Plain, t)
        );
    }
}

/// The plot's frame and the two axis captions.
fn frame(out: &mut String, chart: &Chart, pw: f64, ph: f64) {
    let _ = write!(
        out,
        r##"<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#999"/><text x="{}" y="{}" text-anchor="middle">{}</text><text transform="translate(14 {}) rotate(-90)" text-anchor="middle">{}</text>"##,
        LEFT + pw / 2.0,
        TOP + ph + 30.0,
        esc(&chart.x_label),
        TOP + ph / 2.0,
        esc(&chart.y_label)
    );
}

/// A grouped bar chart as an `<svg>` element: one group per category, one bar per series.
fn bar_svg(chart: &Chart) -> String {
    let y1 = chart
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .filter(|v| v.is_finite())
        .fold(0.0f64, f64::max);
    let mut out = open_svg(chart);
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.08 };
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let sy = |y: f64| TOP + ph - y / y1 * ph;
    y_grid(&mut out, 0.0, y1, sy);
    let groups = chart.categories.len().max(1) as f64;
    let group_w = pw / groups;
    let bars = chart.series.len().max(1) as f64;
    let bar_w = (group_w * 0.8 / bars).max(1.0);
    for (i, name) in chart.categories.iter().enumerate() {
        let x = LEFT + group_w * (i as f64 + 0.5);
        let _ = write!(
            out,
            r#"<text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            TOP + ph + 14.0,
            esc(name)
        );
    }
    for (k, s) in chart.series.iter().enumerate() {
        for (i, v) in &s.points {
            if !(v.is_finite() && i.is_finite() && *i >= 0.0 && *i < groups) {
                continue;
            }
            let x = LEFT + group_w * (i.floor() + 0.1) + bar_w * k as f64;
            let y = sy(v.max(0.0));
            let _ = write!(
                out,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{}: {}</title></rect>"#,
                (bar_w - 1.0).max(0.5),
                TOP + ph - y,
                s.color,
                esc(&s.label),
                crate::model::figures::fmt_value(*v)
            );
        }
    }
    frame(&mut out, chart, pw, ph);
    for (row, line) in legend_rows(chart).iter().enumerate() {
        let ly = H - 10.0 + row as f64 * LEGEND_ROW;
        for (lx, label, color, _) in line {
            let _ = write!(
                out,
                r#"<rect x="{lx:.1}" y="{:.1}" width="14" height="8" fill="{color}"/><text x="{:.1}" y="{ly:.1}">{}</text>"#,
                ly - 8.0,
                lx + 20.0,
                esc(label)
            );
        }
    }
    out.push_str("</svg>");
    out
}

/// The chart as an `<svg>` element.
pub fn svg(chart: &Chart) -> String {
    if !chart.categories.is_empty() {
        return bar_svg(chart);
    }
    let pts = chart.series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY);
    for (x, y) in pts {
        if x.is_finite() && y.is_finite() {
            x0 = x0.min(*x);
            x1 = x1.max(*x);
            y1 = y1.max(*y);
        }
    }
    let mut out = open_svg(chart);
    if !x0.is_finite() {
        let _ = write!(
            out,
            r##"<text x="{}" y="{}" fill="#666">no data recorded</text></svg>"##,
            W / 2.0 - 50.0,
            H / 2.0
        );
        return out;
    }
    if x1 <= x0 {
        x1 = x0 + 1.0;
    }
    let y0 = 0.0;
    let y1 = if y1 <= 0.0 { 1.0 } else { y1 * 1.08 };
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let sx = |x: f64| LEFT + (x - x0) / (x1 - x0) * pw;
    let sy = |y: f64| TOP + ph - (y - y0) / (y1 - y0) * ph;
    // Grid and ticks.
    y_grid(&mut out, y0, y1, sy);
    for t in ticks(x0, x1, chart.x) {
        let x = sx(t);
        let _ = write!(
            out,
            r##"<line x1="{x:.1}" x2="{x:.1}" y1="{TOP}" y2="{}" stroke="#f0f0f0"/><text x="{x:.1}" y="{}" text-anchor="middle">{}</text>"##,
            TOP + ph,
            TOP + ph + 14.0,
            tick_label(chart.x, t)
        );
    }
    frame(&mut out, chart, pw, ph);
    for s in &chart.series {
        if s.points.is_empty() {
            continue;
        }
        let mut d = String::new();
        for (i, (x, y)) in s
            .points
            .iter()
            .filter(|(x, y)| x.is_finite() && y.is_finite())
            .enumerate()
        {
            let _ = write!(
                d,
                "{}{:.1},{:.1}",
                if i == 0 { "M" } else { " L" },
                sx(*x),
                sy(*y)
            );
        }
        let _ = write!(
            out,
            r#"<path d="{d}" fill="none" stroke="{}" stroke-width="{}"{}{}/>"#,
            s.color,
            if s.thin { 0.7 } else { 1.8 },
            if s.dashed {
                r#" stroke-dasharray="6 4""#
            } else {
                ""
            },
            if s.thin {
                r#" stroke-opacity="0.6""#
            } else {
                ""
            }
        );
    }
    // Legend under the plot, wrapped onto as many rows as its entries need.
    for (row, line) in legend_rows(chart).iter().enumerate() {
        let ly = H - 10.0 + row as f64 * LEGEND_ROW;
        for (lx, label, color, dashed) in line {
            let _ = write!(
                out,
                r#"<line x1="{lx:.1}" x2="{:.1}" y1="{:.1}" y2="{:.1}" stroke="{color}" stroke-width="2"{}/><text x="{:.1}" y="{ly:.1}">{}</text>"#,
                lx + 16.0,
                ly - 4.0,
                ly - 4.0,
                if *dashed {
                    r#" stroke-dasharray="4 3""#
                } else {
                    ""
                },
                lx + 20.0,
                esc(label)
            );
        }
    }
    out.push_str("</svg>");
    out
}

/// A series thinned while its points stream past, so a 72-hour record of 96 nodes is never
/// held point by point: runs of `width` consecutive points kept as their sums, adjacent runs
/// merged (the width doubled) whenever more than twice `max` are kept. [`Thinning::points`]
/// then thins the run means as [`thin_out`] thins points; a series of at most twice `max`
/// points is kept whole, so its chart is what [`thin_out`] makes of it.
#[derive(Debug, Clone)]
pub struct Thinning {
    max: usize,
    width: usize,
    /// Per run: sum of x, sum of y, points in it.
    runs: Vec<(f64, f64, usize)>,
    /// The x of the last point pushed.
    last_x: Option<f64>,
}

impl Thinning {
    /// A series to be drawn with at most `max` points.
    pub fn new(max: usize) -> Self {
        Self {
            max: max.max(1),
            width: 1,
            runs: Vec::new(),
            last_x: None,
        }
    }

    /// The next point, in order.
    pub fn push(&mut self, x: f64, y: f64) {
        self.last_x = Some(x);
        match self.runs.last_mut() {
            Some(run) if run.2 < self.width => {
                run.0 += x;
                run.1 += y;
                run.2 += 1;
            }
            _ => self.runs.push((x, y, 1)),
        }
        if self.runs.len() > 2 * self.max {
            self.width *= 2;
            self.runs = self
                .runs
                .chunks(2)
                .map(|c| {
                    c.iter()
                        .fold((0.0, 0.0, 0), |a, r| (a.0 + r.0, a.1 + r.1, a.2 + r.2))
                })
                .collect();
        }
    }

    /// The x of the last point pushed (`None`: none yet).
    pub fn last_x(&self) -> Option<f64> {
        self.last_x
    }

    /// At most `max` points to draw.
    pub fn points(&self) -> Vec<(f64, f64)> {
        let means: Vec<(f64, f64)> = self
            .runs
            .iter()
            .map(|r| (r.0 / r.2 as f64, r.1 / r.2 as f64))
            .collect();
        thin_out(&means, self.max)
    }
}

/// At most `max` points: means over equal runs of consecutive points (long runs stay drawable).
pub fn thin_out(points: &[(f64, f64)], max: usize) -> Vec<(f64, f64)> {
    if points.len() <= max || max == 0 {
        return points.to_vec();
    }
    let chunk = points.len().div_ceil(max);
    points
        .chunks(chunk)
        .map(|c| {
            let n = c.len() as f64;
            (
                c.iter().map(|p| p.0).sum::<f64>() / n,
                c.iter().map(|p| p.1).sum::<f64>() / n,
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A long series thinned as it streams ends as [`thin_out`] makes of it held whole (within
    /// rounding), holding at most twice `max` runs on the way; a short one is kept exact.
    #[test]
    fn a_streamed_series_is_thinned_as_a_held_one_is() {
        let pts: Vec<(f64, f64)> = (0..100_000).map(|i| (i as f64, (i % 97) as f64)).collect();
        let mut t = Thinning::new(400);
        for (x, y) in &pts {
            t.push(*x, *y);
            assert!(t.runs.len() <= 800);
        }
        let streamed = t.points();
        assert!(
            streamed.len() <= 400 && streamed.len() > 300,
            "{}",
            streamed.len()
        );
        let held = thin_out(&pts, 400);
        let span = |v: &[(f64, f64)]| (v[0].0, v[v.len() - 1].0);
        assert!((span(&streamed).0 - span(&held).0).abs() < 300.0);
        assert!((span(&streamed).1 - span(&held).1).abs() < 300.0);
        let mean = |v: &[(f64, f64)]| v.iter().map(|p| p.1).sum::<f64>() / v.len() as f64;
        assert!((mean(&streamed) - mean(&held)).abs() < 0.5);
        let short: Vec<(f64, f64)> = pts[..700].to_vec();
        let mut t = Thinning::new(400);
        for (x, y) in &short {
            t.push(*x, *y);
        }
        assert_eq!(t.points(), thin_out(&short, 400));
    }

    #[test]
    fn an_empty_chart_says_so() {
        let s = svg(&Chart {
            title: "t".into(),
            x: Axis::Plain,
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![],
            legend_note: None,
            categories: Vec::new(),
        });
        assert!(s.contains("no data recorded") && s.ends_with("</svg>"));
    }

    #[test]
    fn ticks_are_round() {
        assert_eq!(
            ticks(0.0, 1100.0, Axis::Plain),
            [0.0, 200.0, 400.0, 600.0, 800.0, 1000.0]
        );
        assert_eq!(tick_label(Axis::Bytes, 30.0), "1G");
        assert_eq!(tick_label(Axis::Elapsed, 3725.0), "1:02h");
        assert_eq!(
            thin_out(&[(0.0, 1.0), (1.0, 3.0), (2.0, 5.0)], 2),
            [(0.5, 2.0), (2.0, 5.0)]
        );
    }

    #[test]
    fn labels_are_escaped() {
        let s = svg(&Chart {
            title: "<b>&".into(),
            x: Axis::Plain,
            x_label: "x".into(),
            y_label: "y".into(),
            series: vec![Series {
                label: "a<b".into(),
                points: vec![(0.0, 1.0), (1.0, 2.0)],
                color: "#000",
                dashed: false,
                thin: false,
            }],
            legend_note: None,
            categories: Vec::new(),
        });
        assert!(s.contains("&lt;b&gt;&amp;") && s.contains("a&lt;b") && !s.contains("<b>"));
    }
}
