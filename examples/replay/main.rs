//! Replays the 2026-10-21 control-plane incident against a simulated fleet,
//! for each policy, and prints one table.
//!
//! ```text
//! cargo run --release --example replay -- [--jobs 300] [--stall-s 25] [--forbidden-share 0.5]
//!     [--forbidden-s 3] [--hang | --hang-share 0.33 [--hang-rest answered|refused] [--hang-random]]
//!     [--slow-s 0 --slow-latency-ms 200-2000] [--seed 1] [--seeds 1]
//!     [--sweep] [--variants] [--write] [--chart FILE]
//!     [--script-steps 10] [--start-spread-s 180] [--stall-at-s 120] [--step-work-s 5-40]
//!     [--latency-ms 5-20] [--scale 1] [--policies ours,pr68] [--plan plan.json]
//! ```
//!
//! `--sweep` also prints, per policy, the longest stall (5-180 s) survived
//! with zero failed steps. `--write` saves the output under bench/results/
//! (replay.md, replay-hang.md, replay-hang-share.md, or
//! replay-variants.md), keeping whatever follows the line
//! `<!-- written by hand below; --write keeps it -->` in the old file.
//!
//! The stall refuses every connection, or with `--hang` hangs every request;
//! `--hang-share F` sends a share F of the requests (dealt round-robin) to a
//! stale backend that hangs them and has the rest answered (`--hang-rest
//! refused`: refused); dealt round-robin (IPVS), or with `--hang-random`
//! drawn per request (iptables). `--slow-s` makes answers take `--slow-latency-ms`
//! for that long after the stall (an assumption for a cold apiserver or APF
//! queueing, not a measurement). `--seeds N` pools the runs of seeds
//! `seed..seed+N` into each row (counts summed, times pooled; the peak
//! column shows the mean of the per-seed peaks and the highest).
//! `--variants` runs this package's variants (hedging, retry quota)
//! through the refused, the hung, the one-in-three hung stalls, and a
//! refused stall followed by 10 s of slow answers (0.2-2 s), each table with
//! the other flags as given.
//!
//! `--chart FILE` draws the run as an SVG chart (requests reaching the
//! apiserver per second, and failed steps so far, over time) for the hooks
//! as shipped, both seed pull requests and this package's defaults, with the
//! stall and the 403 window shaded; `--write` also writes it beside the
//! table (replay.svg, ...). Not with `--variants` or `--seeds`.
//!
//! For compressed runs (bench/chaos.js): every `-s` flag also comes as `-ms`
//! (`--stall-ms 2500`); `--scale 0.1` multiplies every policy's base delay,
//! max delay, request timeout and deadline; `--policies` keeps only the named
//! policies (keys: see `--policies help`); `--plan` takes the fleet's start
//! times and step gaps from a JSON file instead of drawing them:
//! `{"startupMs": 120, "exitMs": 30, "jobs": [{"startMs": 0, "gapsMs": [..],
//! "startupsMs": [..], "exitsMs": [..]}, ..]}` (`script_steps + 1` gaps per
//! job; start-up and exit time are what each hook process adds before and
//! after its check, per step when given, else the plan-wide value).

mod chart;
mod sim;

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use k8s_auth_preflight::preflight::retry_quota::SUGGESTED_TOKENS;
use k8s_auth_preflight::Jitter;
use sim::{healthy_p95, percentile, run_planned, JobPlan, Plan, Policy, Report, Scenario};

/// Every policy; the hedge delay of `ours+hedge` is the healthy p95 of the
/// scenario's latency.
fn policies(scenario: &Scenario) -> Vec<Policy> {
    vec![
        Policy::upstream(),
        Policy::pr64(),
        Policy::pr68(),
        Policy::ours(),
        Policy::ours_with_jitter(Jitter::None),
        Policy::ours_with_jitter(Jitter::Full),
        Policy::ours_with_jitter(Jitter::Decorrelated),
        Policy::ours_without_rules_review(),
        Policy::ours_with_hedge(healthy_p95(scenario.latency), "ours+hedge"),
        Policy::ours_with_hedge(Duration::from_secs(1), "ours+hedge, 1 s"),
        Policy::ours_with_quota(SUGGESTED_TOKENS),
        Policy::ours_with_quota_without_rules_review(SUGGESTED_TOKENS),
    ]
}

