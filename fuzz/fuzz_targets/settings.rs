//! Settings from arbitrary environments: never a panic, every error names
//! its variable, and values stay within the documented ranges.
#![no_main]

mod input;

use input::Input;
use k8s_auth_preflight::config::VARIABLES;
use k8s_auth_preflight::Settings;
use libfuzzer_sys::fuzz_target;

const VALUES: &[&str] = &["", "0", "1", "-5", "1.5", "1e3", "NaN", "inf", "on", "off", "equal", "99999999999999999999", "+7", " 9 "];

fuzz_target!(|data: &[u8]| {
    let mut input = Input::new(data);
    let mut names: Vec<String> = VARIABLES.iter().map(|v| v.name.to_string()).collect();
    names.push("ACTIONS_RUNNER_PREFLIGHT_TYPO".into());
    let pairs: Vec<(String, String)> = (0..input.u8() % 8)
        .map(|_| {
            let name = names[usize::from(input.u8()) % names.len()].clone();
            (name, input.string(VALUES))
        })
        .collect();
    let (settings, errors) = Settings::from_env(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    for e in &errors {
        assert!(e.to_string().starts_with(&e.variable));
        assert!(pairs.iter().any(|(k, _)| *k == e.variable));
    }
    let b = settings.backoff;
    assert!((1..=100).contains(&b.max_attempts));
    assert!((1.0..=10.0).contains(&b.factor));
    assert!(b.deadline.as_millis() >= 1000 && b.deadline.as_millis() <= 3_600_000);
    assert!(settings.cache.grace >= settings.cache.ttl);
});
