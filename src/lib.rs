//! Cairn: a memory store for LLM agents.
//!
//! Agents push large tool outputs into Cairn and keep a summary and a
//! `mem://` pointer in context; later they fetch exactly the slice they need.
//! Layers: [`http`] (thin axum handlers) → [`domain`] (pure logic) →
//! [`storage`] (metadata and blob stores behind traits).

pub mod app;
pub mod cli;
pub mod clock;
pub mod config;
pub mod domain;
pub mod http;
pub mod jq;
pub mod llm;
pub mod metrics;
pub mod model;
pub mod storage;
pub mod text;
