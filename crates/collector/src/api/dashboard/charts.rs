//! The dashboard's charts, drawn on the server as SVG with plotters (SVG backend only: text
//! stays SVG text, no font files are read). Every function here is pure: data in, SVG out.

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use collector_core::metrics::Measurement;

/// Size of a bar or line chart, px.
pub(super) const CHART_SIZE: (u32, u32) = (420, 240);

/// The font family of every chart.
const FONT: &str = "sans-serif";
/// Caption font size, px.
const CAPTION_PX: u32 = 15;
/// Label font size, px.
const LABEL_PX: u32 = 12;
/// Head room above the highest bar or point, as a factor of it.
const HEAD_ROOM: f64 = 1.2;
/// Width of the time axis when the points span less, s.
const MIN_SPAN_S: f64 = 60.0;
/// Nanoseconds in a second.
const NS_PER_S: f64 = 1e9;

/// Bar colour (a muted blue).
const BAR: RGBColor = RGBColor(58, 110, 165);
/// Accent colour: the selected path, the line of a line chart.
const ACCENT: RGBColor = RGBColor(214, 96, 39);
/// The fine grid lines of the charts.
const FINE_GRID: RGBColor = RGBColor(242, 242, 242);
/// Grey of secondary text and lines.
const GREY: RGBColor = RGBColor(120, 120, 120);
/// Core AS fill.
const CORE_FILL: RGBColor = RGBColor(38, 70, 110);
/// Non-core AS fill.
const LEAF_FILL: RGBColor = RGBColor(220, 232, 245);
/// Fill of ASes only named by links and paths (nothing imported about them).
const UNKNOWN_FILL: RGBColor = RGBColor(235, 235, 235);

/// A drawing error as text (the handler answers 500 with it).
fn failed(e: impl std::fmt::Display) -> String {
    format!("drawing the chart: {e}")
}

/// How a measurement's values are shown: the divisor that brings the largest value `max` to
/// a readable size, and the unit after dividing.
pub(super) fn display_unit(m: Measurement, max: f64) -> (f64, &'static str) {
    const K: f64 = 1e3;
    const M: f64 = 1e6;
    match m {
        Measurement::LatencyNs if max >= M => (M, "ms"),
        Measurement::LatencyNs if max >= K => (K, "µs"),
        Measurement::LatencyNs => (1.0, "ns"),
        Measurement::UtilisationKbps if max >= M => (M, "Gbit/s"),
        Measurement::UtilisationKbps if max >= K => (K, "Mbit/s"),
        Measurement::UtilisationKbps => (1.0, "kbit/s"),
        Measurement::QueueLen => (1.0, "packets"),
        Measurement::EnergyNj if max >= M => (M, "mJ"),
        Measurement::EnergyNj if max >= K => (K, "µJ"),
        Measurement::EnergyNj => (1.0, "nJ"),
        Measurement::Co2Pg if max >= M => (M, "µg"),
        Measurement::Co2Pg if max >= K => (K, "ng"),
        Measurement::Co2Pg => (1.0, "pg"),
    }
}

/// A value with at most three significant decimals, without trailing zeros.
pub(super) fn short(v: f64) -> String {
    let s = if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    }
}

