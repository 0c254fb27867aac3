//! The nouns every surface shares (REST, MCP, the CLI, the console), declared
//! once. A leaf: it depends on no other module of the crate, so storage, the
//! domain and every surface can use it.

/// What every noun a surface takes derives, declared once: serde (REST's
/// JSON and query strings), utoipa (the OpenAPI document's parameters and
/// schemas), schemars (MCP's tool arguments) and clap (the CLI's flags).
/// Applied with `#[apply(surface_noun!)]` on the struct.
macro_rules! surface_noun {
    ($($item:tt)*) => {
        #[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
        #[derive(utoipa::IntoParams, utoipa::ToSchema, schemars::JsonSchema, clap::Args)]
        #[into_params(parameter_in = Query)]
        $($item)*
    };
}

pub mod fields;
pub mod filter;
pub mod grep;
pub mod int64;
pub mod put;

pub use fields::MemoryFields;
pub use filter::MemoryFilter;
pub use grep::GrepPattern;
pub use put::PutFields;
