//! Node names as a screen can hold them: the part that tells nodes apart. A site names its
//! hosts `dgx-b300-rack12-n01.cluster.local`; cut to a grid column every one of them reads
//! `dgx-b3…`. What every node's name shares at its start and its end says nothing about which
//! node it is, so it is dropped (and said once, in the pane's title); what is left is kept.

/// Characters that end a word of a host name; a shared part is dropped only up to one of
/// these, so `gpu01`/`gpu02` stay whole rather than becoming `1`/`2`.
const SEPARATORS: [char; 5] = ['-', '.', '_', '@', ':'];

/// The names as shown, in the same order, and what was dropped from all of them
/// (`dgx-b300-rack12-…`, or empty when nothing was).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ShortNames {
    /// One per name given, in order.
    pub shown: Vec<String>,
    /// The shared start and end, with `…` where the distinct part was; empty when nothing
    /// was dropped.
    pub shared: String,
}

/// The part of each name that differs from the others. A shared start is dropped up to and
/// including its last separator; a shared end from its first separator on. Fewer than two
/// names, or names that would become empty or alike, stay whole.
pub fn distinguishing(names: &[&str]) -> ShortNames {
    let whole = || ShortNames {
        shown: names.iter().map(|n| n.to_string()).collect(),
        shared: String::new(),
    };
    if names.len() < 2 {
        return whole();
    }
    let prefix = word_prefix(names);
    let rests: Vec<&str> = names.iter().map(|n| &n[prefix.len()..]).collect();
    let suffix = word_suffix(&rests);
    let shown: Vec<String> = rests
        .iter()
        .map(|r| r[..r.len() - suffix.len()].to_string())
        .collect();
    let unique = {
        let mut seen = std::collections::HashSet::new();
        shown.iter().all(|s| seen.insert(s.as_str()))
    };
    if shown.iter().any(String::is_empty) || !unique {
        return whole();
    }
    let shared = if prefix.is_empty() && suffix.is_empty() {
        String::new()
    } else {
        format!("{prefix}…{suffix}")
    };
    ShortNames { shown, shared }
}

/// The longest start all names share that ends just after a separator.
fn word_prefix<'a>(names: &[&'a str]) -> &'a str {
    let first = names[0];
    let mut common = first.len();
    for n in &names[1..] {
        common = first
            .char_indices()
            .zip(n.chars())
            .take_while(|((_, a), b)| a == b)
            .map(|((i, a), _)| i + a.len_utf8())
            .last()
            .unwrap_or(0)
            .min(common);
    }
    let shared = &first[..common];
    match shared.rfind(SEPARATORS) {
        Some(at) => &shared[..at + 1],
        None => "",
    }
}

/// The longest end all names share that starts at a separator.
fn word_suffix<'a>(names: &[&'a str]) -> &'a str {
    let first = names[0];
    let common = names[1..]
        .iter()
        .map(|n| {
            first
                .chars()
                .rev()
                .zip(n.chars().rev())
                .take_while(|(a, b)| a == b)
                .map(|(a, _)| a.len_utf8())
                .sum::<usize>()
        })
        .min()
        .unwrap_or(0);
    let shared = &first[first.len() - common..];
    match shared.find(SEPARATORS) {
        Some(at) => &shared[at..],
        None => "",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn short(names: &[&str]) -> (Vec<String>, String) {
        let s = distinguishing(names);
        (s.shown, s.shared)
    }

    #[test]
    fn a_rack_of_long_names_keeps_what_differs() {
        let (shown, shared) = short(&[
            "dgx-b300-rack12-n01",
            "dgx-b300-rack12-n02",
            "dgx-b300-rack12-n03",
        ]);
        assert_eq!(shown, ["n01", "n02", "n03"]);
        assert_eq!(shared, "dgx-b300-rack12-…");
    }

    #[test]
    fn domains_and_logins_shared_by_all_are_dropped() {
        let (shown, shared) = short(&[
            "root@gpu01.cluster.local",
            "root@gpu02.cluster.local",
            "root@gpu10.cluster.local",
        ]);
        assert_eq!(shown, ["gpu01", "gpu02", "gpu10"]);
        assert_eq!(shared, "root@….cluster.local");
    }

    #[test]
    fn two_racks_keep_the_rack() {
        // Both are n01 of their rack: the rack is what differs.
        let (shown, shared) = short(&["dgx-b300-rack12-n01", "dgx-b300-rack13-n01"]);
        assert_eq!(shown, ["rack12", "rack13"]);
        assert_eq!(shared, "dgx-b300-…-n01");
        let (shown, _) = short(&[
            "dgx-b300-rack12-n01",
            "dgx-b300-rack12-n02",
            "dgx-b300-rack13-n01",
        ]);
        assert_eq!(shown, ["rack12-n01", "rack12-n02", "rack13-n01"]);
    }

    #[test]
    fn names_without_a_shared_word_stay_whole() {
        let names = ["gpu01", "gpu02", "gpu12"];
        assert_eq!(
            short(&names),
            (names.map(String::from).to_vec(), String::new())
        );
        assert_eq!(short(&["node01"]).0, ["node01"]);
        assert_eq!(short(&["a-x", "b-y"]).0, ["a-x", "b-y"]);
    }

    #[test]
    fn a_name_that_would_vanish_keeps_every_name_whole() {
        // "a-" is the shared start of both: dropping it leaves nothing of the first.
        assert_eq!(short(&["a-", "a-b"]).0, ["a-", "a-b"]);
        assert_eq!(short(&["x-1-y", "x-1-y"]).0, ["x-1-y", "x-1-y"]);
    }

    #[test]
    fn multibyte_names_cut_on_characters() {
        let (shown, _) = short(&["knoten-ä1", "knoten-ö2"]);
        assert_eq!(shown, ["ä1", "ö2"]);
    }

    proptest::proptest! {
        #[test]
        fn any_names_come_back_distinct_and_inside_their_name(
            names in proptest::collection::vec("[a-c.@-]{0,8}", 0..6)
        ) {
            let mut names = names;
            names.sort();
            names.dedup();
            let refs: Vec<&str> = names.iter().map(String::as_str).collect();
            let s = distinguishing(&refs);
            proptest::prop_assert_eq!(s.shown.len(), names.len());
            for (short, name) in s.shown.iter().zip(&names) {
                proptest::prop_assert!(name.contains(short.as_str()));
            }
            let mut seen = std::collections::HashSet::new();
            for short in &s.shown {
                proptest::prop_assert!(seen.insert(short));
            }
        }
    }
}
