//! The single SQLite writer: group commit of every write that arrives together.
//!
//! One SQLite commit costs an fsync (~120 µs here) whether it carries one row
//! or hundreds, so the writer drains its queue and commits the whole batch in
//! one transaction. Each command runs under its own savepoint: one failing
//! command does not fail its batch neighbours.

use sqlx::Connection;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use tokio::sync::{mpsc, oneshot};

use super::sqlite::{MEMORY_SELECT, memory_from_row, to_i64};
use super::{AccessUpdate, MemoryRecord, NewMemory, PutOutcome};
use crate::storage::StorageError;

/// Most commands committed in one transaction.
const MAX_BATCH: usize = 512;

type Reply<T> = oneshot::Sender<Result<T, StorageError>>;

/// A write for the writer task.
pub(super) enum WriteCommand {
    /// Insert object and memory, or merge into the existing memory.
    Put(Box<NewMemory>, Reply<PutOutcome>),
    /// Delete one memory of a namespace.
    Delete {
        namespace: String,
        id: String,
        reply: Reply<bool>,
    },
    /// Add read statistics.
    Access(Vec<AccessUpdate>, Reply<()>),
    /// Commit what is queued, then stop.
    Shutdown(oneshot::Sender<()>),
}

/// A command's outcome waiting for the batch commit.
enum Done {
    Put(Reply<PutOutcome>, Box<Result<PutOutcome, StorageError>>),
    Delete(Reply<bool>, Result<bool, StorageError>),
    Access(Reply<()>, Result<(), StorageError>),
}

impl Done {
    fn fail_if_ok(self, error: &str) -> Self {
        let fail = || StorageError::Database(error.to_owned());
        match self {
            Self::Put(r, result) if result.is_ok() => Self::Put(r, Box::new(Err(fail()))),
            Self::Delete(r, Ok(_)) => Self::Delete(r, Err(fail())),
            Self::Access(r, Ok(())) => Self::Access(r, Err(fail())),
            other => other,
        }
    }

    fn send(self) {
        // A caller that went away no longer needs its answer.
        match self {
            Self::Put(r, v) => drop(r.send(*v)),
            Self::Delete(r, v) => drop(r.send(v)),
            Self::Access(r, v) => drop(r.send(v)),
        }
    }
}

/// Opens the writer connection and starts the writer task.
pub(super) async fn spawn(
    options: SqliteConnectOptions,
) -> Result<(mpsc::Sender<WriteCommand>, tokio::task::JoinHandle<()>), StorageError> {
    let conn = SqliteConnection::connect_with(&options).await?;
    let (tx, rx) = mpsc::channel(4 * MAX_BATCH);
    Ok((tx, tokio::spawn(run(conn, rx))))
}

async fn run(mut conn: SqliteConnection, mut rx: mpsc::Receiver<WriteCommand>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut stop = None;
    while stop.is_none() {
        let Some(first) = rx.recv().await else { break };
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(command) => batch.push(command),
                Err(_) => break,
            }
        }
        let mut done = Vec::with_capacity(batch.len());
        let began = sqlx::query("BEGIN IMMEDIATE").execute(&mut conn).await;
        for command in batch.drain(..) {
            match command {
                WriteCommand::Shutdown(ack) => stop = Some(ack),
                other => done.extend(apply(&mut conn, other).await),
            }
        }
        let committed = match began {
            Ok(_) => sqlx::query("COMMIT").execute(&mut conn).await.map(|_| ()),
            Err(e) => Err(e),
        };
        if let Err(e) = committed {
            tracing::error!(error = %e, "metadata commit failed");
            let _ = sqlx::query("ROLLBACK").execute(&mut conn).await;
            let message = format!("commit failed: {e}");
            done = done.into_iter().map(|d| d.fail_if_ok(&message)).collect();
        }
        done.into_iter().for_each(Done::send);
    }
    let _ = conn.close().await;
    if let Some(ack) = stop {
        let _ = ack.send(());
    }
}

/// Runs one command under a savepoint, so that its failure undoes only itself.
async fn apply(conn: &mut SqliteConnection, command: WriteCommand) -> Option<Done> {
    // Should the savepoint itself fail, the command fails the same way right after.
    let _ = sqlx::query("SAVEPOINT cmd").execute(&mut *conn).await;
    let done = match command {
        WriteCommand::Put(memory, reply) => Done::Put(reply, Box::new(put(conn, &memory).await)),
        WriteCommand::Delete {
            namespace,
            id,
            reply,
        } => Done::Delete(reply, delete(conn, &namespace, &id).await),
        WriteCommand::Access(updates, reply) => Done::Access(reply, access(conn, &updates).await),
        WriteCommand::Shutdown(_) => return None,
    };
    let ok = match &done {
        Done::Put(_, r) => r.is_ok(),
        Done::Delete(_, r) => r.is_ok(),
        Done::Access(_, r) => r.is_ok(),
    };
    if !ok {
        let _ = sqlx::query("ROLLBACK TO cmd").execute(&mut *conn).await;
    }
    let _ = sqlx::query("RELEASE cmd").execute(&mut *conn).await;
    Some(done)
}

