//! Mutations: what is done to a seed to make a case.

use super::*;

/// Hostile tokens put into inputs (the long ones are made once, see [`tokens`]).
pub(crate) const HOSTILE: &[&str] = &[
    "\x1b]0;T\x07",
    "\x1b[2J",
    "\x1b[31m",
    "\0",
    "\u{202e}",
    "\u{2066}",
    "\u{feff}",
    "\u{fffd}",
    "\u{85}",
    "\x07",
    "\r",
    "\n",
    "\r\n",
    "\t",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "+Inf",
    "1e308",
    "-1e308",
    "1e999",
    "1e-400",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775809",
    "4294967295",
    "4294967296",
    "-1",
    "-0",
    "0",
    "0x",
    "0xffffffffffffffffffff",
    "$(touch /tmp/x)",
    "`",
    "'",
    "\"",
    "\\",
    "../",
    "../../../../etc/passwd",
    "{",
    "}",
    "[",
    "]",
    ",",
    ":",
    "=",
    "#",
    "null",
    "[]",
    "{}",
    "N/A",
    "[N/A]",
    "gpu[0-99999]",
    "0: ",
    "[1,4294967295]<stdout>:",
    "[rank99999999]:",
];

/// Every hostile token: [`HOSTILE`], then very long digit strings and a 1 MB line.
pub(crate) fn tokens() -> &'static [Vec<u8>] {
    static T: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    T.get_or_init(|| {
        let mut v: Vec<Vec<u8>> = HOSTILE.iter().map(|t| t.as_bytes().to_vec()).collect();
        v.push("9".repeat(400).into_bytes());
        v.push(format!("0.{}1", "0".repeat(5000)).into_bytes());
        v.push("1".repeat(70_000).into_bytes());
        v.push(format!("\"{}\"", "x".repeat(70_000)).into_bytes());
        let mut line = vec![b'x'; 1_000_000];
        line.push(b'\n');
        v.push(line);
        v
    })
}

/// One change to an input. Positions are [`Index`]es into whatever the input is by then, so
/// every list of changes applies to every input (and shrinks).
#[derive(Debug, Clone)]
pub(crate) enum Op {
    /// Flip one bit.
    Flip(Index, u8),
    /// Put a hostile token in.
    Insert(Index, Index),
    /// Put random bytes in.
    Bytes(Index, Vec<u8>),
    /// Remove a span.
    Delete(Index, u16),
    /// Repeat a span.
    Repeat(Index, u16, u8),
    /// Keep the input up to a place, then another seed of the family from a place on.
    Splice(Index, Index, Index),
    /// Cut the input there.
    Truncate(Index),
    /// Replace the n-th number by a hostile token.
    Number(Index, Index),
    /// Repeat a line many times.
    RepeatLine(Index, u16),
    /// Drop a line.
    DropLine(Index),
    /// Swap two lines.
    SwapLines(Index, Index),
    /// Take a leading `#` (and a space) off a line: commented-out config comes alive.
    Uncomment(Index),
}

/// Any change, weighted towards the ones that keep the input's shape.
pub(crate) fn op() -> impl Strategy<Value = Op> {
    let i = || any::<Index>();
    prop_oneof![
        3 => (i(), any::<u8>()).prop_map(|(a, b)| Op::Flip(a, b % 8)),
        4 => (i(), i()).prop_map(|(a, t)| Op::Insert(a, t)),
        1 => (i(), proptest::collection::vec(any::<u8>(), 1..16)).prop_map(|(a, b)| Op::Bytes(a, b)),
        2 => (i(), 1..512u16).prop_map(|(a, n)| Op::Delete(a, n)),
        1 => (i(), 1..256u16, 1..32u8).prop_map(|(a, n, k)| Op::Repeat(a, n, k)),
        1 => (i(), i(), i()).prop_map(|(a, s, b)| Op::Splice(a, s, b)),
        1 => i().prop_map(Op::Truncate),
        4 => (i(), i()).prop_map(|(n, t)| Op::Number(n, t)),
        1 => (i(), 1..2000u16).prop_map(|(l, k)| Op::RepeatLine(l, k)),
        1 => i().prop_map(Op::DropLine),
        1 => (i(), i()).prop_map(|(a, b)| Op::SwapLines(a, b)),
        1 => i().prop_map(Op::Uncomment),
    ]
}

