//! The byte scanner under the reader: JSON tokens and numbers, declining what serde might
//! read differently (escapes, exponents, more digits than an `f64` holds exactly).

/// `10^k` for the exponents where both the power and the division are exact in an `f64`.
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

/// A JSON number as the scanner read it: whole, or a decimal `mantissa / 10^scale`.
pub(super) enum Number {
    Whole(u64),
    Decimal { mantissa: u64, scale: usize },
}

/// The run of ASCII digits starting at `from`, read in one pass: where it ends, and its value
/// on top of `acc` with wrapping arithmetic. The value is exact only while the digits read so far
/// (`acc`'s included) number at most 19; callers check the count and use [`accumulate`] past it.
/// A byte loop: most numbers in a frame are one to four digits, where an eight-byte (SWAR) step
/// cost more instructions than it saved (callgrind, `burnin bench ingest`).
fn digits(b: &[u8], from: usize, acc: u64) -> (usize, u64) {
    let (mut i, mut v) = (from, acc);
    while let Some(&c) = b.get(i) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        v = v.wrapping_mul(10).wrapping_add(u64::from(d));
        i += 1;
    }
    (i, v)
}

/// Whether `rest` starts with `key`, compared eight bytes at a time (keys are 4–30 bytes; a
/// `memcmp` call per try cost more than the compare, and a byte loop showed in profiles).
fn same_bytes(key: &[u8], rest: &[u8]) -> bool {
    let (mut key, mut rest) = (key, rest);
    while let (Some(a), Some(b)) = (key.first_chunk::<8>(), rest.first_chunk::<8>()) {
        if a != b {
            return false;
        }
        (key, rest) = (&key[8..], &rest[8..]);
    }
    rest.len() >= key.len() && key.iter().zip(rest).all(|(a, b)| a == b)
}

/// `acc` followed by `digits`, or `None` past `u64`: the checked path for more than 19 digits.
fn accumulate(acc: u64, digits: &[u8]) -> Option<u64> {
    digits.iter().try_fold(acc, |v, d| {
        v.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    })
}

pub(super) struct Scan<'a> {
    text: &'a str,
    bytes: &'a [u8],
    pub(super) pos: usize,
}

impl<'a> Scan<'a> {
    pub(super) fn new(text: &'a str) -> Self {
        Self {
            text,
            bytes: text.as_bytes(),
            pos: 0,
        }
    }

    pub(super) fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    pub(super) fn next(&mut self) -> Option<u8> {
        let b = self.peek()?;
        self.pos += 1;
        Some(b)
    }

    pub(super) fn at_end(&self) -> bool {
        self.pos == self.bytes.len()
    }