async fn put(conn: &mut SqliteConnection, memory: &NewMemory) -> Result<PutOutcome, StorageError> {
    let object = &memory.object;
    let inserted = sqlx::query(
        "INSERT INTO objects (hash, bytes, lines, stored_bytes, layout, data, created_at) \
         VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING",
    )
    .bind(&object.hash)
    .bind(to_i64(object.bytes))
    .bind(to_i64(object.lines))
    .bind(to_i64(object.stored_bytes))
    .bind(object.layout.as_str())
    .bind(object.data.as_deref())
    .bind(memory.now)
    .execute(&mut *conn)
    .await?
    .rows_affected()
        == 1;
    if inserted {
        for (idx, frame) in object.frames.iter().enumerate() {
            sqlx::query(
                "INSERT INTO frames (hash, idx, content_offset, content_len, first_line, stored_offset, stored_len) \
                 VALUES (?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(&object.hash)
            .bind(to_i64(idx as u64))
            .bind(to_i64(frame.content_offset))
            .bind(i64::from(frame.content_len))
            .bind(to_i64(frame.first_line))
            .bind(to_i64(frame.stored_offset))
            .bind(i64::from(frame.stored_len))
            .execute(&mut *conn)
            .await?;
        }
    }
    let (ns, id, f) = (&memory.namespace, &object.hash, &memory.fields);
    let exists = sqlx::query("SELECT 1 FROM memories WHERE namespace = ? AND id = ?")
        .bind(ns)
        .bind(id)
        .fetch_optional(&mut *conn)
        .await?
        .is_some();
    if exists {
        // Same content again: keep what was said first, fill what was missing, unite tags.
        sqlx::query(
            "UPDATE memories SET updated_at = ?, subtype = COALESCE(subtype, ?), title = COALESCE(title, ?), \
             thread = COALESCE(thread, ?), checkpoint = COALESCE(checkpoint, ?), directory = COALESCE(directory, ?) \
             WHERE namespace = ? AND id = ?",
        )
        .bind(memory.now)
        .bind(&f.subtype)
        .bind(&f.title)
        .bind(&f.thread)
        .bind(&f.checkpoint)
        .bind(&f.directory)
        .bind(ns)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    } else {
        sqlx::query(
            "INSERT INTO memories (namespace, id, type, subtype, mime, title, thread, checkpoint, directory, \
             tokens, summary, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(ns)
        .bind(id)
        .bind(&f.kind)
        .bind(&f.subtype)
        .bind(&f.mime)
        .bind(&f.title)
        .bind(&f.thread)
        .bind(&f.checkpoint)
        .bind(&f.directory)
        .bind(to_i64(memory.tokens))
        .bind(&memory.summary)
        .bind(memory.now)
        .bind(memory.now)
        .execute(&mut *conn)
        .await?;
    }
    for tag in &f.tags {
        sqlx::query(
            "INSERT INTO memory_tags (namespace, id, tag) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
        )
        .bind(ns)
        .bind(id)
        .bind(tag)
        .execute(&mut *conn)
        .await?;
    }
    let record = read_back(conn, ns, id).await?;
    Ok(PutOutcome {
        created: !exists,
        record,
    })
}

async fn read_back(
    conn: &mut SqliteConnection,
    ns: &str,
    id: &str,
) -> Result<MemoryRecord, StorageError> {
    let sql = format!("{MEMORY_SELECT} WHERE m.namespace = ? AND m.id = ?");
    let row = sqlx::query(&sql)
        .bind(ns)
        .bind(id)
        .fetch_one(&mut *conn)
        .await?;
    memory_from_row(&row)
}

async fn delete(conn: &mut SqliteConnection, ns: &str, id: &str) -> Result<bool, StorageError> {
    let removed = sqlx::query("DELETE FROM memories WHERE namespace = ? AND id = ?")
        .bind(ns)
        .bind(id)
        .execute(&mut *conn)
        .await?
        .rows_affected();
    sqlx::query("DELETE FROM memory_tags WHERE namespace = ? AND id = ?")
        .bind(ns)
        .bind(id)
        .execute(&mut *conn)
        .await?;
    Ok(removed > 0)
}

async fn access(conn: &mut SqliteConnection, updates: &[AccessUpdate]) -> Result<(), StorageError> {
    for update in updates {
        sqlx::query(
            "UPDATE memories SET access_count = access_count + ?, \
             last_accessed_at = MAX(COALESCE(last_accessed_at, 0), ?) WHERE namespace = ? AND id = ?",
        )
        .bind(update.count)
        .bind(update.at)
        .bind(&update.namespace)
        .bind(&update.id)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}
