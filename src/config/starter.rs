//! The starter inventory `burnin init` writes, and how to tell that a site still runs it.

use super::inventory::{Inventory, STARTER};

/// When the inventory's nodes are still the starter's example hosts (`gpu[01-12]`, as
/// `burnin init` wrote them), the words that say so: a look where nothing answers must not
/// leave the engineer chasing twelve unreachable hosts that were never theirs.
pub fn example_hosts_note(inventory: &Inventory) -> Option<String> {
    let starter = Inventory::parse("<starter>", STARTER).ok()?;
    let same = inventory.nodes.len() == starter.nodes.len()
        && inventory
            .nodes
            .iter()
            .zip(&starter.nodes)
            .all(|(a, b)| a.target == b.target && a.name == b.name);
    same.then(|| {
        format!(
            "{} still lists burnin init's example hosts ({} … {}): put your own nodes in its [[node]] entries",
            inventory.file,
            starter.nodes.first().map_or("", |n| n.name.as_str()),
            starter.nodes.last().map_or("", |n| n.name.as_str()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_starters_example_hosts_are_named_as_such_and_a_site_is_not() {
        let starter = Inventory::parse("burnin.toml", STARTER).expect("starter");
        let note = example_hosts_note(&starter).unwrap_or_default();
        assert!(note.contains("example hosts (gpu01 … gpu12)"), "{note}");
        let site = Inventory::parse(
            "burnin.toml",
            &STARTER.replace("host = \"gpu[01-12]\"", "host = \"dgx[01-12]\""),
        )
        .expect("site");
        assert_eq!(example_hosts_note(&site), None);
    }
}
