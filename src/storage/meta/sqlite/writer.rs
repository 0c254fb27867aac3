//! The single SQLite writer: a dedicated thread with the only write
//! connection, committing every write that arrives together as one
//! transaction (group commit).
//!
//! One SQLite commit costs an fsync whether it carries one row or hundreds,
//! so the writer drains its queue and commits the whole batch at once. It runs
//! on its own thread and calls SQLite directly: a statement costs
//! microseconds, not an async round trip. Should any command of a batch
//! fail, the batch is rolled back and its commands run again one transaction
//! each, so one failing command never fails its neighbours.

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};
use tokio::sync::{mpsc, oneshot};

use super::super::{AccessUpdate, ImportedMemory, LedgerBatch, NewMemory};
use super::puts::{Written, put};
use crate::storage::StorageError;

/// Most commands committed in one transaction.
const MAX_BATCH: usize = 512;
/// A batch smaller than this waits [`COMMIT_DELAY_US`] for company before
/// committing: measured with 16 clients of 10 KB puts, 300 µs raised the
/// rate by ~15% (more puts per fsync); 700 µs lowered it again.
const SMALL_BATCH: usize = 8;
/// See [`SMALL_BATCH`].
const COMMIT_DELAY_US: u64 = 300;

/// A maintenance write run on the writer's connection inside its transaction.
pub(super) type AdminWrite =
    std::sync::Arc<dyn Fn(&Connection) -> Result<u64, StorageError> + Send + Sync>;

type Reply<T> = oneshot::Sender<Result<T, StorageError>>;

/// A write for the writer thread.
pub(super) enum WriteCommand {
    /// Insert object and memory, or merge into the existing memory.
    Put(Box<NewMemory>, Reply<Written>),
    /// Delete one memory of a namespace.
    Delete {
        namespace: String,
        id: String,
        reply: Reply<bool>,
    },
    /// Add read statistics.
    Access(Vec<AccessUpdate>, Reply<()>),
    /// Add the ledger's batched counters and usage.
    Ledger(Box<LedgerBatch>, Reply<()>),
    /// Restore an archived memory (export/import).
    Import(Box<ImportedMemory>, Reply<bool>),
    /// Take objects the full-text index committed off its pending queue.
    Dequeue(Vec<String>, Reply<()>),
    /// A maintenance write (prune, expiry, GC, repair); run again alone if
    /// its batch fails, hence `Fn`. Answers a count.
    Admin(AdminWrite, Reply<u64>),
    /// Commit what is queued, then stop.
    Shutdown(oneshot::Sender<()>),
}

/// What a command produced, before its transaction commits.
enum Outcome {
    Put(Box<Written>),
    Delete(bool),
    Access,
    Ledger,
    Import(bool),
    Dequeue,
    Admin(u64),
}

impl WriteCommand {
    /// Answers the caller (who may have gone away: then nobody needs it).
    fn answer(self, outcome: Result<Outcome, StorageError>) {
        match (self, outcome) {
            (Self::Put(_, reply), Ok(Outcome::Put(out))) => drop(reply.send(Ok(*out))),
            (Self::Delete { reply, .. }, Ok(Outcome::Delete(found))) => drop(reply.send(Ok(found))),
            (Self::Access(_, reply), Ok(Outcome::Access)) => drop(reply.send(Ok(()))),
            (Self::Ledger(_, reply), Ok(Outcome::Ledger)) => drop(reply.send(Ok(()))),
            (Self::Import(_, reply), Ok(Outcome::Import(done))) => drop(reply.send(Ok(done))),
            (Self::Import(_, reply), Err(e)) => drop(reply.send(Err(e))),
            (Self::Dequeue(_, reply), Ok(Outcome::Dequeue)) => drop(reply.send(Ok(()))),
            (Self::Dequeue(_, reply), Err(e)) => drop(reply.send(Err(e))),
            (Self::Admin(_, reply), Ok(Outcome::Admin(n))) => drop(reply.send(Ok(n))),
            (Self::Admin(_, reply), Err(e)) => drop(reply.send(Err(e))),
            (Self::Put(_, reply), Err(e)) => drop(reply.send(Err(e))),
            (Self::Delete { reply, .. }, Err(e)) => drop(reply.send(Err(e))),
            (Self::Access(_, reply), Err(e)) => drop(reply.send(Err(e))),
            (Self::Ledger(_, reply), Err(e)) => drop(reply.send(Err(e))),
            (Self::Shutdown(_), _) | (_, Ok(_)) => {}
        }
    }
}

impl From<rusqlite::Error> for StorageError {
    fn from(err: rusqlite::Error) -> Self {
        match err.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DiskFull) => Self::Full,
            _ => Self::Database(err.to_string()),
        }
    }
}