/// Where a results file's hand-written part begins; `--write` keeps it.
const KEPT_MARK: &str = "<!-- written by hand below; --write keeps it -->";

/// The policies `--variants` compares (keys).
const VARIANTS: &[&str] = &[
    "ours",
    "ours+hedge",
    "ours+hedge-1-s",
    "ours+quota",
    "ours-no-rules-review",
    "ours+quota-no-rules-review",
];

/// A policy's name for `--policies`: "ours, full jitter" -> "ours-full-jitter".
fn key(policy: &Policy) -> String {
    policy
        .name
        .split([',', ' '])
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("-")
}

/// The policy with its backoff base, max delay, request timeout and deadline
/// multiplied by `scale` (rounded to whole ms, as the shim's settings are).
fn scaled(mut policy: Policy, scale: f64) -> Policy {
    let by = |d: Duration| Duration::from_millis((d.as_millis() as f64 * scale).round() as u64);
    let s = &mut policy.settings;
    s.backoff.base = by(s.backoff.base);
    s.backoff.max_delay = by(s.backoff.max_delay);
    s.backoff.deadline = by(s.backoff.deadline);
    s.request_timeout = by(s.request_timeout);
    policy
}

fn main() {
    let mut scenario = Scenario::incident();
    let mut sweep = false;
    let mut variants = false;
    let mut seeds = 1u64;
    let mut write = false;
    let mut scale = 1.0f64;
    let mut only: Option<Vec<String>> = None;
    let mut plan_file: Option<String> = None;
    let mut chart_file: Option<String> = None;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = |i: usize| -> &str {
            args.get(i + 1)
                .map(String::as_str)
                .unwrap_or_else(|| die(&format!("{} needs a value", args[i])))
        };
        let flag = args[i].as_str();
        // Durations: --NAME-s in whole seconds, --NAME-ms in ms.
        let duration = |i: usize| -> Duration {
            let n = number(value(i));
            if flag.ends_with("-ms") {
                Duration::from_millis(n)
            } else {
                Duration::from_secs(n)
            }
        };
        let range = |i: usize| -> (Duration, Duration) {
            let (a, b) = value(i)
                .split_once('-')
                .unwrap_or_else(|| die(&format!("{flag} takes LOW-HIGH")));
            let unit = |n: u64| {
                if flag.ends_with("-ms") {
                    Duration::from_millis(n)
                } else {
                    Duration::from_secs(n)
                }
            };
            let (a, b) = (unit(number(a)), unit(number(b)));
            if a > b {
                die(&format!("{flag}: LOW is above HIGH"));
            }
            (a, b)
        };
        match flag {
            "--jobs" => scenario.jobs = number(value(i)) as u32,
            "--stall-s" | "--stall-ms" => scenario.stall = duration(i),
            "--forbidden-s" | "--forbidden-ms" => scenario.forbidden_window = duration(i),
            "--stall-at-s" | "--stall-at-ms" => scenario.stall_at = duration(i),
            "--start-spread-s" | "--start-spread-ms" => scenario.start_spread = duration(i),
            "--step-work-s" | "--step-work-ms" => scenario.step_work = range(i),
            "--latency-ms" => scenario.latency = range(i),
            "--slow-s" | "--slow-ms" => scenario.slow_window = duration(i),
            "--slow-latency-ms" => scenario.slow_latency = range(i),
            "--seeds" => {
                seeds = number(value(i));
                if !(1..=100).contains(&seeds) {
                    die("--seeds takes 1..100");
                }
            }
            "--script-steps" => scenario.script_steps = number(value(i)) as u32,
            "--forbidden-share" => {
                scenario.forbidden_share = value(i)
                    .parse()
                    .unwrap_or_else(|_| die("--forbidden-share takes 0..1"))
            }
            "--scale" => {
                scale = value(i)
                    .parse()
                    .ok()
                    .filter(|x: &f64| *x > 0.0 && *x <= 10.0)
                    .unwrap_or_else(|| die("--scale takes a number in (0, 10]"))
            }
            "--hang-share" => {
                scenario.stall_hang_share = value(i)
                    .parse()
                    .ok()
                    .filter(|x: &f64| (0.0..=1.0).contains(x))
                    .unwrap_or_else(|| die("--hang-share takes 0..1"));
                scenario.stall_rest_answered = true;
            }
            "--hang-rest" => {
                scenario.stall_rest_answered = match value(i) {
                    "answered" => true,
                    "refused" => false,
                    _ => die("--hang-rest takes answered or refused"),
                }
            }
            "--policies" => {
                if value(i) == "help" {
                    let keys: Vec<String> = policies(&scenario).iter().map(key).collect();
                    println!("{}", keys.join("\n"));
                    return;
                }
                only = Some(value(i).split(',').map(str::to_string).collect());
            }
            "--plan" => plan_file = Some(value(i).to_string()),
            "--chart" => chart_file = Some(value(i).to_string()),
            "--seed" => scenario.seed = number(value(i)),
            "--hang" => {
                scenario.stall_hang_share = 1.0;
                i += 1;
                continue;
            }
            "--variants" => {
                variants = true;
                i += 1;
                continue;
            }
            "--hang-random" => {
                scenario.stall_hang_random = true;
                i += 1;
                continue;
            }
            "--sweep" => {
                sweep = true;
                i += 1;
                continue;
            }
            "--write" => {
                write = true;
                i += 1;
                continue;
            }
            other => die(&format!("unknown argument {other}")),
        }
        i += 2;
    }
    let plan = plan_file.as_deref().map(|file| {
        let plan = read_plan(file);
        scenario.jobs = plan.jobs.len() as u32;
        if let Some(bad) = plan
            .jobs
            .iter()
            .position(|j| j.gaps.len() != scenario.script_steps as usize + 1)
        {
            die(&format!(
                "{file}: job {bad} has {} gaps; --script-steps {} needs {}",
                plan.jobs[bad].gaps.len(),
                scenario.script_steps,
                scenario.script_steps + 1
            ));
        }
        plan
    });
    if !(0.0..=1.0).contains(&scenario.forbidden_share)
        || scenario.jobs == 0
        || scenario.jobs > 5000
        || scenario.script_steps > 100
    {
        die("--forbidden-share takes 0..1, --jobs 1..5000 and --script-steps 0..100");
    }
    if chart_file.is_some() && (variants || seeds > 1) {
        die("--chart draws one scenario and one seed: not with --variants or --seeds");
    }
    if variants && only.is_none() {
        only = Some(VARIANTS.iter().map(|k| k.to_string()).collect());
    }
    let policies: Vec<Policy> = {
        let all = policies(&scenario);
        if let Some(wanted) = &only {
            for w in wanted {
                if !all.iter().any(|p| &key(p) == w) {
                    die(&format!("unknown policy {w}; try --policies help"));
                }
            }
        }
        all.into_iter()
            .filter(|p| only.as_ref().is_none_or(|w| w.contains(&key(p))))
            .map(|p| if scale == 1.0 { p } else { scaled(p, scale) })
            .collect()
    };

    let started = Instant::now();
    let mut out = String::new();
    let starts = match (&plan, &plan_file) {
        (Some(plan), Some(file)) => format!(
            "starts and step gaps from {file} (hook processes start {} ms before their check and end {} ms after it{})",
            plan.startup.as_millis(),
            plan.exit.as_millis(),
            if plan.jobs.iter().any(|j| !j.startups.is_empty() || !j.exits.is_empty()) {
                ", unless the plan gives a step its own"
            } else {
                ""
            }
        ),
        _ => format!("starts spread over {}", span(scenario.start_spread)),
    };
    let scenarios: Vec<Scenario> = if variants {
        let shape = |share: f64, answered: bool| {
            let mut s = scenario.clone();
            s.stall_hang_share = share;
            s.stall_rest_answered = answered;
            s
        };
        let mut random = shape(1.0 / 3.0, true);
        random.stall_hang_random = true;
        let mut slow = shape(0.0, false);
        slow.slow_window = Duration::from_secs(10);
        slow.slow_latency = (Duration::from_millis(200), Duration::from_millis(2000));
        vec![
            shape(0.0, false),
            shape(1.0, false),
            shape(1.0 / 3.0, true),
            random,
            shape(1.0 / 3.0, false),
            slow,
        ]
    } else {
        vec![scenario.clone()]
    };
    let mut chart_svg: Option<String> = None;
    for (n, scenario) in scenarios.iter().enumerate() {
        if n > 0 {
            out.push('\n');
        }
        let (text, reports) = section(
            scenario,
            &policies,
            plan.as_ref(),
            &starts,
            scale,
            sweep,
            seeds,
        );
        out.push_str(&text);
        if (chart_file.is_some() || write) && !variants && seeds == 1 {
            let shown = chart::charted(&reports);
            if shown.is_empty() {
                if chart_file.is_some() {
                    die("--chart needs at least one of upstream, pr64, pr68, ours in --policies");
                }
            } else {
                chart_svg = Some(chart::svg(scenario, &shown).unwrap_or_else(|e| die(&e)));
            }
        }
    }
    let today = date_utc();
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    let _ = writeln!(
        out,
        "\n(simulated in {:.1} s of wall time on {cores} cores, {today}; command: cargo run --release --example replay -- {})",
        started.elapsed().as_secs_f64(),
        args.join(" ")
    );
    print!("{out}");
    if let (Some(file), Some(svg)) = (&chart_file, &chart_svg) {
        write_file(std::path::Path::new(file), svg);
        println!("chart: {file}");
    }
    if write {
        let name = if variants {
            "replay-variants.md"
        } else if scenario.stall_hang_share >= 1.0 {
            "replay-hang.md"
        } else if scenario.stall_hang_share > 0.0 {
            "replay-hang-share.md"
        } else {
            "replay.md"
        };
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("bench/results")
            .join(name);
        std::fs::create_dir_all(path.parent().unwrap_or(&path))
            .unwrap_or_else(|e| die(&e.to_string()));
        // A hand-written section after the tables (what was decided from
        // them) survives a re-run.
        let kept = std::fs::read_to_string(&path)
            .ok()
            .and_then(|old| old.find(KEPT_MARK).map(|at| old[at..].to_string()));
        if let Some(kept) = kept {
            out.push('\n');
            out.push_str(&kept);
        }
        std::fs::write(&path, &out).unwrap_or_else(|e| die(&e.to_string()));
        eprintln!("wrote {}", path.display());
        if let Some(svg) = &chart_svg {
            let path = path.with_extension("svg");
            write_file(&path, svg);
            eprintln!("wrote {}", path.display());
        }
    }
}