    pub(super) fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.pos += 1;
        }
    }

    pub(super) fn eat(&mut self, want: u8) -> Option<()> {
        (self.next()? == want).then_some(())
    }

    pub(super) fn literal(&mut self, word: &[u8]) -> bool {
        if self.peek() == word.first().copied() && self.bytes[self.pos..].starts_with(word) {
            self.pos += word.len();
            true
        } else {
            false
        }
    }

    /// A quoted key that is one of `keys`, trying `keys[from..]` first: the index, or `None`
    /// for any other key (an escape in it included: it matches none).
    pub(super) fn known_key(&mut self, keys: &[&str], from: usize) -> Option<usize> {
        self.eat(b'"')?;
        let rest = &self.bytes[self.pos..];
        let found = (from..keys.len())
            .chain(0..from.min(keys.len()))
            .find(|&k| {
                let key = keys[k].as_bytes();
                rest.len() > key.len() && rest[key.len()] == b'"' && same_bytes(key, rest)
            })?;
        self.pos += keys[found].len() + 1;
        Some(found)
    }

    /// A string without escapes or control characters (both are rare; serde handles them).
    pub(super) fn string(&mut self) -> Option<&'a str> {
        self.eat(b'"')?;
        let start = self.pos;
        loop {
            match self.next()? {
                b'"' => break,
                b'\\' | 0..=0x1f => return None,
                _ => {}
            }
        }
        // The quotes are ASCII, so the slice between them is whole UTF-8 of the input.
        self.text.get(start..self.pos - 1)
    }

    pub(super) fn number(&mut self) -> Option<Number> {
        let b = self.bytes;
        let start = self.pos;
        // Up to 19 digits cannot overflow a u64, which covers every number the agent writes:
        // one pass reads them; longer runs are read again with checks.
        let (int_end, mut mantissa) = digits(b, start, 0);
        let int_len = int_end - start;
        // JSON forbids leading zeros; serde says so, and so must the general path.
        if int_len == 0 || (int_len > 1 && b[start] == b'0') {
            return None;
        }
        if int_len > 19 {
            mantissa = accumulate(0, &b[start..int_end])?;
        }
        match b.get(int_end) {
            Some(b'.') => {}
            Some(b'e' | b'E') => return None,
            _ => {
                self.pos = int_end;
                return Some(Number::Whole(mantissa));
            }
        }
        let (frac_end, fused) = digits(b, int_end + 1, mantissa);
        let scale = frac_end - int_end - 1;
        let mantissa = if int_len + scale <= 19 {
            fused
        } else {
            accumulate(mantissa, &b[int_end + 1..frac_end])?
        };
        // Only where one division by an exact power of ten is correctly rounded (the mantissa
        // fits 53 bits, the power is at most 10^22) is the answer certain to be serde_json's.
        if scale == 0 || scale >= POW10.len() || mantissa >= 1 << 53 {
            return None;
        }
        if matches!(b.get(frac_end), Some(b'e' | b'E')) {
            return None;
        }
        self.pos = frac_end;
        Some(Number::Decimal { mantissa, scale })
    }

    pub(super) fn unsigned(&mut self) -> Option<u64> {
        match self.number()? {
            Number::Whole(v) => Some(v),
            Number::Decimal { .. } => None,
        }
    }

    pub(super) fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.unsigned()?).ok()
    }

    /// A whole number that may be negative (a NUMA node of -1: the adapter has none).
    pub(super) fn i32(&mut self) -> Option<i32> {
        if self.peek()? == b'-' {
            self.pos += 1;
            // serde_json reads "-0" as the float -0.0, which no i32 field takes: decline, and
            // the general path refuses the line as serde does. Anything past i32 declines too.
            match self.unsigned()? {
                0 => None,
                v => i32::try_from(v).ok().map(|v| -v),
            }
        } else {
            i32::try_from(self.unsigned()?).ok()
        }
    }

    pub(super) fn f64(&mut self) -> Option<f64> {
        Some(match self.number()? {
            Number::Whole(v) => v as f64,
            Number::Decimal { mantissa, scale } => mantissa as f64 / POW10[scale],
        })
    }

    /// As serde reads an `f32`: a whole number converts directly, a decimal through `f64`.
    pub(super) fn f32(&mut self) -> Option<f32> {
        Some(match self.number()? {
            Number::Whole(v) => v as f32,
            Number::Decimal { mantissa, scale } => (mantissa as f64 / POW10[scale]) as f32,
        })
    }

    pub(super) fn bool(&mut self) -> Option<bool> {
        if self.literal(b"true") {
            Some(true)
        } else if self.literal(b"false") {
            Some(false)
        } else {
            None
        }
    }

    /// `null` or a value. The outer `Option` is "the scanner understood it".
    pub(super) fn opt<T>(
        &mut self,
        read: impl FnOnce(&mut Self) -> Option<T>,
    ) -> Option<Option<T>> {
        if self.literal(b"null") {
            Some(None)
        } else {
            read(self).map(Some)
        }
    }

    pub(super) fn list<T>(
        &mut self,
        mut read: impl FnMut(&mut Self) -> Option<T>,
    ) -> Option<Vec<T>> {
        self.eat(b'[')?;
        let mut out = Vec::new();
        self.ws();
        if self.peek()? == b']' {
            self.pos += 1;
            return Some(out);
        }
        loop {
            self.ws();
            out.push(read(self)?);
            self.ws();
            match self.next()? {
                b',' => {}
                b']' => return Some(out),
                _ => return None,
            }
        }
    }

    /// An object whose keys `field` reads (and whose values it consumes).
    pub(super) fn object(
        &mut self,
        field: impl FnMut(&mut Self, &'a str) -> Option<()>,
    ) -> Option<()> {
        self.members(Scan::string, field)
    }

    /// An object whose keys are all among `keys`, each at most once, read in any order but
    /// fastest in the order given (the order serde writes a struct's fields): `field` gets the
    /// key's index and consumes the value. Any other key, or one twice, declines.
    pub(super) fn object_known(
        &mut self,
        keys: &[&str],
        field: impl FnMut(&mut Self, usize) -> Option<()>,
    ) -> Option<()> {
        let (mut expect, mut seen) = (0usize, 0u64);
        self.members(
            |s| {
                let key = s.known_key(keys, expect)?;
                if key >= 64 || seen & (1 << key) != 0 {
                    return None;
                }
                seen |= 1 << key;
                expect = key + 1;
                Some(key)
            },
            field,
        )
    }

    /// The members of an object: `key` reads each key, `field` its value.
    pub(super) fn members<K>(
        &mut self,
        mut key: impl FnMut(&mut Self) -> Option<K>,
        mut field: impl FnMut(&mut Self, K) -> Option<()>,
    ) -> Option<()> {
        self.eat(b'{')?;
        let mut first = true;
        loop {
            self.ws();
            if self.peek()? == b'}' {
                self.pos += 1;
                return Some(());
            }
            if !first {
                self.eat(b',')?;
                self.ws();
            }
            first = false;
            let k = key(self)?;
            self.ws();
            self.eat(b':')?;
            self.ws();
            field(self, k)?;
        }
    }
}