/// Opens the write connection to the database file and starts the writer
/// thread, and beside it the checkpointer thread.
pub(super) fn spawn(
    path: &Path,
) -> Result<(mpsc::Sender<WriteCommand>, std::thread::JoinHandle<()>), StorageError> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(Duration::from_secs(10))?;
    conn.pragma_update(None, "journal_mode", "WAL")?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    // Checkpoints run on their own thread (see [`checkpoints`]), not in a commit.
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    // A WAL that was restarted is cut back to this size instead of staying at its peak.
    conn.pragma_update(None, "journal_size_limit", WAL_KEPT_BYTES)?;
    conn.set_prepared_statement_cache_capacity(64);
    let checkpointer = Connection::open(path)?;
    checkpointer.busy_timeout(Duration::from_secs(10))?;
    let (stop_checkpoints, stopped) = std::sync::mpsc::channel::<()>();
    let checkpoints = std::thread::Builder::new()
        .name("cairn-sqlite-checkpoint".into())
        .spawn(move || checkpoints(checkpointer, stopped))
        .map_err(StorageError::Io)?;
    let (tx, rx) = mpsc::channel(4 * MAX_BATCH);
    let handle = std::thread::Builder::new()
        .name("cairn-sqlite-writer".into())
        .spawn(move || {
            run(conn, rx);
            drop(stop_checkpoints);
            let _ = checkpoints.join();
        })
        .map_err(StorageError::Io)?;
    Ok((tx, handle))
}

/// How often the checkpointer copies committed WAL pages into the database.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(100);

/// The checkpointer: copies the WAL into the database file every
/// [`CHECKPOINT_EVERY`] until the writer stops (its sender dropped).
///
/// SQLite's automatic checkpoint runs inside the commit that crosses 1,000
/// WAL pages: that commit, and every put queued behind it, waits for ~4 MB
/// of page copies and an fsync of the database file. A PASSIVE checkpoint
/// on a connection of its own does the same work beside the writer without
/// blocking it (it copies what no reader still needs and leaves the rest
/// for next time).
///
/// A passive checkpoint never makes the WAL start over, though: SQLite
/// rewinds it only when a checkpoint has copied every page and no reader
/// still reads from it, and with searches and puts going on without a gap
/// there is always one. Measured at 100,000 memories being put and indexed,
/// the WAL grew to 4.5 GB, and a server restarted on it timed out replaying
/// it. So once the WAL holds [`WAL_RESTART_PAGES`], a RESTART checkpoint
/// waits (at most [`WAL_RESTART_WAIT`], holding new writes back meanwhile)
/// for the readers of old pages to finish, and the next write starts the
/// WAL from its beginning.
fn checkpoints(conn: Connection, stop: std::sync::mpsc::Receiver<()>) {
    let mut last_restart: Option<std::time::Instant> = None;
    loop {
        let stopping = !matches!(
            stop.recv_timeout(CHECKPOINT_EVERY),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout)
        );
        match checkpoint(&conn, "PASSIVE") {
            Ok(pages)
                if pages >= WAL_RESTART_PAGES
                    && last_restart.is_none_or(|at| at.elapsed() >= WAL_RESTART_BACKOFF) =>
            {
                last_restart = Some(std::time::Instant::now());
                if let Err(e) = restart(&conn) {
                    tracing::warn!(error = %e, wal.pages = pages, "WAL restart failed; trying again later");
                }
            }
            Ok(_) => {}
            Err(e) => tracing::warn!(error = %e, "WAL checkpoint failed; trying again later"),
        }
        if stopping {
            return;
        }
    }
}

/// WAL pages (4 KiB) past which the checkpointer makes the WAL start over:
/// 256 MiB (a restart holds writes back, so it should not come often).
const WAL_RESTART_PAGES: i64 = 65_536;
/// Size a restarted WAL file is cut back to.
const WAL_KEPT_BYTES: i64 = 64 << 20;
/// Longest a RESTART checkpoint waits for readers (and holds writers back).
const WAL_RESTART_WAIT: Duration = Duration::from_millis(250);
/// Least time between two RESTART checkpoints, so that a reader that keeps
/// old pages for long holds writers back a tenth of the time at most.
const WAL_RESTART_BACKOFF: Duration = Duration::from_millis(2500);

/// Runs a checkpoint of `mode`; answers the pages in the WAL.
fn checkpoint(conn: &Connection, mode: &str) -> rusqlite::Result<i64> {
    conn.query_row(&format!("PRAGMA wal_checkpoint({mode})"), [], |row| {
        row.get::<_, i64>(1)
    })
}

/// A RESTART checkpoint that gives up after [`WAL_RESTART_WAIT`] (to be tried again).
fn restart(conn: &Connection) -> rusqlite::Result<()> {
    conn.busy_timeout(WAL_RESTART_WAIT)?;
    let outcome = checkpoint(conn, "RESTART");
    conn.busy_timeout(Duration::from_secs(10))?;
    outcome.map(|_| ())
}