/// Writes `text` to `path`, creating its folder; dies with the reason.
fn write_file(path: &std::path::Path, text: &str) {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| die(&format!("{}: {e}", dir.display())));
    }
    std::fs::write(path, text).unwrap_or_else(|e| die(&format!("{}: {e}", path.display())));
}

/// One scenario: what it is, the table, the checks that asked the API, the
/// variants' settings, and (with `sweep`) the longest stall survived.
fn section(
    scenario: &Scenario,
    policies: &[Policy],
    plan: Option<&Plan>,
    starts: &str,
    scale: f64,
    sweep: bool,
    seeds: u64,
) -> (String, Vec<Report>) {
    let run = |policy: &Policy, scenario: &Scenario| {
        let mut pooled: Option<Report> = None;
        for n in 0..seeds {
            let mut s = scenario.clone();
            s.seed = scenario.seed + n;
            let r = run_planned(policy, &s, plan);
            match &mut pooled {
                Some(p) => p.pool(r),
                None => pooled = Some(r),
            }
        }
        pooled.unwrap_or_default()
    };
    let mut out = String::new();
    let share = scenario.stall_hang_share;
    let stall = if share >= 1.0 {
        "hangs every request".to_string()
    } else if share > 0.0 {
        format!(
            "sends {:.0} % of requests ({}) to a stale backend that hangs them and {} the rest",
            share * 100.0,
            if scenario.stall_hang_random {
                "each at random"
            } else {
                "dealt round-robin"
            },
            if scenario.stall_rest_answered {
                "answers"
            } else {
                "refuses"
            }
        )
    } else if scenario.stall_rest_answered {
        "answers every request".to_string()
    } else {
        "refuses every connection".to_string()
    };
    let _ = writeln!(
        out,
        "Replay of incident-2026-10-21: {} jobs (prepare + {} script steps + cleanup, every step a fresh hook process), \
         {}; at {} the apiserver {} for {}, then answers 403 to {:.0} % of requests for {}, then is healthy; \
         latency {}-{} ms{}; {}{}.\n",
        scenario.jobs,
        scenario.script_steps,
        starts,
        span(scenario.stall_at),
        stall,
        span(scenario.stall),
        scenario.forbidden_share * 100.0,
        span(scenario.forbidden_window),
        scenario.latency.0.as_millis(),
        scenario.latency.1.as_millis(),
        if scenario.slow_window.is_zero() {
            String::new()
        } else {
            format!(
                ", {}-{} ms for {} after the stall",
                scenario.slow_latency.0.as_millis(),
                scenario.slow_latency.1.as_millis(),
                span(scenario.slow_window)
            )
        },
        if seeds == 1 {
            format!("seed {}", scenario.seed)
        } else {
            format!(
                "seeds {}-{} pooled (counts summed, times pooled; peak: mean of the per-seed peaks, and the highest)",
                scenario.seed,
                scenario.seed + seeds - 1
            )
        },
        if scale == 1.0 {
            String::new()
        } else {
            format!("; every policy's base delay, max delay, request timeout and deadline scaled by {scale}")
        },
    );
    let reports: Vec<Report> = policies.iter().map(|p| run(p, scenario)).collect();
    out.push_str(&table(&reports));
    let _ = writeln!(
        out,
        "\nThe checks that asked the API (the others were answered by the job's cache):\n"
    );
    out.push_str(&asking_table(&reports));
    // What each variant's settings are; policies with the same settings
    // share one note.
    let mut notes: Vec<(String, Vec<&str>)> = Vec::new();
    for p in policies {
        let s = &p.settings;
        let text = match (s.hedge_after, s.retry_quota) {
            (Some(after), _) => format!(
                "a hedge after {} ms{}",
                after.as_millis(),
                if after == healthy_p95(scenario.latency) {
                    " (the healthy p95: about 5 % of healthy requests are still unanswered then)"
                } else {
                    ""
                }
            ),
            (None, Some(tokens)) => format!(
                "a retry quota of {tokens} tokens per check (a retry takes 5, after a timeout 10; an answer gives 1 back, a retry's answer what it took)"
            ),
            (None, None) => continue,
        };
        match notes.iter_mut().find(|(t, _)| *t == text) {
            Some((_, names)) => names.push(&p.name),
            None => notes.push((text, vec![&p.name])),
        }
    }
    let notes: Vec<String> = notes
        .into_iter()
        .map(|(text, names)| format!("{}: {text}", names.join(" and ")))
        .collect();
    if !notes.is_empty() {
        let _ = writeln!(out, "\n{}.", notes.join("; "));
    }

    if sweep {
        let _ = writeln!(
            out,
            "\nLongest stall survived with zero failed steps (stall 5-180 s in 5 s steps, same fleet{}):\n",
            if seeds == 1 { "" } else { ", in every seed" }
        );
        let _ = writeln!(
            out,
            "| policy | longest stall with 0 failed steps |\n| --- | ---: |"
        );
        for policy in policies {
            let mut longest = 0;
            for stall_s in (5..=180).step_by(5) {
                let mut s = scenario.clone();
                s.stall = Duration::from_secs(stall_s);
                if run(policy, &s).steps_failed == 0 {
                    longest = stall_s;
                } else {
                    break;
                }
            }
            let shown = if longest == 0 {
                "< 5 s".to_string()
            } else {
                format!("{longest} s")
            };
            let _ = writeln!(out, "| {} | {} |", policy.name, shown);
        }
    }
    (out, reports)
}

