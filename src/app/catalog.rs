//! Collects the themes and layouts the console can switch between: the shipped ones (embedded),
//! then `~/.config/burnin/{themes,layouts}/*.toml`, then files named on the command line. A
//! broken file is reported (file:line:col) and skipped; the console always has the defaults.

use std::path::{Path, PathBuf};

use super::layout::{self, Layout};
use super::theme::{self, Theme};

/// Everything loaded, and what could not be.
#[derive(Debug, Clone)]
pub struct Catalog {
    /// Themes, shipped first.
    pub themes: Vec<Theme>,
    /// Layouts, shipped first (so `1`–`5` are always the same).
    pub layouts: Vec<Layout>,
    /// One message per broken file.
    pub problems: Vec<String>,
    /// Index of the theme to start with.
    pub start_theme: usize,
    /// Index of the layout to start with.
    pub start_layout: usize,
}

/// Where to look beyond the embedded files.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    /// `~/.config/burnin` (or `$XDG_CONFIG_HOME/burnin`), if known.
    pub config_dir: Option<PathBuf>,
    /// `--theme FILE` (or the name of a loaded theme).
    pub theme: Option<String>,
    /// `--layout FILE` (or the name of a loaded layout).
    pub layout: Option<String>,
    /// `NO_COLOR` is set: start in the mono theme.
    pub no_color: bool,
}

impl Sources {
    /// The user's config directory per XDG, from the environment.
    pub fn user_config_dir() -> Option<PathBuf> {
        std::env::var_os("XDG_CONFIG_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
            .map(|d| d.join("burnin"))
    }
}

fn toml_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    files.sort();
    files
}

fn load_file<T>(
    path: &Path,
    parse: fn(&str, &str) -> Result<T, crate::config::ConfigError>,
    problems: &mut Vec<String>,
) -> Option<T> {
    let name = path.display().to_string();
    match crate::config::read_file_bounded(path, crate::config::MAX_CONFIG_BYTES) {
        Ok(text) => match parse(&name, &text) {
            Ok(v) => Some(v),
            Err(e) => {
                problems.push(e.to_string());
                None
            }
        },
        Err(e) => {
            problems.push(format!("{name}: {e}"));
            None
        }
    }
}

/// Load everything; never fails.
pub fn load(sources: &Sources) -> Catalog {
    let mut problems = Vec::new();
    let mut themes: Vec<Theme> = theme::EMBEDDED
        .iter()
        .filter_map(|(n, t)| match Theme::parse(&format!("<embedded>/{n}"), t) {
            Ok(th) => Some(th),
            Err(e) => {
                problems.push(e.to_string());
                None
            }
        })
        .collect();
    let mut layouts: Vec<Layout> = layout::EMBEDDED
        .iter()
        .filter_map(
            |(n, t)| match Layout::parse(&format!("<embedded>/{n}"), t) {
                Ok(l) => Some(l),
                Err(e) => {
                    problems.push(e.to_string());
                    None
                }
            },
        )
        .collect();
    if let Some(dir) = &sources.config_dir {
        for f in toml_files(&dir.join("themes")) {
            themes.extend(load_file(&f, Theme::parse, &mut problems));
        }
        for f in toml_files(&dir.join("layouts")) {
            layouts.extend(load_file(&f, Layout::parse, &mut problems));
        }
    }
    if themes.is_empty() {
        themes.push(Theme::fallback());
    }
    if layouts.is_empty() {
        layouts.push(Layout::fallback());
    }

    let mut start_theme = if sources.no_color {
        themes.iter().position(|t| t.name == "mono").unwrap_or(0)
    } else {
        0
    };
    if let Some(want) = &sources.theme {
        match pick(want, &mut themes, Theme::parse, |t| &t.name, &mut problems) {
            Some(i) => start_theme = i,
            None => problems.push(format!(
                "theme {want:?} not loaded; using {}",
                themes[start_theme].name
            )),
        }
    }
    let mut start_layout = 0;
    if let Some(want) = &sources.layout {
        match pick(
            want,
            &mut layouts,
            Layout::parse,
            |l| &l.name,
            &mut problems,
        ) {
            Some(i) => start_layout = i,
            None => problems.push(format!(
                "layout {want:?} not loaded; using {}",
                layouts[0].name
            )),
        }
    }
    Catalog {
        themes,
        layouts,
        problems,
        start_theme,
        start_layout,
    }
}

/// A name of something loaded, or a file to load and add.
fn pick<T>(
    want: &str,
    list: &mut Vec<T>,
    parse: fn(&str, &str) -> Result<T, crate::config::ConfigError>,
    name: fn(&T) -> &String,
    problems: &mut Vec<String>,
) -> Option<usize> {
    if let Some(i) = list.iter().position(|t| name(t) == want) {
        return Some(i);
    }
    let path = Path::new(want);
    if path.exists() {
        let v = load_file(path, parse, problems)?;
        list.push(v);
        return Some(list.len() - 1);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_color_starts_in_mono() {
        let c = load(&Sources {
            no_color: true,
            ..Sources::default()
        });
        assert_eq!(c.themes[c.start_theme].name, "mono");
        assert!(c.problems.is_empty(), "{:?}", c.problems);
        assert_eq!(c.layouts.len(), layout::EMBEDDED.len());
    }

    #[test]
    fn a_missing_name_is_reported_not_fatal() {
        let c = load(&Sources {
            theme: Some("neon".into()),
            ..Sources::default()
        });
        assert_eq!(c.start_theme, 0);
        assert!(c.problems[0].contains("neon"), "{:?}", c.problems);
    }
}
