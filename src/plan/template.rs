//! Command templates: the `{name}` placeholders a plan's commands carry, the built-in ones the
//! runner fills for every command, and filling them in (`{{` and `}}` are literal braces).

use std::collections::BTreeMap;

/// Placeholders the runner fills in for every command.
pub const BUILTIN_PLACEHOLDERS: &[&str] = &[
    "node",
    "gpus",
    "run",
    "dir",
    "workloads",
    "hosts",
    "hosts_slots",
    "np",
    "nnodes",
    "nodelist",
    "hostfile",
    "peer",
    "burnin",
    "doctor_probe",
];

/// What is wrong with a command template.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TemplateError {
    /// A `{` that no `}` closes.
    #[error("a '{{' without its '}}' (write {{{{ for a literal brace)")]
    Unclosed,
    /// `{…}` around something that is no placeholder name (shell's `awk '{print $1}'`).
    #[error("'{{{0}}}' is not a placeholder (write {{{{ for a literal brace)")]
    NotAPlaceholder(String),
    /// A placeholder with no value (the plan's loader checks them first).
    #[error("no value for {{{0}}}")]
    NoValue(String),
}

/// The `{name}`s in a template, in order. `{{` and `}}` are literal braces.
pub fn placeholders(template: &str) -> Result<Vec<String>, TemplateError> {
    let mut out = Vec::new();
    let mut chars = template.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '{' if chars.peek().map(|x| x.1) == Some('{') => {
                chars.next();
            }
            '}' if chars.peek().map(|x| x.1) == Some('}') => {
                chars.next();
            }
            '{' => {
                let rest = &template[i + 1..];
                let Some(end) = rest.find('}') else {
                    return Err(TemplateError::Unclosed);
                };
                let name = &rest[..end];
                if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                    return Err(TemplateError::NotAPlaceholder(name.to_string()));
                }
                out.push(name.to_string());
                for _ in 0..=name.len() {
                    chars.next();
                }
            }
            _ => {}
        }
    }
    Ok(out)
}

/// Fill a template. Every placeholder must be in `values` (the plan's loader checked that).
pub fn render(template: &str, values: &BTreeMap<String, String>) -> Result<String, TemplateError> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(i) = rest.find(['{', '}']) {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(after) = tail.strip_prefix("{{") {
            out.push('{');
            rest = after;
        } else if let Some(after) = tail.strip_prefix("}}") {
            out.push('}');
            rest = after;
        } else if let Some(after) = tail.strip_prefix('}') {
            out.push('}');
            rest = after;
        } else {
            let end = tail.find('}').ok_or(TemplateError::Unclosed)?;
            let name = &tail[1..end];
            let v = values
                .get(name)
                .ok_or_else(|| TemplateError::NoValue(name.to_string()))?;
            out.push_str(v);
            rest = &tail[end + 1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_and_literal_braces() {
        assert_eq!(
            placeholders("a {node} ${{HOME}} {gpus}").unwrap(),
            ["node", "gpus"]
        );
        assert_eq!(
            placeholders("awk '{print $1}'"),
            Err(TemplateError::NotAPlaceholder("print $1".into()))
        );
        assert_eq!(
            TemplateError::NotAPlaceholder("print $1".into()).to_string(),
            "'{print $1}' is not a placeholder (write {{ for a literal brace)"
        );
        assert_eq!(placeholders("x {node"), Err(TemplateError::Unclosed));
        assert_eq!(
            render("{gpus}", &BTreeMap::new()),
            Err(TemplateError::NoValue("gpus".into()))
        );
        assert_eq!(
            TemplateError::NoValue("gpus".into()).to_string(),
            "no value for {gpus}"
        );
        let v: BTreeMap<String, String> = [("node".to_string(), "g1".to_string())]
            .into_iter()
            .collect();
        assert_eq!(render("x {node} ${{A}}", &v).unwrap(), "x g1 ${A}");
        assert!(render("{nope}", &v).is_err());
    }
}
