//! Two plots, drawn as plain SVG: calls ended per second by outcome with the faults marked,
//! and latency percentiles by outcome.

use std::collections::BTreeMap;
use std::fmt::Write;

use super::Report;

const WIDTH: f64 = 900.0;
const HEIGHT: f64 = 360.0;
const MARGIN: f64 = 50.0;
const COLOURS: [&str; 8] = [
    "#1f77b4", "#2ca02c", "#ff7f0e", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
];

/// Calls ended per second, one line per outcome; kills as red lines, stops as grey bands,
/// network faults as orange ones, store restarts as red ones.
pub(crate) fn calls_over_time(report: &Report) -> String {
    let Some(start) = report.timeline.iter().map(|&(s, _, _)| s).min() else {
        return empty("no calls");
    };
    let end = report
        .timeline
        .iter()
        .map(|&(_, e, _)| e)
        .max()
        .unwrap_or(start)
        + 1;
    let seconds = ((end - start) / 1_000_000 + 1) as usize;
    let mut per_second: BTreeMap<&str, Vec<u32>> = BTreeMap::new();
    for (_, ended, outcome) in &report.timeline {
        let bucket = ((ended - start) / 1_000_000) as usize;
        per_second
            .entry(outcome)
            .or_insert_with(|| vec![0; seconds])[bucket.min(seconds - 1)] += 1;
    }
    let top = per_second
        .values()
        .flat_map(|counts| counts.iter().copied())
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let x = |micros: u64| MARGIN + (micros - start) as f64 / (end - start) as f64 * plot_width();
    let y = |count: f64| HEIGHT - MARGIN - count / top * plot_height();
    let mut svg = open("Calls ended per second, by outcome");
    for fault in &report.fault_log {
        if fault.end > fault.start {
            let fill = match fault.kind {
                "stop" => "#bbb",
                "restart" | "failover" | "replica-loss" => "#f4a6a6",
                _ => "#fdd9a0",
            };
            let _ = writeln!(
                svg,
                r##"<rect x="{:.1}" y="{MARGIN}" width="{:.1}" height="{:.1}" fill="{fill}" opacity="0.5"/>"##,
                x(fault.start.max(start)),
                (x(fault.end.min(end)) - x(fault.start.max(start))).max(1.0),
                plot_height()
            );
        } else {
            let at = x(fault.start.clamp(start, end));
            let _ = writeln!(
                svg,
                r##"<line x1="{at:.1}" y1="{MARGIN}" x2="{at:.1}" y2="{:.1}" stroke="#d62728" stroke-dasharray="4 3"/>"##,
                HEIGHT - MARGIN
            );
        }
    }
    for (index, (outcome, counts)) in per_second.iter().enumerate() {
        let colour = COLOURS[index % COLOURS.len()];
        let points: Vec<String> = counts
            .iter()
            .enumerate()
            .map(|(second, &count)| {
                let at = start + second as u64 * 1_000_000 + 500_000;
                format!("{:.1},{:.1}", x(at.min(end)), y(count as f64))
            })
            .collect();
        let _ = writeln!(
            svg,
            r#"<polyline fill="none" stroke="{colour}" stroke-width="1.5" points="{}"/>"#,
            points.join(" ")
        );
        legend(&mut svg, index, colour, outcome);
    }
    axes(&mut svg, &format!("{top}/s"), &format!("{seconds} s"));
    svg + "</svg>\n"
}

/// p50 and p99 latency of calls by outcome, as bars.
pub(crate) fn latency_by_outcome(report: &Report) -> String {
    let mut latencies: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for (started, ended, outcome) in &report.timeline {
        if outcome != "unfinished" {
            latencies
                .entry(outcome)
                .or_default()
                .push(ended.saturating_sub(*started));
        }
    }
    if latencies.is_empty() {
        return empty("no finished calls");
    }
    let percentile = |sorted: &[u64], p: f64| sorted[((sorted.len() - 1) as f64 * p) as usize];
    let rows: Vec<(&str, u64, u64)> = latencies
        .iter_mut()
        .map(|(outcome, values)| {
            values.sort_unstable();
            (*outcome, percentile(values, 0.5), percentile(values, 0.99))
        })
        .collect();
    let top = rows
        .iter()
        .map(|&(_, _, p99)| p99)
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    let slot = plot_width() / rows.len() as f64;
    let mut svg = open("Latency by outcome: p50 (dark) and p99 (light), ms");
    for (index, (outcome, p50, p99)) in rows.iter().enumerate() {
        let left = MARGIN + index as f64 * slot + slot * 0.15;
        let bar = slot * 0.35;
        for (offset, value, colour) in [(0.0, p50, "#1f77b4"), (bar, p99, "#aec7e8")] {
            let height = *value as f64 / top * plot_height();
            let _ = writeln!(
                svg,
                r#"<rect x="{:.1}" y="{:.1}" width="{bar:.1}" height="{height:.1}" fill="{colour}"/>"#,
                left + offset,
                HEIGHT - MARGIN - height
            );
        }
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="middle">{}</text>"#,
            left + bar,
            HEIGHT - MARGIN + 14.0,
            escape(outcome)
        );
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" font-size="9" text-anchor="middle">{:.1} / {:.1}</text>"#,
            left + bar,
            HEIGHT - MARGIN + 26.0,
            *p50 as f64 / 1_000.0,
            *p99 as f64 / 1_000.0
        );
    }
    axes(&mut svg, &format!("{:.0} ms", top / 1_000.0), "");
    svg + "</svg>\n"
}

fn plot_width() -> f64 {
    WIDTH - 2.0 * MARGIN - 160.0
}

fn plot_height() -> f64 {
    HEIGHT - 2.0 * MARGIN
}

fn open(title: &str) -> String {
    format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{WIDTH}\" height=\"{HEIGHT}\" \
         font-family=\"sans-serif\">\n<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"{MARGIN}\" y=\"24\" font-size=\"14\">{}</text>\n",
        escape(title)
    )
}

fn axes(svg: &mut String, top_label: &str, right_label: &str) {
    let bottom = HEIGHT - MARGIN;
    let right = MARGIN + plot_width();
    let _ = writeln!(
        svg,
        r#"<path d="M{MARGIN},{MARGIN} V{bottom} H{right}" fill="none" stroke="black"/>"#
    );
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" font-size="10" text-anchor="end">{}</text>"#,
        MARGIN - 4.0,
        MARGIN + 4.0,
        escape(top_label)
    );
    let _ = writeln!(
        svg,
        r#"<text x="{right:.1}" y="{:.1}" font-size="10" text-anchor="end">{}</text>"#,
        bottom + 40.0,
        escape(right_label)
    );
}

fn legend(svg: &mut String, index: usize, colour: &str, label: &str) {
    let left = MARGIN + plot_width() + 15.0;
    let top = MARGIN + index as f64 * 16.0;
    let _ = writeln!(
        svg,
        r#"<rect x="{left:.1}" y="{top:.1}" width="10" height="10" fill="{colour}"/><text x="{:.1}" y="{:.1}" font-size="11">{}</text>"#,
        left + 14.0,
        top + 9.0,
        escape(label)
    );
}

fn empty(what: &str) -> String {
    open(what) + "</svg>\n"
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}
