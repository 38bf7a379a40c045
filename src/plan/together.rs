//! `together` phases: earlier phases run at the same time, each compared with its run alone.

use std::sync::Arc;
use std::time::Duration;

use super::gate_checks::check_gate_figure;
use super::load::PhaseFile;
use super::{Gate, Launcher, PhaseSpec, Scope};
use crate::config::ConfigError;
use crate::model::figures::{figure_names, known_figure};
use crate::parsers::ParserKind;

/// A phase of earlier phases run at the same time: no command, scope or parser of its own;
/// it needs its members (they give the "alone" figures) and is judged by `together` gates
/// (and `no-xid`).
pub(super) fn together_phase(
    file: &str,
    text: &str,
    id: String,
    p: &PhaseFile,
    earlier: &[Arc<PhaseSpec>],
) -> Result<PhaseSpec, ConfigError> {
    let at = |span: std::ops::Range<usize>, m: String| ConfigError::at(file, text, Some(span), m);
    for (given, what) in [
        (p.command.as_ref().map(|c| c.span()), "command"),
        (p.server.as_ref().map(|c| c.span()), "server"),
        (p.scope.as_ref().map(|c| c.span()), "scope"),
    ] {
        if let Some(span) = given {
            return Err(at(
                span,
                format!("{id}: a `together` phase runs its members' commands; it has no `{what}`"),
            ));
        }
    }
    if p.parser.is_some() {
        return Err(at(
            p.id.span(),
            format!("{id}: a `together` phase reads with its members' parsers; it has no `parser`"),
        ));
    }
    if let Some(d) = &p.drill {
        return Err(at(
            d.span(),
            format!("{id}: a drill runs around one phase's load, not a `together` phase"),
        ));
    }
    if let Some(r) = p.requires.first() {
        return Err(at(
            r.span(),
            format!("{id}: `requires` belongs to the members of a `together` phase"),
        ));
    }
    let mut members: Vec<String> = Vec::new();
    for m in &p.together {
        let name = m.get_ref().trim().to_string();
        match earlier.iter().find(|q| q.id == name) {
            None => {
                return Err(at(
                    m.span(),
                    format!("{id}: together with {name:?}, which is not an earlier phase"),
                ));
            }
            Some(q) if q.scope == Scope::Together => {
                return Err(at(
                    m.span(),
                    format!("{id}: {name} is itself a `together` phase"),
                ));
            }
            Some(_) if members.contains(&name) => {
                return Err(at(m.span(), format!("{id}: {name} is listed twice")));
            }
            Some(_) => members.push(name),
        }
    }
    if members.len() < 2 {
        return Err(at(
            p.id.span(),
            format!("{id}: `together` names at least two phases"),
        ));
    }
    for gate in &p.gates {
        check_gate_figure(file, text, gate)?;
        if !matches!(gate.get_ref(), Gate::Together { .. } | Gate::NoXid) {
            return Err(at(
                gate.span(),
                format!(
                    "{id}: a `together` phase is judged by `together` and `no-xid` gates (its members' own gates that read no figure apply to them as well)"
                ),
            ));
        }
    }
    for c in &p.compare {
        if !known_figure(c.get_ref()) {
            return Err(at(
                c.span(),
                format!(
                    "unknown figure {:?}; known: {}",
                    c.get_ref(),
                    figure_names()
                ),
            ));
        }
    }
    let gates: Vec<Gate> = p.gates.iter().map(|g| g.get_ref().clone()).collect();
    let gate = p.gate.clone().unwrap_or_else(|| {
        if gates.is_empty() {
            format!(
                "{} each pass beside the others (figures compared, not gated)",
                members.join(", ")
            )
        } else {
            gates
                .iter()
                .map(Gate::describe)
                .collect::<Vec<_>>()
                .join("; ")
        }
    });
    if let Some(t) = &p.timeout {
        return Err(at(
            t.span(),
            format!("{id}: each member of a `together` phase keeps its own `timeout`"),
        ));
    }
    // What the console shows: the slowest member's limit.
    let timeout = earlier
        .iter()
        .filter(|q| members.contains(&q.id))
        .map(|q| q.timeout)
        .max()
        .unwrap_or(Duration::from_secs(3600));
    let mut needs: Vec<String> = p.needs.iter().map(|n| n.get_ref().clone()).collect();
    for m in &members {
        if !needs.contains(m) {
            needs.push(m.clone());
        }
    }
    Ok(PhaseSpec {
        id,
        title: p.title.clone(),
        scope: Scope::Together,
        proves: p.proves.clone(),
        gate,
        command: String::new(),
        server: String::new(),
        parser: ParserKind::None,
        timeout,
        needs,
        requires: Vec::new(),
        gates,
        together: members,
        compare: p.compare.iter().map(|c| c.get_ref().clone()).collect(),
        drill: None,
        launcher: Launcher::Ssh,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::{Plan, default_plan, lower_is_better};

    #[test]
    fn together_phases_name_earlier_phases_and_are_judged_by_together_gates() {
        let c1 = default_plan().find("C1").expect("C1 in the shipped plan");
        assert_eq!(c1.scope, Scope::Together);
        assert_eq!(c1.together, ["T7", "S2"]);
        assert!(c1.command.is_empty());
        assert!(c1.needs.contains(&"T7".to_string()) && c1.needs.contains(&"S2".to_string()));
        // The slowest member's limit is what the console shows.
        assert_eq!(c1.timeout, Duration::from_secs(30 * 60));
        assert!(
            c1.gate
                .contains("busbw_all_reduce at most 10 % worse together than alone")
        );

        let base = "[[phase]]\nid = \"A\"\ntitle = \"a\"\nscope = \"each-node\"\nparser = \"none\"\ncommand = \"x\"\n[[phase]]\nid = \"B\"\ntitle = \"b\"\nscope = \"each-node\"\nparser = \"none\"\ncommand = \"y\"\n[[phase]]\nid = \"G\"\ntitle = \"g\"\n";
        let ok = Plan::parse("p.toml", &format!("{base}together = [\"A\", \"B\"]\ngates = [{{ kind = \"together\", figure = \"step_time_ms\", worse_pct = 5 }}]\n")).expect("parses");
        let g = ok.find("G").expect("G");
        assert_eq!(
            (g.scope, g.together.len(), g.needs.len()),
            (Scope::Together, 2, 2)
        );
        for (extra, says, line) in [
            ("together = [\"A\"]\n", "at least two", 14),
            ("together = [\"A\", \"Z\"]\n", "not an earlier phase", 16),
            ("together = [\"A\", \"A\"]\n", "listed twice", 16),
            (
                "together = [\"A\", \"B\"]\ncommand = \"z\"\n",
                "no `command`",
                17,
            ),
            (
                "together = [\"A\", \"B\"]\nscope = \"each-node\"\n",
                "no `scope`",
                17,
            ),
            (
                "together = [\"A\", \"B\"]\ntimeout = \"5m\"\n",
                "own `timeout`",
                17,
            ),
            (
                "together = [\"A\", \"B\"]\ngates = [{ kind = \"min\", figure = \"step_time_ms\", value = 1 }]\n",
                "judged by `together` and `no-xid`",
                17,
            ),
            (
                "together = [\"A\", \"B\"]\ncompare = [\"nope\"]\n",
                "unknown figure",
                17,
            ),
            (
                "scope = \"together\"\nparser = \"none\"\ncommand = \"x\"\n",
                "written as `together",
                16,
            ),
        ] {
            let e = Plan::parse("p.toml", &format!("{base}{extra}")).unwrap_err();
            assert!(e.message.contains(says), "{extra}: {e}");
            assert_eq!(e.line, Some(line), "{extra}: {e}");
        }
        // A together gate on an ordinary phase is a mistake, and so is `compare`.
        let e = Plan::parse(
            "p.toml",
            &base.replace("command = \"y\"", "command = \"y\"\ngates = [{ kind = \"together\", figure = \"step_time_ms\", worse_pct = 5 }]"),
        )
        .unwrap_err();
        assert!(
            e.message.contains("belongs to a phase with `together"),
            "{e}"
        );
        assert!(lower_is_better("s3_ttfb_p99_ms_c32") && lower_is_better("data_wait_pct"));
        assert!(!lower_is_better("busbw_all_reduce") && !lower_is_better("s3_gb_per_s"));
        assert!(!lower_is_better("s3_ttfb_p99_ms_c"));
    }
}