/// Byte ranges of the lines of `b` (each with its newline).
pub(crate) fn line_spans(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        if c == b'\n' {
            out.push((start, i + 1));
            start = i + 1;
        }
    }
    if start < b.len() {
        out.push((start, b.len()));
    }
    out
}

/// Byte ranges of the numbers of `b` (digits, with a sign, point and exponent around them).
pub(crate) fn number_spans(b: &[u8]) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i].is_ascii_digit() {
            let mut s = i;
            if s > 0 && (b[s - 1] == b'-' || b[s - 1] == b'+') {
                s -= 1;
            }
            let mut e = i;
            while e < b.len()
                && (b[e].is_ascii_digit()
                    || b[e] == b'.'
                    || ((b[e] == b'e' || b[e] == b'E')
                        && e + 1 < b.len()
                        && (b[e + 1].is_ascii_digit() || b[e + 1] == b'-' || b[e + 1] == b'+'))
                    || ((b[e] == b'-' || b[e] == b'+') && (b[e - 1] == b'e' || b[e - 1] == b'E')))
            {
                e += 1;
            }
            out.push((s, e));
            i = e;
        } else {
            i += 1;
        }
    }
    out
}

/// Largest input a mutation makes: past this, changes that grow it are skipped (the 1 MB line
/// still fits; a case stays cheap).
pub(crate) const MAX_INPUT: usize = 4 << 20;

/// `ops` applied to `seed`, taking splice partners from `pool`.
pub(crate) fn mutate(seed: &[u8], pool: &[&[u8]], ops: &[Op]) -> Vec<u8> {
    let mut b = seed.to_vec();
    for op in ops {
        let at = |i: &Index, b: &Vec<u8>| i.index(b.len() + 1);
        match op {
            Op::Flip(i, bit) => {
                if !b.is_empty() {
                    let p = i.index(b.len());
                    b[p] ^= 1 << bit;
                }
            }
            Op::Insert(i, t) => {
                let tok = &tokens()[t.index(tokens().len())];
                if b.len() + tok.len() <= MAX_INPUT {
                    let p = at(i, &b);
                    b.splice(p..p, tok.iter().copied());
                }
            }
            Op::Bytes(i, bytes) => {
                let p = at(i, &b);
                b.splice(p..p, bytes.iter().copied());
            }
            Op::Delete(i, n) => {
                let p = at(i, &b);
                let e = (p + *n as usize).min(b.len());
                b.drain(p..e);
            }
            Op::Repeat(i, n, k) => {
                let p = at(i, &b);
                let e = (p + *n as usize).min(b.len());
                let span = b[p..e].to_vec();
                if b.len() + span.len() * *k as usize <= MAX_INPUT {
                    for _ in 0..*k {
                        b.splice(e..e, span.iter().copied());
                    }
                }
            }
            Op::Splice(i, s, j) => {
                let other = pool[s.index(pool.len())];
                let p = at(i, &b);
                let q = j.index(other.len() + 1);
                b.truncate(p);
                b.extend_from_slice(&other[q..]);
            }
            Op::Truncate(i) => {
                let p = at(i, &b);
                b.truncate(p);
            }
            Op::Number(n, t) => {
                let spans = number_spans(&b);
                if !spans.is_empty() {
                    let (s, e) = spans[n.index(spans.len())];
                    let tok = &tokens()[t.index(tokens().len())];
                    if b.len() + tok.len() <= MAX_INPUT {
                        b.splice(s..e, tok.iter().copied());
                    }
                }
            }
            Op::RepeatLine(l, k) => {
                let lines = line_spans(&b);
                if !lines.is_empty() {
                    let (s, e) = lines[l.index(lines.len())];
                    let mut line = b[s..e].to_vec();
                    if !line.ends_with(b"\n") {
                        line.push(b'\n');
                    }
                    let k = (*k as usize).min(MAX_INPUT.saturating_sub(b.len()) / line.len());
                    let more: Vec<u8> = line.iter().copied().cycle().take(line.len() * k).collect();
                    b.splice(s..s, more);
                }
            }
            Op::DropLine(l) => {
                let lines = line_spans(&b);
                if !lines.is_empty() {
                    let (s, e) = lines[l.index(lines.len())];
                    b.drain(s..e);
                }
            }
            Op::SwapLines(x, y) => {
                let lines = line_spans(&b);
                if lines.len() > 1 {
                    let (mut p, mut q) = (x.index(lines.len()), y.index(lines.len()));
                    if p > q {
                        std::mem::swap(&mut p, &mut q);
                    }
                    if p != q {
                        let (a, c) = (lines[p], lines[q]);
                        let mut out = b[..a.0].to_vec();
                        out.extend_from_slice(&b[c.0..c.1]);
                        if !b[c.0..c.1].ends_with(b"\n") {
                            out.push(b'\n');
                        }
                        out.extend_from_slice(&b[a.1..c.0]);
                        out.extend_from_slice(&b[a.0..a.1]);
                        out.extend_from_slice(&b[c.1..]);
                        b = out;
                    }
                }
            }
            Op::Uncomment(l) => {
                let lines = line_spans(&b);
                let commented: Vec<(usize, usize)> = lines
                    .into_iter()
                    .filter(|(s, e)| b[*s..*e].trim_ascii_start().starts_with(b"#"))
                    .collect();
                if !commented.is_empty() {
                    let (s, e) = commented[l.index(commented.len())];
                    let hash = s + b[s..e].iter().position(|&c| c == b'#').unwrap_or(0);
                    let end = if b.get(hash + 1) == Some(&b' ') {
                        hash + 2
                    } else {
                        hash + 1
                    };
                    b.drain(hash..end);
                }
            }
        }
    }
    b
}

