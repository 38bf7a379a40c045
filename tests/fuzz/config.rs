//! Config, plans, baselines, themes and layouts.

use super::*;

/// Read a config-like case by its family: an inventory, a plan, or a theme and a layout.
pub(crate) fn read_config(c: &Case, errors: Errors) -> Result<(), TestCaseError> {
    let text = c.text();
    let n = text.len();
    match c.family {
        Family::Inventory => {
            if let Err(e) = Inventory::parse("burnin.toml", &text) {
                errors.check("Inventory::parse", &e.to_string(), n)?;
            }
        }
        Family::Plan => {
            if let Err(e) = Plan::parse("plan.toml", &text) {
                errors.check("Plan::parse", &e.to_string(), n)?;
            }
        }
        _ => {
            if let Err(e) = Theme::parse("theme.toml", &text) {
                errors.check("Theme::parse", &e.to_string(), n)?;
            }
            if let Err(e) = Layout::parse("layout.toml", &text) {
                errors.check("Layout::parse", &e.to_string(), n)?;
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config("config"))]

    /// `burnin.example.toml` and a real inventory, mutated (commented keys brought to life),
    /// through `Inventory::parse`.
    #[test]
    fn inventory_takes_any_text(c in case(Family::Inventory)) {
        cap_memory();
        read_config(&c, Errors::Short)?;
    }

    /// The shipped plan and the plans of the H200 runs, mutated, through `Plan::parse`.
    #[test]
    fn plan_takes_any_text(c in case(Family::Plan)) {
        cap_memory();
        read_config(&c, Errors::Short)?;
    }

    /// Themes and layouts, shipped and broken, mutated, through `Theme::parse` and
    /// `Layout::parse`.
    #[test]
    fn themes_and_layouts_take_any_text(c in case(Family::UiToml)) {
        cap_memory();
        read_config(&c, Errors::Short)?;
    }

    /// Saved baselines, mutated, through `session::read_baseline`: errors short, figures
    /// finite.
    #[test]
    fn baseline_takes_any_file(c in case(Family::Baseline)) {
        cap_memory();
        let dir = TempDir::new("baseline");
        let p = dir.0.join("burnin-baseline.json");
        std::fs::write(&p, c.bytes()).expect("baseline file");
        match burnin::record::session::read_baseline(&p) {
            Ok(b) => check_finite("baseline", &b)?,
            Err(e) => check_error("read_baseline", &e.to_string())?,
        }
    }
}

proptest! {
    #![proptest_config(config("config-errors"))]

    /// A config error is a few lines, however long the key or value it names (TOML's message
    /// quotes a whole unknown key).
    #[test]
    fn config_errors_are_short(
        c in prop_oneof![case(Family::Inventory), case(Family::Plan), case(Family::UiToml)],
    ) {
        cap_memory();
        read_config(&c, Errors::Short)?;
    }
}
