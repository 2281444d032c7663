//! The numbers a line gives its requests ([`RequestNumbers`]).

/// Request numbers, given out from 1: every request a machine sends (an
/// attempt, a hedge, a read-back) gets one of its own, so a report names
/// exactly one request and a late answer is known as stale.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestNumbers {
    last: u32,
}

impl RequestNumbers {
    /// The number of the next request sent.
    pub fn give_out(&mut self) -> u32 {
        self.last += 1;
        self.last
    }

    /// The last number given out: how many requests were sent.
    pub fn last(&self) -> u32 {
        self.last
    }

    /// True when `request` was given out.
    pub fn gave_out(&self, request: u32) -> bool {
        request != 0 && request <= self.last
    }
}

#[cfg(test)]
mod tests {
    #[cfg(target_arch = "wasm32")]
    use wasm_bindgen_test::wasm_bindgen_test as test;

    use super::RequestNumbers;

    #[test]
    fn numbers_start_at_one_and_only_those_given_out_are_known() {
        let mut numbers = RequestNumbers::default();
        assert!(!numbers.gave_out(1));
        assert_eq!((numbers.give_out(), numbers.give_out()), (1, 2));
        assert_eq!(numbers.last(), 2);
        assert!(!numbers.gave_out(0) && numbers.gave_out(2) && !numbers.gave_out(3));
    }
}
