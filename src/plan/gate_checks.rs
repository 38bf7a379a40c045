//! The checks a plan's gates get where the plan is read: each gate alone (its figure known, its
//! numbers finite and meaningful) and a gate beside the phase's others (a floor that yields to
//! the spec table needs the spec gate it yields to).

use super::Gate;
use crate::config::ConfigError;
use crate::model::figures::{figure_names, known_figure};

/// The gate's figure must be one burnin knows, and its numbers finite and ones a gate can mean.
pub(super) fn check_gate_figure(
    file: &str,
    text: &str,
    gate: &toml::Spanned<Gate>,
) -> Result<(), ConfigError> {
    let bad = |m: String| Err(ConfigError::at(file, text, Some(gate.span()), m));
    // A NaN bound compares false both ways: it would pass any figure. Every number is finite,
    // and a percentage is one a gate can mean.
    match gate.get_ref() {
        Gate::Min { value, .. } | Gate::Max { value, .. } if !value.is_finite() => {
            return bad(format!("gate value {value} is not a finite number"));
        }
        Gate::Baseline { pct, .. } | Gate::Peers { pct, .. } | Gate::Scaling { pct }
            if !(pct.is_finite() && *pct > 0.0 && *pct <= 1000.0) =>
        {
            return bad(format!("gate pct {pct} must be above 0 and at most 1000"));
        }
        Gate::Spec { pct, .. } if !(pct.is_finite() && *pct > 0.0 && *pct <= 1000.0) => {
            return bad(format!("gate pct {pct} must be above 0 and at most 1000"));
        }
        Gate::Spec {
            figure,
            floor,
            per,
            miss,
            ..
        } => {
            let Some(floor_unit) = crate::model::spec::figure_unit(floor) else {
                return bad(format!(
                    "{:?} is no figure of the spec table; known: {}",
                    crate::model::excerpt(floor),
                    crate::model::spec::GPU_FIGURES
                        .iter()
                        .chain(crate::model::spec::NIC_FIGURES.iter())
                        .map(|(n, _, _)| *n)
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            };
            if crate::model::spec::unit_factor(crate::plan::unit_of(figure), floor_unit).is_none() {
                return bad(format!(
                    "{figure} is in {:?} and the spec's {floor} in {floor_unit:?}: they do not compare",
                    crate::plan::unit_of(figure)
                ));
            }
            if per.as_deref().is_some_and(|p| p != "nic") {
                return bad("gate per: only \"nic\" (a job across nodes, per RDMA port)".into());
            }
            if miss.as_deref().is_some_and(|m| m != "warn" && m != "fail") {
                return bad("gate miss: \"fail\" (the default) or \"warn\"".into());
            }
        }
        Gate::Together { worse_pct, .. }
            if !(worse_pct.is_finite() && (0.0..=1000.0).contains(worse_pct)) =>
        {
            return bad(format!("gate worse_pct {worse_pct} must be 0 to 1000"));
        }
        // A misspelt rule would never fire: a gate that cannot fail.
        Gate::NoFinding { rule } if !crate::model::finding::RULES.contains(&rule.as_str()) => {
            return bad(format!(
                "unknown triage rule {:?}; known: {}",
                crate::model::excerpt(rule),
                crate::model::finding::RULES.join(", ")
            ));
        }
        _ => {}
    }
    match gate.get_ref().figure() {
        Some(figure) if !known_figure(figure) => bad(format!(
            "unknown figure {figure:?}; known: {}",
            figure_names()
        )),
        _ => Ok(()),
    }
}

/// A `min` gate with `unless = "spec"` needs a `spec` gate on its figure in the same phase, and
/// one that fails as it does: yielding to a floor whose miss only warns would let a broken path
/// pass. Said without a location; the caller locates it at the gate.
pub(super) fn check_yields(
    id: &str,
    gates: &[toml::Spanned<Gate>],
    gate: &toml::Spanned<Gate>,
) -> Result<(), String> {
    let Gate::Min {
        figure,
        unless: Some(_),
        ..
    } = gate.get_ref()
    else {
        return Ok(());
    };
    let yields_to = super::gates::SpecGate::on_figure(gates.iter().map(|g| g.get_ref()), figure);
    let why = match yields_to {
        None => "needs a `spec` gate on it in the same phase",
        Some(s) if !s.fails() => {
            "its `spec` gate only warns on a miss, so a floor that fails would yield to one that does not"
        }
        Some(_) => return Ok(()),
    };
    Err(format!("{id}: `unless = \"spec\"` on {figure}: {why}"))
}
