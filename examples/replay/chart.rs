//! The incident as a picture: requests reaching the apiserver per second,
//! and failed steps so far, over time, for the hooks as shipped, the two
//! seed pull requests and this package, with the stall and the 403 window
//! shaded. Drawn with plotters' SVG backend; the file depends only on the
//! scenario and the seed (no date, no wall time), so a re-run with the same
//! flags writes the same bytes.

use std::time::Duration;

use plotters::prelude::*;

use crate::sim::{Report, Scenario};

/// The policies the chart shows (their names in the replay), their legend
/// texts and colours, in drawing order (ours last, on top).
const CHARTED: &[(&str, &str, RGBColor)] = &[
    (
        "upstream",
        "hooks as shipped (13 reviews per step, no retry)",
        RGBColor(214, 39, 40),
    ),
    (
        "pr64",
        "seed #64 (3/6/12 s retries, no cache)",
        RGBColor(255, 127, 14),
    ),
    (
        "pr68",
        "seed #68 (equal jitter, 6 attempts, cache)",
        RGBColor(31, 119, 180),
    ),
    ("ours", "this package (defaults)", RGBColor(44, 160, 44)),
];

const STALL: RGBColor = RGBColor(120, 120, 120);
const FORBIDDEN: RGBColor = RGBColor(230, 170, 40);
const FONT: &str = "sans-serif";

/// Which of `reports` the chart shows: the charted policies present.
pub fn charted(reports: &[Report]) -> Vec<&Report> {
    CHARTED
        .iter()
        .filter_map(|(name, _, _)| reports.iter().find(|r| r.policy == *name))
        .collect()
}

/// The chart of `reports` in `scenario`, as SVG text.
pub fn svg(scenario: &Scenario, reports: &[&Report]) -> Result<String, String> {
    let mut out = String::new();
    draw(&mut out, scenario, reports).map_err(|e| format!("chart: {e}"))?;
    Ok(out)
}

fn secs(d: Duration) -> f64 {
    d.as_secs_f64()
}

