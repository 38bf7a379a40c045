//! Which NIC and which NUMA node sit nearest each GPU, from `nvidia-smi topo -m`. The header
//! row may be wrapped in ANSI underline escapes and cells are TAB-separated with empty cells on
//! some drivers (or spaces after a copy-paste), so rows are split on whitespace: the matrix
//! cells first (one per GPU/NIC column of the header), then the affinity columns that header
//! names, in its order. `NIC Legend:` lines map `NIC0` to `mlx5_0`. Pure: no I/O here.

pub use crate::model::topology::{GpuPlace, Link, Topology};

fn strip_ansi(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

/// Parse the output of `nvidia-smi topo -m`. Returns `None` when there is no GPU matrix at all.
pub fn parse_topo_matrix(text: &str) -> Option<Topology> {
    let lines: Vec<String> = text.lines().map(strip_ansi).collect();
    // The header starts with the empty corner cell, so with whitespace; rows start with a label.
    let header_pos = lines.iter().position(|l| {
        l.starts_with(char::is_whitespace) && l.split_whitespace().next() == Some("GPU0")
    })?;
    let header = &lines[header_pos];
    let columns: Vec<String> = header
        .split_whitespace()
        .take_while(|t| t.starts_with("GPU") || t.starts_with("NIC"))
        .filter(|t| t[3..].chars().all(|c| c.is_ascii_digit()) && t.len() > 3)
        .map(String::from)
        .collect();
    // The affinity columns the header names, in the order it names them.
    let mut extras: Vec<(usize, &str)> = ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]
        .iter()
        .filter_map(|name| header.find(name).map(|pos| (pos, *name)))
        .collect();
    extras.sort();
    let extras: Vec<&str> = extras.into_iter().map(|(_, n)| n).collect();

    // NIC Legend: "  NIC0: mlx5_0".
    let legend: Vec<(String, String)> = lines
        .iter()
        .filter_map(|l| {
            let (k, v) = l.trim().split_once(':')?;
            (k.starts_with("NIC") && k[3..].chars().all(|c| c.is_ascii_digit()) && k.len() > 3)
                .then(|| (k.to_string(), v.trim().to_string()))
        })
        .collect();
    let nic_name = |col: &str| {
        legend
            .iter()
            .find(|(k, _)| k == col)
            .map_or_else(|| col.to_string(), |(_, v)| v.clone())
    };
    let nics: Vec<String> = columns
        .iter()
        .filter(|c| c.starts_with("NIC"))
        .map(|c| nic_name(c))
        .collect();

    let mut gpus = Vec::new();
    for line in &lines[header_pos + 1..] {
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let Some(label) = tokens.first() else {
            if !gpus.is_empty() {
                break;
            }
            continue;
        };
        if !label.starts_with("GPU") {
            if label.starts_with("NIC") {
                continue;
            }
            if gpus.is_empty() {
                continue;
            }
            break;
        }
        let Ok(index) = label[3..].parse::<u32>() else {
            continue;
        };
        let cells: Vec<Option<Link>> = tokens
            .iter()
            .skip(1)
            .take(columns.len())
            .map(|c| Link::parse(c))
            .collect();
        let rest = affinity_cells(line, &tokens, columns.len(), &extras);
        let extra = |name: &str| {
            extras
                .iter()
                .position(|e| *e == name)
                .and_then(|i| rest.get(i).cloned().flatten())
                .filter(|v| v != "N/A")
        };
        let mut best: Option<Link> = None;
        let mut nearest = Vec::new();
        for (col, cell) in columns.iter().zip(&cells) {
            let (true, Some(link)) = (col.starts_with("NIC"), cell) else {
                continue;
            };
            match &best {
                Some(b) if link > b => {}
                Some(b) if link == b => nearest.push(nic_name(col)),
                _ => {
                    best = Some(link.clone());
                    nearest = vec![nic_name(col)];
                }
            }
        }
        gpus.push(GpuPlace {
            index,
            cpu_affinity: extra("CPU Affinity"),
            numa_node: extra("NUMA Affinity").and_then(|v| v.parse().ok()),
            nearest_nics: nearest,
            nic_link: best,
        });
    }
    (!gpus.is_empty()).then_some(Topology { gpus, nics })
}