/// The checks that sent at least one request: how many, how many hedges,
/// and how long they took.
fn asking_table(reports: &[Report]) -> String {
    let mut out = String::from(
        "| policy | checks that asked the API | hedged requests | their time to verdict p50 / p99 / max | of them over 5 s |\n\
         | --- | ---: | ---: | ---: | ---: |\n",
    );
    for r in reports {
        let t = &r.asking_check_ms;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} / {} / {} | {} |",
            r.policy,
            t.len(),
            r.hedges,
            secs(percentile(t, 50.0)),
            secs(percentile(t, 99.0)),
            secs(t.iter().copied().max().unwrap_or(0)),
            t.iter().filter(|&&ms| ms > 5_000).count(),
        );
    }
    out
}

/// Today's date (UTC) from the system clock, as YYYY-MM-DD.
fn date_utc() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    format!("{y:04}-{m:02}-{d:02}")
}

/// The Gregorian date of a count of days since 1970-01-01: whole years
/// off, then whole months.
fn civil_from_days(mut days: i64) -> (i64, u32, u32) {
    let leap = |y: i64| (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let mut year = 1970;
    loop {
        let length = if leap(year) { 366 } else { 365 };
        if days < length {
            break;
        }
        days -= length;
        year += 1;
    }
    let months = [
        31,
        if leap(year) { 29 } else { 28 },
        31,
        30,
        31,
        30,
        31,
        31,
        30,
        31,
        30,
        31,
    ];
    let mut month = 1;
    for length in months {
        if days < length {
            break;
        }
        days -= length;
        month += 1;
    }
    (year, month, days as u32 + 1)
}

/// The comparison table, one row per report.
pub fn table(reports: &[Report]) -> String {
    let mut out = String::from(
        "| policy | steps failed | false \"missing permission\" | review requests sent | reached apiserver | requests/job | peak req/s after recovery | recovery->verdict p50 / p99 | check time p99 / max |\n\
         | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n",
    );
    for r in reports {
        let _ = writeln!(
            out,
            "| {} | {} of {} | {} | {} | {} | {:.1} | {} | {} | {} / {} |",
            r.policy,
            r.steps_failed,
            r.steps,
            r.false_rbac_reports,
            r.requests_sent,
            r.requests_served,
            r.requests_per_job(),
            peak(r),
            if r.recovery_to_verdict_ms.is_empty() {
                "-".to_string()
            } else {
                format!(
                    "{} / {}",
                    secs(percentile(&r.recovery_to_verdict_ms, 50.0)),
                    secs(percentile(&r.recovery_to_verdict_ms, 99.0))
                )
            },
            secs(percentile(&r.check_ms, 99.0)),
            secs(r.check_ms.iter().copied().max().unwrap_or(0)),
        );
    }
    out
}

/// The peak column: the peak, or for pooled seeds the mean of the per-seed
/// peaks and the highest.
fn peak(r: &Report) -> String {
    if r.peaks.len() <= 1 {
        return r.peak_per_second_after_recovery.to_string();
    }
    let mean = r.peaks.iter().sum::<u64>() as f64 / r.peaks.len() as f64;
    format!("{mean:.1} (max {})", r.peak_per_second_after_recovery)
}

/// A duration for the header: "25 s", "2.5 s", "0.3 s".
fn span(d: Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// Reads a `--plan` file (see the module docs).
fn read_plan(file: &str) -> Plan {
    let text = std::fs::read_to_string(file).unwrap_or_else(|e| die(&format!("{file}: {e}")));
    let value: serde_json::Value =
        serde_json::from_str(&text).unwrap_or_else(|e| die(&format!("{file}: {e}")));
    let millis = |v: &serde_json::Value, what: &str| -> Duration {
        Duration::from_millis(
            v.as_u64()
                .unwrap_or_else(|| die(&format!("{file}: {what} must be a whole number of ms"))),
        )
    };
    let optional_list = |v: &serde_json::Value, what: &str| -> Vec<Duration> {
        match v {
            serde_json::Value::Null => Vec::new(),
            serde_json::Value::Array(list) => list.iter().map(|x| millis(x, what)).collect(),
            _ => die(&format!("{file}: {what} must be a list of ms")),
        }
    };
    let jobs = value["jobs"]
        .as_array()
        .unwrap_or_else(|| die(&format!("{file}: no \"jobs\" array")));
    if jobs.is_empty() || jobs.len() > 5000 {
        die(&format!("{file}: 1..5000 jobs, not {}", jobs.len()));
    }
    Plan {
        startup: millis(&value["startupMs"], "startupMs"),
        exit: millis(&value["exitMs"], "exitMs"),
        jobs: jobs
            .iter()
            .map(|job| JobPlan {
                start: millis(&job["startMs"], "startMs"),
                gaps: job["gapsMs"]
                    .as_array()
                    .unwrap_or_else(|| die(&format!("{file}: a job without \"gapsMs\"")))
                    .iter()
                    .map(|g| millis(g, "gapsMs"))
                    .collect(),
                startups: optional_list(&job["startupsMs"], "startupsMs"),
                exits: optional_list(&job["exitsMs"], "exitsMs"),
            })
            .collect(),
    }
}

fn secs(ms: u64) -> String {
    format!("{:.1} s", ms as f64 / 1000.0)
}

fn number(s: &str) -> u64 {
    s.parse()
        .unwrap_or_else(|_| die(&format!("not a whole number: {s}")))
}

fn die(message: &str) -> ! {
    eprintln!("replay: {message}");
    std::process::exit(2)
}
