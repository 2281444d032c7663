//! Replays the 2026-10-21 control-plane incident against a simulated fleet,
//! for each policy, and prints one table.
//!
//! ```text
//! cargo run --release --example replay -- [--jobs 300] [--stall-s 25] [--forbidden-share 0.5]
//!     [--forbidden-s 3] [--hang] [--seed 1] [--sweep] [--write]
//! ```
//!
//! `--sweep` also prints, per policy, the longest stall (5-180 s) survived
//! with zero failed steps. `--write` saves the output under bench/results/.

mod sim;

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use k8s_auth_preflight::Jitter;
use sim::{percentile, run, Policy, Report, Scenario};

fn policies() -> Vec<Policy> {
    vec![
        Policy::upstream(),
        Policy::pr64(),
        Policy::pr68(),
        Policy::ours(),
        Policy::ours_with_jitter(Jitter::None),
        Policy::ours_with_jitter(Jitter::Full),
        Policy::ours_with_jitter(Jitter::Decorrelated),
        Policy::ours_without_rules_review(),
    ]
}

fn main() {
    let mut scenario = Scenario::incident();
    let mut sweep = false;
    let mut write = false;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut i = 0;
    while i < args.len() {
        let value = |i: usize| -> &str {
            args.get(i + 1)
                .map(String::as_str)
                .unwrap_or_else(|| die(&format!("{} needs a value", args[i])))
        };
        match args[i].as_str() {
            "--jobs" => scenario.jobs = number(value(i)) as u32,
            "--stall-s" => scenario.stall = Duration::from_secs(number(value(i))),
            "--forbidden-s" => scenario.forbidden_window = Duration::from_secs(number(value(i))),
            "--forbidden-share" => {
                scenario.forbidden_share = value(i)
                    .parse()
                    .unwrap_or_else(|_| die("--forbidden-share takes 0..1"))
            }
            "--seed" => scenario.seed = number(value(i)),
            "--hang" => {
                scenario.stall_hangs = true;
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
    if !(0.0..=1.0).contains(&scenario.forbidden_share)
        || scenario.jobs == 0
        || scenario.jobs > 5000
    {
        die("--forbidden-share takes 0..1 and --jobs 1..5000");
    }

    let started = Instant::now();
    let mut out = String::new();
    let _ = writeln!(
        out,
        "Replay of incident-2026-10-21: {} jobs (prepare + {} script steps + cleanup, every step a fresh hook process), \
         starts spread over {} s; at {} s the apiserver {} for {} s, then answers 403 to {:.0} % of requests for {} s, then is healthy; \
         latency {}-{} ms; seed {}.\n",
        scenario.jobs,
        scenario.script_steps,
        scenario.start_spread.as_secs(),
        scenario.stall_at.as_secs(),
        if scenario.stall_hangs { "hangs every request" } else { "refuses every connection" },
        scenario.stall.as_secs(),
        scenario.forbidden_share * 100.0,
        scenario.forbidden_window.as_secs(),
        scenario.latency.0.as_millis(),
        scenario.latency.1.as_millis(),
        scenario.seed,
    );
    out.push_str(&table(
        &policies()
            .iter()
            .map(|p| run(p, &scenario))
            .collect::<Vec<_>>(),
    ));

    if sweep {
        let _ = writeln!(out, "\nLongest stall survived with zero failed steps (stall 5-180 s in 5 s steps, same fleet):\n");
        let _ = writeln!(
            out,
            "| policy | longest stall with 0 failed steps |\n| --- | ---: |"
        );
        for policy in policies() {
            let mut longest = 0;
            for stall_s in (5..=180).step_by(5) {
                let mut s = scenario.clone();
                s.stall = Duration::from_secs(stall_s);
                if run(&policy, &s).steps_failed == 0 {
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
    let _ = writeln!(
        out,
        "\n(simulated in {:.1} s of wall time; command: cargo run --release --example replay -- {})",
        started.elapsed().as_secs_f64(),
        args.join(" ")
    );
    print!("{out}");
    if write {
        let name = if scenario.stall_hangs {
            "replay-hang.md"
        } else {
            "replay.md"
        };
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("bench/results")
            .join(name);
        std::fs::create_dir_all(path.parent().unwrap_or(&path))
            .unwrap_or_else(|e| die(&e.to_string()));
        std::fs::write(&path, &out).unwrap_or_else(|e| die(&e.to_string()));
        eprintln!("wrote {}", path.display());
    }
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
            r.peak_per_second_after_recovery,
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