/// A bar chart: one bar per `(label, value)`, a missing value shown as "n/a".
pub(super) fn bars(
    title: &str,
    m: Measurement,
    bars: &[(String, Option<f64>)],
) -> Result<String, String> {
    let max = bars.iter().filter_map(|b| b.1).fold(0.0, f64::max);
    let (div, unit) = display_unit(m, max);
    let top = if max > 0.0 {
        max / div * HEAD_ROOM
    } else {
        1.0
    };
    let n = bars.len().max(1);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, CHART_SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(failed)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{title} ({unit})"), (FONT, CAPTION_PX))
            .margin(8)
            .x_label_area_size(28)
            .y_label_area_size(48)
            .build_cartesian_2d((0..n).into_segmented(), 0f64..top)
            .map_err(failed)?;
        let label = |v: &SegmentValue<usize>| match v {
            SegmentValue::CenterOf(i) => bars.get(*i).map(|b| b.0.clone()).unwrap_or_default(),
            _ => String::new(),
        };
        chart
            .configure_mesh()
            .disable_x_mesh()
            .x_labels(n)
            .x_label_formatter(&label)
            .y_labels(5)
            .y_label_formatter(&|v| short(*v))
            .light_line_style(FINE_GRID)
            .label_style((FONT, LABEL_PX))
            .draw()
            .map_err(failed)?;
        chart
            .draw_series(bars.iter().enumerate().filter_map(|(i, b)| {
                let v = b.1? / div;
                let mut r = Rectangle::new(
                    [
                        (SegmentValue::Exact(i), 0.0),
                        (SegmentValue::Exact(i + 1), v),
                    ],
                    BAR.filled(),
                );
                r.set_margin(0, 0, 12, 12);
                Some(r)
            }))
            .map_err(failed)?;
        let above =
            TextStyle::from((FONT, LABEL_PX).into_font()).pos(Pos::new(HPos::Center, VPos::Bottom));
        chart
            .draw_series(bars.iter().enumerate().map(|(i, b)| {
                let (text, y) = match b.1 {
                    Some(v) => (short(v / div), v / div),
                    None => ("n/a".to_owned(), 0.0),
                };
                Text::new(text, (SegmentValue::CenterOf(i), y), above.clone())
            }))
            .map_err(failed)?;
        root.present().map_err(failed)?;
    }
    Ok(svg)
}

/// A line chart of `(time ns, value)` points, oldest first, against seconds before `now_ns`.
pub(super) fn line(
    title: &str,
    m: Measurement,
    points: &[(u64, f64)],
    now_ns: u64,
) -> Result<String, String> {
    let max = points.iter().map(|p| p.1).fold(0.0, f64::max);
    let (div, unit) = display_unit(m, max);
    let top = if max > 0.0 {
        max / div * HEAD_ROOM
    } else {
        1.0
    };
    let ago = |t: u64| -((now_ns.saturating_sub(t)) as f64) / NS_PER_S;
    let oldest = points.first().map_or(0.0, |p| ago(p.0));
    let left = oldest.min(-MIN_SPAN_S);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, CHART_SIZE).into_drawing_area();
        root.fill(&WHITE).map_err(failed)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(format!("{title} ({unit})"), (FONT, CAPTION_PX))
            .margin(8)
            .x_label_area_size(32)
            .y_label_area_size(48)
            .build_cartesian_2d(left..0.0, 0f64..top)
            .map_err(failed)?;
        chart
            .configure_mesh()
            .x_labels(6)
            .x_label_formatter(&|v| format!("{}s", short(*v)))
            .y_labels(5)
            .y_label_formatter(&|v| short(*v))
            .x_desc("seconds before now")
            .light_line_style(FINE_GRID)
            .label_style((FONT, LABEL_PX))
            .draw()
            .map_err(failed)?;
        let xy: Vec<(f64, f64)> = points.iter().map(|&(t, v)| (ago(t), v / div)).collect();
        if xy.is_empty() {
            let mid = (FONT, CAPTION_PX)
                .into_font()
                .color(&GREY)
                .pos(Pos::new(HPos::Center, VPos::Center));
            chart
                .draw_series(std::iter::once(Text::new(
                    "no values yet",
                    (left / 2.0, top / 2.0),
                    mid,
                )))
                .map_err(failed)?;
        }
        chart
            .draw_series(LineSeries::new(xy.iter().copied(), ACCENT.stroke_width(2)))
            .map_err(failed)?;
        chart
            .draw_series(xy.iter().map(|&p| Circle::new(p, 3, ACCENT.filled())))
            .map_err(failed)?;
        root.present().map_err(failed)?;
    }
    Ok(svg)
}

