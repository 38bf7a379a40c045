//! Colour themes: a TOML file maps colour roles (ok, warn, crit, accent, muted, border, focus …)
//! to styles written as words, e.g. `"black on yellow bold"`. Panes ask for roles, never colours,
//! so a theme (or `NO_COLOR`) changes every pane at once.

use std::collections::BTreeMap;

use ratatui::style::{Color, Modifier, Style};
use serde::Deserialize;

use crate::config::ConfigError;

/// The shipped themes, embedded; each is also a test case.
pub const EMBEDDED: &[(&str, &str)] = &[
    ("default.toml", include_str!("../../themes/default.toml")),
    ("light.toml", include_str!("../../themes/light.toml")),
    (
        "high-contrast.toml",
        include_str!("../../themes/high-contrast.toml"),
    ),
    ("mono.toml", include_str!("../../themes/mono.toml")),
];

/// Every role a theme must define.
pub const ROLES: &[&str] = &[
    "text", "muted", "accent", "title", "border", "focus", "selected", "ok", "warn", "crit",
    "info", "bar", "status",
];

/// Roles a theme may leave out, and what they are then: `screen`, the whole screen's colours
/// under every pane (the terminal's own when left out). A theme for light backgrounds sets it,
/// so its dark text stays readable on a dark terminal too.
pub const OPTIONAL_ROLES: &[&str] = &["screen"];

/// A resolved theme: one style per role.
#[derive(Debug, Clone, PartialEq)]
pub struct Theme {
    /// Name shown in the status bar.
    pub name: String,
    /// Plain text.
    pub text: Style,
    /// De-emphasised text (units, n/a, idle).
    pub muted: Style,
    /// Highlights (current figures).
    pub accent: Style,
    /// Pane titles.
    pub title: Style,
    /// Pane borders.
    pub border: Style,
    /// Border of the focused pane.
    pub focus: Style,
    /// The selected row or cell.
    pub selected: Style,
    /// Good.
    pub ok: Style,
    /// Needs a look.
    pub warn: Style,
    /// Broken.
    pub crit: Style,
    /// Informational.
    pub info: Style,
    /// Bars and sparklines.
    pub bar: Style,
    /// The status bar.
    pub status: Style,
    /// Under everything (default: the terminal's own colours).
    pub screen: Style,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ThemeFile {
    name: String,
    roles: BTreeMap<toml::Spanned<String>, toml::Spanned<String>>,
}

impl Theme {
    /// Parse and resolve a theme file. `file` names it in errors.
    pub fn parse(file: &str, text: &str) -> Result<Theme, ConfigError> {
        let shape: ThemeFile =
            toml::from_str(text).map_err(|e| ConfigError::from_toml(file, text, &e))?;
        let mut styles = BTreeMap::new();
        for (role, value) in &shape.roles {
            if !ROLES.contains(&role.get_ref().as_str())
                && !OPTIONAL_ROLES.contains(&role.get_ref().as_str())
            {
                return Err(ConfigError::at(
                    file,
                    text,
                    Some(role.span()),
                    format!(
                        "unknown role {:?}; roles are: {} (and, optional, {})",
                        role.get_ref(),
                        ROLES.join(", "),
                        OPTIONAL_ROLES.join(", ")
                    ),
                ));
            }
            let style = parse_style(value.get_ref())
                .map_err(|m| ConfigError::at(file, text, Some(value.span()), m))?;
            styles.insert(role.get_ref().clone(), style);
        }
        let missing: Vec<&str> = ROLES
            .iter()
            .copied()
            .filter(|r| !styles.contains_key(*r))
            .collect();
        if !missing.is_empty() {
            return Err(ConfigError::at(
                file,
                text,
                None,
                format!("[roles] is missing: {}", missing.join(", ")),
            ));
        }
        let get = |r: &str| styles.get(r).copied().unwrap_or_default();
        Ok(Theme {
            name: shape.name,
            text: get("text"),
            muted: get("muted"),
            accent: get("accent"),
            title: get("title"),
            border: get("border"),
            focus: get("focus"),
            selected: get("selected"),
            ok: get("ok"),
            warn: get("warn"),
            crit: get("crit"),
            info: get("info"),
            bar: get("bar"),
            status: get("status"),
            screen: get("screen"),
        })
    }

    /// The embedded default theme.
    pub fn fallback() -> Theme {
        Theme::parse("<embedded>/default.toml", EMBEDDED[0].1)
            .unwrap_or_else(|e| panic!("shipped default theme is broken: {e}"))
    }
}

/// Parse `"[fg] [on bg] [bold] [dim] [italic] [underline] [reverse]"`.
pub fn parse_style(words: &str) -> Result<Style, String> {
    let mut style = Style::default();
    let mut tokens = words.split_whitespace();
    while let Some(tok) = tokens.next() {
        match tok {
            "bold" => style = style.add_modifier(Modifier::BOLD),
            "dim" => style = style.add_modifier(Modifier::DIM),
            "italic" => style = style.add_modifier(Modifier::ITALIC),
            "underline" => style = style.add_modifier(Modifier::UNDERLINED),
            "reverse" => style = style.add_modifier(Modifier::REVERSED),
            "on" => {
                let bg = tokens
                    .next()
                    .ok_or_else(|| format!("{words:?}: \"on\" needs a colour after it"))?;
                style = style.bg(parse_color(bg)?);
            }
            colour => style = style.fg(parse_color(colour)?),
        }
    }
    Ok(style)
}

fn parse_color(word: &str) -> Result<Color, String> {
    if let Some(hex) = word.strip_prefix('#') {
        if hex.len() == 6
            && let Ok(v) = u32::from_str_radix(hex, 16)
        {
            return Ok(Color::Rgb((v >> 16) as u8, (v >> 8) as u8, v as u8));
        }
        return Err(format!("bad colour {word:?}: expected #rrggbb"));
    }
    if let Ok(index) = word.parse::<u8>() {
        return Ok(Color::Indexed(index));
    }
    Ok(match word {
        "reset" | "default" => Color::Reset,
        "black" => Color::Black,
        "red" => Color::Red,
        "green" => Color::Green,
        "yellow" => Color::Yellow,
        "blue" => Color::Blue,
        "magenta" => Color::Magenta,
        "cyan" => Color::Cyan,
        "gray" | "grey" => Color::Gray,
        "darkgray" | "darkgrey" => Color::DarkGray,
        "lightred" => Color::LightRed,
        "lightgreen" => Color::LightGreen,
        "lightyellow" => Color::LightYellow,
        "lightblue" => Color::LightBlue,
        "lightmagenta" => Color::LightMagenta,
        "lightcyan" => Color::LightCyan,
        "white" => Color::White,
        _ => {
            return Err(format!(
                "unknown colour {word:?}: use a name (red, lightblue, …), 0-255 or #rrggbb"
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_shipped_theme_loads() {
        for (name, text) in EMBEDDED {
            let theme = Theme::parse(name, text).unwrap_or_else(|e| panic!("{e}"));
            assert!(!theme.name.is_empty());
        }
    }

    #[test]
    fn styles_parse_words() {
        let s = parse_style("black on #ffcc00 bold").expect("parses");
        assert_eq!(s.fg, Some(Color::Black));
        assert_eq!(s.bg, Some(Color::Rgb(0xff, 0xcc, 0)));
        assert!(s.add_modifier.contains(Modifier::BOLD));
        assert!(parse_style("on").is_err());
        assert!(parse_style("purpleish").is_err());
    }
}
