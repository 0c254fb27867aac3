//! The nouns every surface shares (REST, MCP, the CLI, the console), declared
//! once. A leaf: it depends on no other module of the crate, so storage, the
//! domain and every surface can use it.

pub mod fields;
pub mod filter;
pub mod grep;
pub mod put;

pub use fields::MemoryFields;
pub use filter::MemoryFilter;
pub use grep::GrepPattern;
pub use put::PutFields;
