//! The cache record decoder and verifier: any bytes, any time, never a
//! panic; a usable answer only for a record signed with our key.
#![no_main]

use k8s_auth_preflight::cache::{self, CacheKey, CachePolicy, CacheState};
use k8s_auth_preflight::Identity;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let identity = Identity::from_credential(b"fuzz-token").expect("identity");
    let key = CacheKey { namespace: "ci".into(), identity, permissions: "perms".into() };
    let now = u64::from_le_bytes(data.get(..8).and_then(|b| b.try_into().ok()).unwrap_or([0; 8]));
    let state = cache::judge(Some(data), &key, &CachePolicy::default(), now);
    if let CacheState::Fresh { .. } | CacheState::Grace { .. } = state {
        // Only a record we wrote can be usable: re-signing its time must
        // give back exactly these bytes.
        let text = std::str::from_utf8(data).expect("usable records are UTF-8");
        let written = text
            .split("\"writtenAtMs\":")
            .nth(1)
            .and_then(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse::<u64>().ok())
            .expect("usable records carry a time");
        assert_eq!(cache::record_for(&key, written), text, "accepted a record we did not write");
    }
});
