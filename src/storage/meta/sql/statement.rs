//! SQL text with numbered placeholders (`$1`, `$2`, …, which both SQLite
//! and PostgreSQL read) and the values bound to them, built in order.
//!
//! sqlx's `QueryBuilder` keeps its arguments inside the builder, so code
//! generic over the database cannot hand them to a query that borrows the
//! builder (the borrow checker must assume the arguments' destructor uses
//! them); a statement owns plain values and binds them when it is run.

use sqlx::database::Database;
use sqlx::query::Query;
use sqlx::{Encode, Type};

/// A value bound to a placeholder.
#[derive(Clone, Debug, PartialEq)]
pub(in crate::storage::meta) enum Bind {
    /// Text.
    Text(String),
    /// An integer.
    Int(i64),
}

impl From<String> for Bind {
    fn from(value: String) -> Self {
        Self::Text(value)
    }
}

impl From<&str> for Bind {
    fn from(value: &str) -> Self {
        Self::Text(value.to_owned())
    }
}

impl From<i64> for Bind {
    fn from(value: i64) -> Self {
        Self::Int(value)
    }
}

/// SQL text and its bound values.
#[derive(Clone, Debug, Default)]
pub(in crate::storage::meta) struct Statement {
    text: String,
    binds: Vec<Bind>,
}

impl Statement {
    /// A statement starting with `text`.
    pub(in crate::storage::meta) fn new(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            binds: Vec::new(),
        }
    }

    /// Appends SQL text.
    pub(in crate::storage::meta) fn push(&mut self, text: &str) -> &mut Self {
        self.text.push_str(text);
        self
    }

    /// Appends a placeholder bound to `value`.
    pub(in crate::storage::meta) fn push_bind(&mut self, value: impl Into<Bind>) -> &mut Self {
        self.binds.push(value.into());
        self.text.push('$');
        self.text.push_str(&self.binds.len().to_string());
        self
    }

    /// The query to run on `DB`, with every value bound.
    pub(in crate::storage::meta) fn query<DB>(&self) -> Query<'_, DB, DB::Arguments<'_>>
    where
        DB: Database,
        for<'q> String: Encode<'q, DB> + Type<DB>,
        for<'q> i64: Encode<'q, DB> + Type<DB>,
    {
        let mut query = sqlx::query(&self.text);
        for bind in &self.binds {
            query = match bind {
                Bind::Text(text) => query.bind(text.clone()),
                Bind::Int(int) => query.bind(*int),
            };
        }
        query
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_in_the_order_of_their_values() {
        let mut sql = Statement::new("SELECT 1 WHERE a = ");
        sql.push_bind("x").push(" AND b = ").push_bind(7_i64);
        assert_eq!(sql.text, "SELECT 1 WHERE a = $1 AND b = $2");
        assert_eq!(sql.binds, [Bind::Text("x".into()), Bind::Int(7)]);
    }
}
