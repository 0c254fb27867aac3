//! A message list as the strategies see it: its pieces (replaceable texts),
//! its units (messages that must stay together), the frozen prefix, and what
//! a policy selects in it.

use std::ops::Range;

use serde_json::Value;

use super::format::{self, Format, Piece};
use super::offload::Job;
use super::{
    MARKER_ALLOWANCE, Options, Policy, Selection, Strategy, deletion, fold, marker, masking, pairs,
    pointer, selective, window,
};

/// A message list seen by the strategies.
pub struct Context<'a> {
    pub(super) format: Format,
    pub(super) messages: &'a [Value],
    pub(super) pieces: Vec<Piece>,
    pub(super) units: Vec<Range<usize>>,
    /// Messages before this index are never edited.
    pub(super) frozen: usize,
    pub(super) options: &'a Options,
}

impl<'a> Context<'a> {
    pub(super) fn new(format: Format, messages: &'a [Value], options: &'a Options) -> Self {
        let cached = if options.respect_cache_control {
            format::last_cache_control(messages).map_or(0, |i| i + 1)
        } else {
            0
        };
        Self {
            format,
            messages,
            pieces: format::pieces(format, messages),
            units: pairs::units(format, messages),
            frozen: options.preserve_prefix.max(cached).min(messages.len()),
            options,
        }
    }

    pub(super) fn text(&self, piece: &Piece) -> &'a str {
        format::text_at(&self.messages[piece.message], piece.at).unwrap_or("")
    }

    pub(super) fn chars(&self, piece: &Piece) -> usize {
        self.text(piece).chars().count()
    }

    pub(super) fn left_alone(&self, piece: &Piece) -> bool {
        let role = if piece.is_tool_result() {
            "tool"
        } else {
            piece.role.as_str()
        };
        self.options.leave_roles.iter().any(|r| r == role)
            || piece
                .tool
                .as_ref()
                .is_some_and(|t| self.options.leave_tools.contains(t))
    }

    /// A text a strategy may replace: after the frozen prefix, not a system
    /// prompt, not instructions a client put in a user turn, not already a
    /// marker, not left alone.
    pub(super) fn editable(&self, piece: &Piece) -> bool {
        let text = self.text(piece);
        piece.message >= self.frozen
            && !matches!(piece.role.as_str(), "system" | "developer")
            && !is_reminder(text)
            && !marker::is_marker(text)
            && !self.left_alone(piece)
    }

    /// A tool result that counts for masking.
    pub(super) fn maskable_result(&self, piece: &Piece) -> bool {
        piece.is_tool_result() && !self.left_alone(piece)
    }

    pub(super) fn worth_offloading(&self, chars: usize) -> bool {
        chars > self.options.summary_chars + MARKER_ALLOWANCE
    }

    /// A unit no strategy may fold: frozen, a system prompt, a reminder, or left alone.
    /// (Markers may be folded with other messages: the transcript keeps
    /// them as they are, and [`fold::runs`] never folds markers alone.)
    pub(super) fn must_keep(&self, unit: &Range<usize>) -> bool {
        unit.start < self.frozen
            || self.messages[unit.clone()].iter().any(|m| {
                let role = m["role"].as_str().unwrap_or("");
                let tool_role = if pairs::result_ids(self.format, m).is_empty() {
                    role
                } else {
                    "tool"
                };
                matches!(role, "system" | "developer")
                    || self
                        .options
                        .leave_roles
                        .iter()
                        .any(|r| r == role || r == tool_role)
            })
            || self
                .pieces
                .iter()
                .filter(|p| unit.contains(&p.message))
                .any(|p| {
                    is_reminder(self.text(p))
                        || p.tool
                            .as_ref()
                            .is_some_and(|t| self.options.leave_tools.contains(t))
                })
    }

    /// Where the last `keep_recent` messages start, moved back so no unit is split.
    pub(super) fn window_start(&self, keep_recent: usize) -> usize {
        let edge = self.messages.len().saturating_sub(keep_recent);
        self.units
            .iter()
            .find(|unit| unit.contains(&edge))
            .map_or(edge, |unit| unit.start)
    }

    pub(super) fn select(&self, policy: Policy) -> Selection {
        let keep = |strategy: Strategy| {
            self.options
                .keep_recent
                .unwrap_or_else(|| strategy.default_keep_recent())
        };
        match policy {
            Policy::Strategy(s @ Strategy::Pointer) => {
                Selection::pieces(pointer::select(self, self.options.threshold_chars, keep(s)))
            }
            Policy::Strategy(s @ Strategy::ObservationMasking) => {
                Selection::pieces(masking::select(self, keep(s)))
            }
            Policy::Strategy(s @ Strategy::SlidingWindow) => {
                Selection::runs(window::select(self, keep(s)), false)
            }
            Policy::Strategy(s @ Strategy::Selective) => {
                let (pieces, runs) = selective::select(self, keep(s));
                Selection {
                    pieces,
                    runs,
                    drop: false,
                    failures_inline: true,
                }
            }
            Policy::Strategy(s @ Strategy::Deletion) => {
                Selection::runs(deletion::select(self, keep(s)), true)
            }
            Policy::PointerAndMasking {
                threshold_chars,
                mask_keep,
            } => {
                let mut picked = pointer::select(self, threshold_chars, 0);
                picked.extend(masking::select(self, mask_keep));
                picked.sort_unstable();
                picked.dedup();
                Selection::pieces(picked)
            }
        }
    }

    /// The pieces to store for a selection, in selection order.
    pub(super) fn jobs(&self, selection: &Selection) -> Vec<Job> {
        let texts = selection.pieces.iter().map(|&i| {
            let piece = &self.pieces[i];
            let text = self.text(piece).to_owned();
            match &piece.tool {
                Some(tool) if piece.is_tool_result() => Job::new(
                    text,
                    "TOOL_OUTPUT",
                    Some(tool.clone()),
                    format!("{tool} output (messages[{}])", piece.message),
                ),
                _ => Job::new(
                    text,
                    "CONTEXT",
                    Some(piece.role.clone()),
                    format!("{} message (messages[{}])", piece.role, piece.message),
                ),
            }
        });
        let verb = if selection.drop { "dropped" } else { "folded" };
        let runs = selection.runs.iter().map(|run| {
            Job::new(
                fold::transcript(&self.messages[run.clone()]),
                "TRANSCRIPT",
                Some(self.format.name().to_owned()),
                format!("messages {}-{} ({verb})", run.start, run.end - 1),
            )
        });
        texts.chain(runs).collect()
    }
}

/// Instructions an agent puts in a user turn for the model (Claude Code's
/// `<system-reminder>` blocks: its skills, CLAUDE.md, the date): system
/// prompt by another name, never offloaded or folded away from the model.
fn is_reminder(text: &str) -> bool {
    text.trim_start().starts_with("<system-reminder>")
}
