//! The measures, one module each; each returns its raw figures and leaves
//! judging them to the report.

pub mod big_upload;
pub mod compress;
pub mod ingest;
pub mod puts;
pub mod search;
pub mod slices;
pub mod tokens;
