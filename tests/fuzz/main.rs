//! Hostile and broken input (issue 26): every reader of outside text, driven by mutated real
//! inputs with a fixed budget of cases. The rule: no input makes burnin panic, nothing grows
//! without bound, an error is a few lines, never a copy of the input.
//!
//! Inputs are the files burnin reads in the field, taken from `tests/corpus/` (outputs by
//! others) and `tests/fixtures/` (agent streams, smi CSV, scrapes, records, plans), the shipped
//! plan and `burnin.example.toml`, then mutated: bits flipped, spans inserted, deleted,
//! repeated, two files spliced, the text cut, lines repeated or dropped, numbers replaced, and
//! hostile tokens put in (terminal escapes, NUL, bidi overrides, `nan`/`inf`, numbers past every
//! integer type, a 1 MB line, shell syntax, paths, huge GPU indices). docs/fuzzing.md says what
//! each target feeds.
//!
//! Budget: `BURNIN_FUZZ_CASES` cases per target (else proptest's own `PROPTEST_CASES`, else
//! [`DEFAULT_CASES`]); a case that runs longer than `BURNIN_FUZZ_TIMEOUT_MS` (0: no limit) is a
//! hang and fails. The long run, in the release profile:
//!
//! ```text
//! BURNIN_FUZZ_CASES=200000 cargo test --release --test fuzz
//! ```
//!
//! A failure prints the minimal case proptest shrank to: the seed file, the mutations, and the
//! mutated input itself. Its seed is kept in `proptest-regressions/fuzz/<target>.txt` and
//! re-run first next time; the lasting regression test is a plain `#[test]` with the minimal
//! input next to the reader.

// A test (or bench) fails loudly on what it did not expect: expect and unwrap are its asserts.
#![allow(clippy::expect_used, clippy::unwrap_used)]

#[path = "../common/mod.rs"]
mod common;

mod budget;
mod caps;
mod check;
mod config;
mod console;
mod mutate;
mod parsers;
mod prometheus;
mod records;
mod repro;
mod seeds;
mod smi;
mod stream;

use std::collections::BTreeMap;
use std::fmt;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use burnin::app::layout::Layout;
use burnin::app::state::{Event, State};
use burnin::app::theme::Theme;
use burnin::commands::parse::{self, KINDS, Kind, Options};
use burnin::config::inventory::Inventory;
use burnin::model::NodeLink;
use burnin::model::SourceEvent;
use burnin::parsers::{OutputParser, ParseContext, ParserKind, launcher};
use burnin::plan::Plan;
use burnin::sources::prometheus::PromNodes;
use burnin::sources::smi::{LEGACY_FIELDS, MODERN_FIELDS, SmiDecoder};
use burnin::store::ClusterStore;
use burnin::wire::{self, Decoded, Decoder, WireMessage};
use proptest::prelude::*;
use proptest::sample::Index;
use proptest::test_runner::{FileFailurePersistence, RngSeed};
use ratatui::Terminal;
use ratatui::backend::TestBackend;

// Each target module may use the others' helpers (a console target feeds the stream's decoder).
use budget::*;
use check::*;
use console::*;
use mutate::*;
use records::*;
use seeds::*;
use smi::*;
use stream::*;