/// The affinity cells of a GPU row, one per affinity column of the header (in its order);
/// `None` where the cell is empty or cannot be told.
///
/// nvidia-smi separates cells with TABs, leaves CPU Affinity empty where it does not know it
/// (a cpuset that holds none of the GPU's CPUs: a container, a Slurm step) and pads NUMA
/// Affinity with a second TAB before GPU NUMA ID (`0-47\t0\t\tN/A`, `\t1\t\tN/A`). With
/// TABs each cell is read from its own column. A copy whose TABs became spaces cannot show an
/// empty cell: when it has fewer cells than columns, which one is missing is not known, and
/// none is read rather than a value shifted into the wrong column.
fn affinity_cells(
    line: &str,
    tokens: &[&str],
    matrix: usize,
    extras: &[&str],
) -> Vec<Option<String>> {
    let cell = |v: &str| Some(v.trim()).filter(|v| !v.is_empty()).map(String::from);
    if line.contains('\t') {
        let cells: Vec<&str> = line.split('\t').skip(1 + matrix).collect();
        return extras
            .iter()
            .enumerate()
            .map(|(i, name)| match *name {
                // After the NUMA cell's padding: the last cell the row has.
                "GPU NUMA ID" if i > 0 => cells
                    .iter()
                    .skip(i)
                    .rev()
                    .find(|c| !c.trim().is_empty())
                    .and_then(|c| cell(c)),
                _ => cells.get(i).and_then(|c| cell(c)),
            })
            .collect();
    }
    let rest: Vec<&str> = tokens.iter().skip(1 + matrix).copied().collect();
    if rest.len() < extras.len() {
        return vec![None; extras.len()];
    }
    rest.iter().map(|c| cell(c)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn fixture(name: &str) -> String {
        crate::parsers::fixtures::tool_output(&format!("nvidia-smi/{name}"))
    }

    #[test]
    fn one_h200_with_escape_codes_and_empty_cells() {
        let t = parse_topo_matrix(&fixture("topo-m-h200-1gpu-ansi.txt")).expect("topology");
        assert_eq!(t.gpus.len(), 1);
        assert_eq!(t.gpus[0].cpu_affinity.as_deref(), Some("0-15"));
        assert_eq!(t.gpus[0].numa_node, Some(0));
        assert!(t.gpus[0].nearest_nics.is_empty());
        let h100 = parse_topo_matrix(&fixture("topo-m-h100-1gpu-ansi.txt")).expect("topology");
        assert_eq!(h100.gpus[0].cpu_affinity.as_deref(), Some("0-19"));
    }

    #[test]
    fn four_h100_each_with_its_own_nic() {
        let t =
            parse_topo_matrix(&fixture("topo-m-4xh100-nv6-4nic-partial.txt")).expect("topology");
        assert_eq!(t.gpus.len(), 4);
        assert_eq!(t.nics, ["NIC0", "NIC1", "NIC2", "NIC3"]);
        assert_eq!(t.gpus[2].nearest_nics, ["NIC2"]);
        assert_eq!(t.gpus[2].nic_link, Some(Link::Pix));
        assert_eq!(t.gpus[2].numa_node, Some(7));
        assert_eq!(t.gpus[0].cpu_affinity.as_deref(), Some("6,14,22,30"));
    }

    #[test]
    fn eight_gpus_nine_nics_without_gpu_numa_id() {
        let t = parse_topo_matrix(&fixture("topo-m-8gpu-nv8-9nic-no-gpu-numa-id-partial.txt"))
            .expect("topology");
        assert!(t.gpus.len() >= 7);
        assert_eq!(t.nics.len(), 9);
        assert_eq!(t.gpus[0].nearest_nics, ["NIC2"]);
        assert_eq!(t.gpus[4].nearest_nics, ["NIC1"]);
        assert_eq!(t.gpus[4].numa_node, Some(1));
        assert_eq!(t.gpus[4].cpu_affinity.as_deref(), Some("48-95,144-191"));
    }

    #[test]
    fn mangled_paste_with_nic_legend() {
        let t = parse_topo_matrix(&fixture("topo-m-h800-8gpu-4nic-mangled.txt")).expect("topology");
        assert_eq!(t.gpus.len(), 8);
        // The pasted header has no NIC columns, so no GPU gets a nearest NIC from the matrix.
        assert!(t.gpus.iter().all(|g| g.nearest_nics.is_empty()));
        assert_eq!(t.gpus[7].numa_node, Some(1));
    }

    #[test]
    fn legend_names_nics() {
        let text = "\tGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\n\
                    GPU0\t X \tNV18\tPIX\tSYS\t0-31\t0\n\
                    GPU1\tNV18\t X \tSYS\tPXB\t32-63\t1\n\
                    NIC0\tPIX\tSYS\t X \tSYS\n\
                    NIC1\tSYS\tPXB\tSYS\t X \n\nNIC Legend:\n\n  NIC0: mlx5_0\n  NIC1: mlx5_3\n";
        let t = parse_topo_matrix(text).expect("topology");
        assert_eq!(t.nics, ["mlx5_0", "mlx5_3"]);
        assert_eq!(t.gpus[1].nearest_nics, ["mlx5_3"]);
        assert_eq!(t.gpus[1].nic_link, Some(Link::Pxb));
    }

    #[test]
    fn no_matrix_is_none() {
        assert_eq!(
            parse_topo_matrix("NVIDIA-SMI has failed because it couldn't communicate"),
            None
        );
        assert_eq!(parse_topo_matrix(""), None);
    }

    proptest! {
        #[test]
        fn garbage_never_panics(text in "(?s).{0,400}") {
            let _ = parse_topo_matrix(&text);
            let _ = parse_topo_matrix(&format!("\tGPU0\tNIC0\n{text}"));
        }
    }
}