/// An AS of the topology graph.
pub(super) struct Node {
    /// ISD-AS as text.
    pub label: String,
    /// The ISD, the column the AS is drawn in.
    pub isd: u16,
    /// Core AS (`None`: nothing imported about it).
    pub core: Option<bool>,
    /// The collector's own AS.
    pub local: bool,
    /// On the highlighted path.
    pub highlighted: bool,
}

/// A link between two ASes of the graph (indices into the nodes).
pub(super) struct Edge {
    /// One end.
    pub a: usize,
    /// The other end.
    pub b: usize,
    /// Text beside the line (interfaces, latency).
    pub label: String,
    /// Known only from paths (no imported link): drawn dashed.
    pub from_paths: bool,
    /// On the highlighted path.
    pub highlighted: bool,
}

/// The topology graph: ASes in one column per ISD, core ASes first.
pub(super) struct Graph {
    /// ASes.
    pub nodes: Vec<Node>,
    /// Links.
    pub edges: Vec<Edge>,
    /// ASes and links left out (over the drawing bounds).
    pub left_out: usize,
}

/// Width of an AS box, px.
const BOX_W: i32 = 124;
/// Height of an AS box, px.
const BOX_H: i32 = 30;
/// Width of an ISD column, px.
const COLUMN_W: i32 = 250;
/// Height of a row (one AS), px.
const ROW_H: i32 = 78;
/// Space above the first row (the ISD headings), px.
const TOP: i32 = 46;
/// Smallest drawing, px.
const MIN_SIZE: (i32, i32) = (520, 260);
/// How much further a link between two ASes of one column bends out per row between them, px.
const BEND_PER_ROW: f64 = 16.0;
/// Space between a bent link and the AS boxes it passes, px.
const BEND_CLEARANCE: f64 = 14.0;
/// Points a bent link is drawn with.
const BEND_STEPS: usize = 16;
/// Approximate width of a label character, px.
const CHAR_W: i32 = 7;

/// Where each node is drawn (box centre), and the drawing's size.
fn layout(g: &Graph) -> (Vec<(i32, i32)>, (u32, u32)) {
    let mut isds: Vec<u16> = g.nodes.iter().map(|n| n.isd).collect();
    isds.sort_unstable();
    isds.dedup();
    let mut rows = vec![0i32; isds.len()];
    let mut order: Vec<usize> = (0..g.nodes.len()).collect();
    // Core ASes on top of their column, then by name.
    order.sort_by_key(|&i| (g.nodes[i].core != Some(true), g.nodes[i].label.clone()));
    let mut at = vec![(0, 0); g.nodes.len()];
    for i in order {
        let c = isds.binary_search(&g.nodes[i].isd).unwrap_or(0);
        at[i] = (
            COLUMN_W * c as i32 + COLUMN_W / 2,
            TOP + ROW_H * rows[c] + ROW_H / 2,
        );
        rows[c] += 1;
    }
    let w = (COLUMN_W * isds.len() as i32).max(MIN_SIZE.0);
    let h = (TOP + ROW_H * rows.iter().copied().max().unwrap_or(0)).max(MIN_SIZE.1);
    // Centre the columns when the drawing is wider than they are.
    let shift = (w - COLUMN_W * isds.len() as i32) / 2;
    for p in &mut at {
        p.0 += shift;
    }
    (at, (w as u32, h as u32))
}

/// The points of a link from `p` to `q`: straight, or bent to the right between two ASes of
/// one column (so that it does not run through the ASes between them).
fn link_points(p: (i32, i32), q: (i32, i32)) -> Vec<(i32, i32)> {
    if p.0 != q.0 {
        return vec![p, q];
    }
    // A quadratic curve reaches half way to its control point: clear of the boxes, a little
    // further for ASes further apart, within the column.
    let rows_apart = f64::from((q.1 - p.1).abs()) / f64::from(ROW_H);
    let reach = (f64::from(BOX_W) / 2.0 + BEND_CLEARANCE + BEND_PER_ROW * (rows_apart - 1.0))
        .min(f64::from(COLUMN_W) / 2.0 - BEND_CLEARANCE);
    let bend = 2.0 * reach;
    let c = (f64::from(p.0) + bend, f64::from(p.1 + q.1) / 2.0);
    (0..=BEND_STEPS)
        .map(|s| {
            let t = s as f64 / BEND_STEPS as f64;
            let u = 1.0 - t;
            let x = u * u * f64::from(p.0) + 2.0 * u * t * c.0 + t * t * f64::from(q.0);
            let y = u * u * f64::from(p.1) + 2.0 * u * t * c.1 + t * t * f64::from(q.1);
            (x.round() as i32, y.round() as i32)
        })
        .collect()
}

