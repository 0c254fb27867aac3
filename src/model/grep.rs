//! What a grep looks for: the pattern and how it is matched, declared once
//! for REST (`/v1/memories/{id}/grep`, `/v1/grep`), MCP's and the proxy's
//! `memory_grep`, the console and the CLI's `cairn grep`. How many matches
//! and where to start stay with each surface: a page there, every page in
//! the CLI.

use macro_rules_attribute::apply;

/// A pattern and how to match it against each line.
#[apply(surface_noun!)]
pub struct GrepPattern {
    /// A regex matched against each line (Rust regex syntax), or a literal with `fixed`.
    pub pattern: String,
    /// Take the pattern literally (no regex metacharacters).
    #[serde(default)]
    #[arg(short = 'F', long)]
    pub fixed: bool,
    /// Match regardless of case.
    #[serde(default)]
    #[arg(short = 'i', long)]
    pub ignore_case: bool,
    /// Lines of context before and after each match (0-10, default 0).
    #[serde(default)]
    #[arg(short = 'C', long, default_value_t = 0)]
    pub context: u32,
}
