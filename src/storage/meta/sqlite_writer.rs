//! The single SQLite writer: group commit of every write that arrives together.
//!
//! One SQLite commit costs an fsync (~120 µs here) whether it carries one row
//! or hundreds, so the writer drains its queue and commits the whole batch in
//! one transaction. Should any command of a batch fail, the batch is rolled
//! back and its commands run again one transaction each, so one failing
//! command never fails its neighbours.

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

/// What a command produced, before its transaction commits.
enum Outcome {
    Put(Box<PutOutcome>),
    Delete(bool),
    Access,
}

impl WriteCommand {
    /// Answers the caller (who may have gone away: then nobody needs it).
    fn answer(self, outcome: Result<Outcome, StorageError>) {
        match (self, outcome) {
            (Self::Put(_, reply), Ok(Outcome::Put(out))) => drop(reply.send(Ok(*out))),
            (Self::Delete { reply, .. }, Ok(Outcome::Delete(found))) => drop(reply.send(Ok(found))),
            (Self::Access(_, reply), Ok(Outcome::Access)) => drop(reply.send(Ok(()))),
            (Self::Put(_, reply), Err(e)) => drop(reply.send(Err(e))),
            (Self::Delete { reply, .. }, Err(e)) => drop(reply.send(Err(e))),
            (Self::Access(_, reply), Err(e)) => drop(reply.send(Err(e))),
            (Self::Shutdown(_), _) | (_, Ok(_)) => {}
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
        if let Some(index) = batch
            .iter()
            .position(|c| matches!(c, WriteCommand::Shutdown(_)))
        {
            if let WriteCommand::Shutdown(ack) = batch.swap_remove(index) {
                stop = Some(ack);
            }
        }
        match transaction(&mut conn, &batch).await {
            Ok(outcomes) => {
                for (command, outcome) in batch.drain(..).zip(outcomes) {
                    command.answer(Ok(outcome));
                }
            }
            Err(e) if batch.len() > 1 => {
                tracing::warn!(error = %e, commands = batch.len(), "batch failed; retrying its commands one by one");
                for command in batch.drain(..) {
                    let outcome = transaction(&mut conn, std::slice::from_ref(&command)).await;
                    command.answer(outcome.map(|mut o| o.remove(0)));
                }
            }
            Err(e) => {
                tracing::error!(error = %e, "metadata write failed");
                for command in batch.drain(..) {
                    command.answer(Err(StorageError::Database(e.to_string())));
                }
            }
        }
    }
    let _ = conn.close().await;
    if let Some(ack) = stop {
        let _ = ack.send(());
    }
}

/// Runs `commands` in one transaction; on any error nothing of it stays.
async fn transaction(
    conn: &mut SqliteConnection,
    commands: &[WriteCommand],
) -> Result<Vec<Outcome>, StorageError> {
    sqlx::query("BEGIN IMMEDIATE").execute(&mut *conn).await?;
    let mut outcomes = Vec::with_capacity(commands.len());
    for command in commands {
        let outcome = match command {
            WriteCommand::Put(memory, _) => {
                put(conn, memory).await.map(|o| Outcome::Put(Box::new(o)))
            }
            WriteCommand::Delete { namespace, id, .. } => {
                delete(conn, namespace, id).await.map(Outcome::Delete)
            }
            WriteCommand::Access(updates, _) => {
                access(conn, updates).await.map(|()| Outcome::Access)
            }
            WriteCommand::Shutdown(_) => continue,
        };
        match outcome {
            Ok(outcome) => outcomes.push(outcome),
            Err(e) => {
                let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
                return Err(e);
            }
        }
    }
    if let Err(e) = sqlx::query("COMMIT").execute(&mut *conn).await {
        let _ = sqlx::query("ROLLBACK").execute(&mut *conn).await;
        return Err(e.into());
    }
    Ok(outcomes)
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
    let created = sqlx::query(
        "INSERT INTO memories (namespace, id, type, subtype, mime, title, thread, checkpoint, directory, \
         tokens, summary, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) \
         ON CONFLICT (namespace, id) DO NOTHING",
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
    .await?
    .rows_affected()
        == 1;
    if !created {
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
    let record = if created && inserted {
        // Everything is known: no need to read it back.
        MemoryRecord {
            namespace: ns.clone(),
            id: id.clone(),
            fields: f.clone(),
            bytes: object.bytes,
            stored_bytes: object.stored_bytes,
            lines: object.lines,
            tokens: memory.tokens,
            summary: memory.summary.clone(),
            created_at: memory.now,
            updated_at: memory.now,
            last_accessed_at: None,
            access_count: 0,
        }
    } else {
        read_back(conn, ns, id).await?
    };
    Ok(PutOutcome { created, record })
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