/// Draws `text` centred at `at` on a white box (readable over lines).
fn label_box(
    root: &DrawingArea<SVGBackend<'_>, Shift>,
    text: &str,
    at: (i32, i32),
    color: &RGBColor,
) -> Result<(), String> {
    let half_w = CHAR_W * text.chars().count() as i32 / 2 + 3;
    root.draw(&Rectangle::new(
        [(at.0 - half_w, at.1 - 8), (at.0 + half_w, at.1 + 8)],
        WHITE.mix(0.9).filled(),
    ))
    .map_err(failed)?;
    let style = (FONT, LABEL_PX)
        .into_font()
        .color(color)
        .pos(Pos::new(HPos::Center, VPos::Center));
    root.draw(&Text::new(text.to_owned(), at, style))
        .map_err(failed)
}

/// The topology graph as SVG.
pub(super) fn topology(g: &Graph) -> Result<String, String> {
    let (at, size) = layout(g);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(failed)?;
        let heading = (FONT, CAPTION_PX)
            .into_font()
            .color(&GREY)
            .pos(Pos::new(HPos::Center, VPos::Top));
        let mut isds: Vec<(u16, i32)> =
            g.nodes.iter().zip(&at).map(|(n, p)| (n.isd, p.0)).collect();
        isds.sort_unstable();
        isds.dedup();
        for (isd, x) in isds {
            root.draw(&Text::new(format!("ISD {isd}"), (x, 10), heading.clone()))
                .map_err(failed)?;
        }
        if g.nodes.is_empty() {
            let mid = (FONT, CAPTION_PX)
                .into_font()
                .color(&GREY)
                .pos(Pos::new(HPos::Center, VPos::Center));
            root.draw(&Text::new(
                "no topology yet: import topology.json files or paths",
                (size.0 as i32 / 2, size.1 as i32 / 2),
                mid,
            ))
            .map_err(failed)?;
        }
        for e in &g.edges {
            let (color, width) = if e.highlighted {
                (ACCENT, 3)
            } else {
                (GREY, 1)
            };
            let pts = link_points(at[e.a], at[e.b]);
            let style = color.stroke_width(width);
            if e.from_paths {
                root.draw(&DashedPathElement::new(pts.clone(), 6, 4, style))
                    .map_err(failed)?;
            } else {
                root.draw(&PathElement::new(pts.clone(), style))
                    .map_err(failed)?;
            }
            if !e.label.is_empty() {
                let mid = pts[pts.len() / 2];
                let mid = if pts.len() == 2 {
                    ((pts[0].0 + pts[1].0) / 2, (pts[0].1 + pts[1].1) / 2)
                } else {
                    mid
                };
                label_box(&root, &e.label, mid, &BLACK)?;
            }
        }
        for (n, &(x, y)) in g.nodes.iter().zip(&at) {
            let (fill, text) = match n.core {
                Some(true) => (CORE_FILL, WHITE),
                Some(false) => (LEAF_FILL, BLACK),
                None => (UNKNOWN_FILL, BLACK),
            };
            let corners = [
                (x - BOX_W / 2, y - BOX_H / 2),
                (x + BOX_W / 2, y + BOX_H / 2),
            ];
            root.draw(&Rectangle::new(corners, fill.filled()))
                .map_err(failed)?;
            let border = if n.highlighted { ACCENT } else { CORE_FILL };
            let width = if n.highlighted || n.local { 3 } else { 1 };
            root.draw(&Rectangle::new(corners, border.stroke_width(width)))
                .map_err(failed)?;
            let style = (FONT, LABEL_PX + 1)
                .into_font()
                .color(&text)
                .pos(Pos::new(HPos::Center, VPos::Center));
            root.draw(&Text::new(n.label.clone(), (x, y), style))
                .map_err(failed)?;
            let mut notes = Vec::new();
            if n.core == Some(true) {
                notes.push("core");
            }
            if n.local {
                notes.push("collector");
            }
            if !notes.is_empty() {
                let small = (FONT, LABEL_PX - 1)
                    .into_font()
                    .color(&GREY)
                    .pos(Pos::new(HPos::Center, VPos::Top));
                root.draw(&Text::new(notes.join(", "), (x, y + BOX_H / 2 + 2), small))
                    .map_err(failed)?;
            }
        }
        if g.left_out > 0 {
            let note = (FONT, LABEL_PX)
                .into_font()
                .color(&GREY)
                .pos(Pos::new(HPos::Right, VPos::Bottom));
            root.draw(&Text::new(
                format!("{} more ASes and links not drawn", g.left_out),
                (size.0 as i32 - 6, size.1 as i32 - 4),
                note,
            ))
            .map_err(failed)?;
        }
        root.present().map_err(failed)?;
    }
    Ok(svg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_scale_with_the_largest_value() {
        assert_eq!(display_unit(Measurement::LatencyNs, 500.0), (1.0, "ns"));
        assert_eq!(display_unit(Measurement::LatencyNs, 2.5e6), (1e6, "ms"));
        assert_eq!(
            display_unit(Measurement::UtilisationKbps, 4000.0),
            (1e3, "Mbit/s")
        );
        assert_eq!(short(1234.4), "1234");
        assert_eq!(short(12.34), "12.3");
        assert_eq!(short(1.5), "1.5");
        assert_eq!(short(2.0), "2");
    }

    #[test]
    fn charts_are_svg_with_their_values_as_text() {
        let svg = bars(
            "Latency per AS hop",
            Measurement::LatencyNs,
            &[
                ("1-ff00:0:a".into(), Some(1100.0)),
                ("1-ff00:0:b".into(), None),
            ],
        )
        .unwrap();
        assert!(svg.starts_with("<svg"), "{svg}");
        for text in ["1-ff00:0:a", "1.1", "n/a", "µs"] {
            assert!(svg.contains(text), "{text} missing");
        }
        let svg = line(
            "Path latency",
            Measurement::QueueLen,
            &[(1, 3.0), (2, 4.0)],
            2,
        )
        .unwrap();
        assert!(svg.contains("<polyline") || svg.contains("<path"), "{svg}");
        let empty = line("Path latency", Measurement::QueueLen, &[], 2).unwrap();
        assert!(empty.contains("no values yet"));
    }

    #[test]
    fn the_topology_draws_every_as_and_bends_links_within_a_column() {
        let node = |label: &str, isd, core| Node {
            label: label.into(),
            isd,
            core,
            local: false,
            highlighted: false,
        };
        let g = Graph {
            nodes: vec![
                node("1-ff00:0:1", 1, Some(true)),
                node("1-ff00:0:2", 1, Some(false)),
                node("1-ff00:0:3", 1, None),
                node("2-ff00:0:4", 2, Some(true)),
            ],
            edges: vec![Edge {
                a: 0,
                b: 2,
                label: "1-2".into(),
                from_paths: true,
                highlighted: true,
            }],
            left_out: 3,
        };
        let svg = topology(&g).unwrap();
        for text in [
            "ISD 1",
            "ISD 2",
            "1-ff00:0:3",
            "2-ff00:0:4",
            "core",
            "3 more",
        ] {
            assert!(svg.contains(text), "{text} missing");
        }
        let (at, _) = layout(&g);
        assert_eq!(at[0].0, at[2].0);
        assert!(at[0].1 < at[1].1, "core first");
        assert!(link_points(at[0], at[2]).len() > 2);
        assert_eq!(link_points(at[0], at[3]).len(), 2);
    }
}