fn draw(
    out: &mut String,
    scenario: &Scenario,
    reports: &[&Report],
) -> Result<(), Box<dyn std::error::Error>> {
    let stall_from = secs(scenario.stall_at);
    let stall_to = stall_from + secs(scenario.stall);
    let forbidden_to = stall_to + secs(scenario.forbidden_window);
    // A minute before the stall to two minutes after the 403 window.
    let x_from = (stall_from - 60.0).max(0.0);
    let x_to = forbidden_to + 120.0;
    let peak = reports
        .iter()
        .flat_map(|r| r.served_by_second.iter().copied())
        .max()
        .unwrap_or(1)
        .max(1) as f64;
    // Log scale, so a dozen requests a second and several hundred are both
    // readable; a second with no request sits on the floor, labelled 0.
    let floor = 0.5;
    let y_top = 10f64.powf(peak.log10().ceil()).max(10.0) * 1.5;
    let failed_max = reports
        .iter()
        .map(|r| r.failed_at_ms.len())
        .max()
        .unwrap_or(0);
    let failed_top = ((failed_max as f64 * 1.15) / 50.0).ceil().max(1.0) * 50.0;

    let stall_kind = if scenario.stall_hang_share >= 1.0 {
        "every request hangs"
    } else if scenario.stall_hang_share > 0.0 {
        "a share of requests hang"
    } else {
        "connections refused"
    };
    let stall_text = format!("stall: {stall_kind} ({} s)", scenario.stall.as_secs_f64());
    let forbidden_text = format!(
        "403 to {:.0} % of requests ({} s)",
        scenario.forbidden_share * 100.0,
        scenario.forbidden_window.as_secs_f64()
    );

    let root = SVGBackend::with_string(out, (1000, 780)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(
        &format!(
            "Replay of the 2026-10-21 incident: {} jobs, every step a fresh hook process (seed {})",
            scenario.jobs, scenario.seed
        ),
        (FONT, 20),
    )?;
    let (top, rest) = root.split_vertically(400);
    let (bottom, legend) = rest.split_vertically(240);

    let mut load = ChartBuilder::on(&top)
        .margin(12)
        .margin_right(24)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(x_from..x_to, (floor..y_top).log_scale())?;
    load.configure_mesh()
        .disable_x_mesh()
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_desc("requests reaching the apiserver per second (log scale)")
        .y_label_formatter(&|v| {
            if *v < 1.0 {
                "0".to_string()
            } else {
                format!("{v:.0}")
            }
        })
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .draw()?;
    // The floor's "0", next to the axis labels (the log scale has no tick
    // there).
    let (_, rows) = load.plotting_area().get_pixel_range();
    let (left, _) = load.plotting_area().get_base_pixel();
    let base = top.get_base_pixel();
    top.draw(&Text::new(
        "0",
        (left - base.0 - 18, rows.end - base.1 - 9),
        (FONT, 14).into_font().color(&BLACK),
    ))?;
    load.draw_series(std::iter::once(Rectangle::new(
        [(stall_from, floor), (stall_to, y_top)],
        STALL.mix(0.18).filled(),
    )))?;
    load.draw_series(std::iter::once(Rectangle::new(
        [(stall_to, floor), (forbidden_to, y_top)],
        FORBIDDEN.mix(0.35).filled(),
    )))?;
    // The legend has a strip of its own under both charts (inside either
    // one it covered the recovery peak): policies on the left, the shaded
    // windows on the right.
    let row = |n: usize| 14 + 22 * n as i32;
    let text_style = (FONT, 14).into_font().color(&BLACK);
    let mut legend_rows = 0;
    for report in reports {
        let Some((_, text, colour)) = CHARTED.iter().find(|(n, _, _)| *n == report.policy) else {
            continue;
        };
        let colour = *colour;
        let width = if report.policy == "ours" { 3 } else { 2 };
        let points = (x_from as usize..=x_to as usize).map(|s| {
            let n = report.served_by_second.get(s).copied().unwrap_or(0) as f64;
            (s as f64, n.max(floor))
        });
        load.draw_series(LineSeries::new(points, colour.stroke_width(width)))?;
        let y = row(legend_rows);
        legend.draw(&PathElement::new(
            vec![(80, y), (110, y)],
            colour.stroke_width(width),
        ))?;
        legend.draw(&Text::new(
            format!(
                "{text}: {} of {} steps failed",
                report.steps_failed, report.steps
            ),
            (118, y - 8),
            text_style.clone(),
        ))?;
        legend_rows += 1;
    }
    for (n, (text, colour)) in [
        (stall_text, STALL.mix(0.35)),
        (forbidden_text, FORBIDDEN.mix(0.5)),
    ]
    .into_iter()
    .enumerate()
    {
        let y = row(n);
        legend.draw(&Rectangle::new(
            [(640, y - 7), (670, y + 7)],
            colour.filled(),
        ))?;
        legend.draw(&Text::new(text, (678, y - 8), text_style.clone()))?;
    }

    let mut failed = ChartBuilder::on(&bottom)
        .margin(12)
        .margin_right(24)
        .x_label_area_size(36)
        .y_label_area_size(64)
        .build_cartesian_2d(x_from..x_to, 0f64..failed_top)?;
    failed
        .configure_mesh()
        .disable_x_mesh()
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_labels(8)
        .light_line_style(WHITE)
        .y_label_formatter(&|y| format!("{y:.0}"))
        .x_desc("time since the first job started (s)")
        .y_desc("failed steps so far")
        .label_style((FONT, 14))
        .axis_desc_style((FONT, 15))
        .draw()?;
    failed.draw_series(std::iter::once(Rectangle::new(
        [(stall_from, 0.0), (stall_to, failed_top)],
        STALL.mix(0.18).filled(),
    )))?;
    failed.draw_series(std::iter::once(Rectangle::new(
        [(stall_to, 0.0), (forbidden_to, failed_top)],
        FORBIDDEN.mix(0.35).filled(),
    )))?;
    for report in reports {
        let Some((_, _, colour)) = CHARTED.iter().find(|(n, _, _)| *n == report.policy) else {
            continue;
        };
        let width = if report.policy == "ours" { 3 } else { 2 };
        let mut times: Vec<f64> = report
            .failed_at_ms
            .iter()
            .map(|&ms| ms as f64 / 1000.0)
            .collect();
        times.sort_by(f64::total_cmp);
        // A staircase: one step up at each failure.
        let before = times.iter().take_while(|&&t| t < x_from).count();
        let mut points = vec![(x_from, before as f64)];
        let mut n = before;
        for &t in times.iter().filter(|&&t| t >= x_from && t <= x_to) {
            points.push((t, n as f64));
            n += 1;
            points.push((t, n as f64));
        }
        points.push((x_to, n as f64));
        failed.draw_series(LineSeries::new(points, colour.stroke_width(width)))?;
    }
    root.present()?;
    Ok(())
}
