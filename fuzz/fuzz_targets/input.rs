//! Turns fuzzer bytes into structured inputs, deterministically.

pub struct Input<'a> {
    data: &'a [u8],
}

#[allow(dead_code)]
impl<'a> Input<'a> {
    pub fn new(data: &'a [u8]) -> Self {
        Input { data }
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    pub fn u8(&mut self) -> u8 {
        match self.data.split_first() {
            Some((b, rest)) => {
                self.data = rest;
                *b
            }
            None => 0,
        }
    }

    pub fn bool(&mut self) -> bool {
        self.u8() & 1 == 1
    }

    pub fn u16(&mut self) -> u16 {
        u16::from(self.u8()) << 8 | u16::from(self.u8())
    }

    pub fn u64(&mut self) -> u64 {
        (0..8).fold(0u64, |acc, _| acc << 8 | u64::from(self.u8()))
    }

    /// A short string: from a small vocabulary (so the fuzzer reaches the
    /// interesting names fast) or raw bytes.
    pub fn string(&mut self, vocabulary: &[&str]) -> String {
        let tag = self.u8();
        if !vocabulary.is_empty() && tag < 200 {
            return vocabulary[usize::from(tag) % vocabulary.len()].to_string();
        }
        let len = usize::from(self.u8() % 24).min(self.data.len());
        let (head, rest) = self.data.split_at(len);
        self.data = rest;
        String::from_utf8_lossy(head).into_owned()
    }

    pub fn strings(&mut self, vocabulary: &[&str], max: u8) -> Vec<String> {
        let n = self.u8() % (max + 1);
        (0..n).map(|_| self.string(vocabulary)).collect()
    }
}