fn run(mut conn: Connection, mut rx: mpsc::Receiver<WriteCommand>) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    let mut stop = None;
    while stop.is_none() {
        let Some(first) = rx.blocking_recv() else {
            break;
        };
        batch.push(first);
        drain(&mut rx, &mut batch);
        if batch.len() < SMALL_BATCH {
            std::thread::sleep(Duration::from_micros(COMMIT_DELAY_US));
            drain(&mut rx, &mut batch);
        }
        if let Some(index) = batch
            .iter()
            .position(|c| matches!(c, WriteCommand::Shutdown(_)))
            && let WriteCommand::Shutdown(ack) = batch.remove(index)
        {
            stop = Some(ack);
        }
        // The background indexer's work commits after the rest, so a put
        // never waits for it.
        let (mut background, foreground): (Vec<_>, Vec<_>) = batch
            .drain(..)
            .partition(|c| matches!(c, WriteCommand::Dequeue(..)));
        batch.extend(foreground);
        commit(&mut conn, &mut batch);
        commit(&mut conn, &mut background);
    }
    drop(conn);
    if let Some(ack) = stop {
        let _ = ack.send(());
    }
}

/// Commits `batch` as one transaction and answers its commands; should the
/// transaction fail, runs them again one transaction each.
fn commit(conn: &mut Connection, batch: &mut Vec<WriteCommand>) {
    if batch.is_empty() {
        return;
    }
    match transaction(conn, batch) {
        Ok(outcomes) => {
            for (command, outcome) in batch.drain(..).zip(outcomes) {
                command.answer(Ok(outcome));
            }
        }
        Err(e) if batch.len() > 1 => {
            tracing::warn!(error = %e, commands = batch.len(), "batch failed; retrying its commands one by one");
            for command in batch.drain(..) {
                let outcome = transaction(conn, std::slice::from_ref(&command));
                command.answer(outcome.map(|mut o| o.remove(0)));
            }
        }
        Err(e) => {
            tracing::error!(error = %e, "metadata write failed");
            // A single command: it gets the error as it is (e.g. `Full` → 507).
            if let Some(command) = batch.pop() {
                command.answer(Err(e));
            }
        }
    }
}

fn drain(rx: &mut mpsc::Receiver<WriteCommand>, batch: &mut Vec<WriteCommand>) {
    while batch.len() < MAX_BATCH {
        match rx.try_recv() {
            Ok(command) => batch.push(command),
            Err(_) => break,
        }
    }
}

/// Runs `commands` in one transaction; on any error nothing of it stays.
fn transaction(
    conn: &mut Connection,
    commands: &[WriteCommand],
) -> Result<Vec<Outcome>, StorageError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut outcomes = Vec::with_capacity(commands.len());
    for command in commands {
        outcomes.push(match command {
            WriteCommand::Put(memory, _) => Outcome::Put(Box::new(put(&tx, memory)?)),
            WriteCommand::Delete { namespace, id, .. } => {
                Outcome::Delete(delete(&tx, namespace, id)?)
            }
            WriteCommand::Access(updates, _) => {
                access(&tx, updates)?;
                Outcome::Access
            }
            WriteCommand::Ledger(batch, _) => {
                super::ledger::write(&tx, batch)?;
                Outcome::Ledger
            }
            WriteCommand::Import(memory, _) => {
                Outcome::Import(super::portable::import(&tx, memory)?)
            }
            WriteCommand::Dequeue(hashes, _) => {
                super::search::dequeue(&tx, hashes)?;
                Outcome::Dequeue
            }
            WriteCommand::Admin(write, _) => Outcome::Admin(write(&tx)?),
            WriteCommand::Shutdown(_) => continue,
        });
    }
    tx.commit()?; // dropping an uncommitted transaction rolls it back
    Ok(outcomes)
}

fn delete(conn: &Connection, ns: &str, id: &str) -> Result<bool, StorageError> {
    let removed = conn
        .prepare_cached("DELETE FROM memories WHERE namespace = ?1 AND id = ?2")?
        .execute((ns, id))?;
    conn.prepare_cached("DELETE FROM memory_tags WHERE namespace = ?1 AND id = ?2")?
        .execute((ns, id))?;
    Ok(removed > 0)
}

fn access(conn: &Connection, updates: &[AccessUpdate]) -> Result<(), StorageError> {
    let mut statement = conn.prepare_cached(
        "UPDATE memories SET access_count = access_count + ?1, \
         last_accessed_at = MAX(COALESCE(last_accessed_at, 0), ?2) WHERE namespace = ?3 AND id = ?4",
    )?;
    for update in updates {
        statement.execute((update.count, update.at, &update.namespace, &update.id))?;
    }
    Ok(())
}