/// One mutated input: a seed of a family and the changes made to it.
#[derive(Clone)]
pub(crate) struct Case {
    pub(crate) family: Family,
    pub(crate) seed: usize,
    pub(crate) ops: Vec<Op>,
}

impl Case {
    /// The seed it starts from.
    pub(crate) fn seed(&self) -> &'static Seed {
        &self.family.seeds()[self.seed]
    }

    /// The mutated bytes.
    pub(crate) fn bytes(&self) -> Vec<u8> {
        let pool: Vec<&[u8]> = self
            .family
            .seeds()
            .iter()
            .map(|s| s.bytes.as_slice())
            .collect();
        mutate(&self.seed().bytes, &pool, &self.ops)
    }

    /// The mutated input as text, as every reader of a stream or file takes it (invalid UTF-8
    /// replaced).
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes()).into_owned()
    }
}

/// Up to `max` bytes of `b` for a failure message, escaped, a run of one character longer
/// than 16 written once with its length (`⟨'0' × 5000⟩`), with how many bytes were left out.
pub(crate) fn preview(b: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(b);
    let mut out = String::new();
    let mut used = 0;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if used >= max {
            break;
        }
        let mut run = 1;
        while chars.peek() == Some(&c) {
            chars.next();
            run += 1;
        }
        used += run * c.len_utf8();
        if run > 16 {
            out.push_str(&format!("⟨{c:?} × {run}⟩"));
        } else {
            for _ in 0..run {
                out.extend(c.escape_debug());
            }
        }
    }
    let mut s = format!("\"{out}\"");
    if used < text.len() {
        s.push_str(&format!(" … and {} bytes more", text.len() - used));
    }
    s
}

impl fmt::Debug for Case {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Case {{ seed: {:?}, ops: {:?}, input ({} bytes): {} }}",
            self.seed().name,
            self.ops,
            self.bytes().len(),
            preview(&self.bytes(), 2000)
        )
    }
}

/// Most changes made to one input.
pub(crate) const MAX_OPS: usize = 8;

/// A seed of `family` and up to [`MAX_OPS`] changes to it.
pub(crate) fn case(family: Family) -> impl Strategy<Value = Case> {
    let n = family.seeds().len();
    (0..n, proptest::collection::vec(op(), 0..=MAX_OPS)).prop_map(move |(seed, ops)| Case {
        family,
        seed,
        ops,
    })
}
