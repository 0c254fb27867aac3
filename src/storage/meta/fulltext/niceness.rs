//! The index's own threads (tantivy's indexing, merge and segment-update
//! threads) run below the requests: on a small machine a put's or a proxied
//! exchange's own work then runs first and the index catches up in the
//! gaps. `proxy_bench`'s ten new 50 KB pieces per request spent more than
//! half the machine's CPU in these threads, on the same two cores as the
//! requests (bench/REPORT.md, "LLM proxy").
//!
//! tantivy names its threads but lets no one set their priority, and it
//! starts its indexing thread afresh at each commit, so after opening the
//! writer and after each commit the process's threads are read from
//! `/proc/self/task` and those of the index that are not below yet are
//! lowered (Linux: a thread's niceness is its own). Elsewhere, or where
//! niceness cannot be changed, they keep the usual priority.

use rustix::process::{Pid, getpriority_process, setpriority_process};

/// Their niceness: at 19 a thread gets about 1.5 % of a core's share
/// against a busy one, so it runs on the cores the requests leave idle —
/// between an agent's model calls, nearly all of them. Under load that
/// fills both cores the index falls behind rather than slowing the
/// requests; what it holds meanwhile stays bounded (a commit is due after
/// 32 MiB of new text and waits for the writer's queue). At 5, a third of
/// a core's share, `proxy_bench`'s ten new 50 KB pieces per request took
/// ~19 ms p50 against ~16 ms at 19, and a put was searchable under four
/// back-to-back searchers at p99 78 ms against 101 ms (target < 250 ms;
/// bench/REPORT.md, "LLM proxy" notes of 2026-12-02).
const NICENESS: i32 = 19;

/// The names (as `/proc` shows them, cut to 15 bytes) of tantivy's threads.
const INDEX_THREADS: [&str; 4] = [
    "thrd-tantivy-in",
    "merge_thread_",
    "segment_update",
    "docstore-compr",
];

/// Lowers the priority of the index's threads that do not have it yet.
pub(super) fn lower_index_threads() {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return;
    };
    for task in tasks.flatten() {
        let Some(pid) = task
            .file_name()
            .to_str()
            .and_then(|tid| tid.parse::<i32>().ok())
            .and_then(Pid::from_raw)
        else {
            continue;
        };
        let Ok(name) = std::fs::read_to_string(task.path().join("comm")) else {
            continue;
        };
        if !INDEX_THREADS.iter().any(|prefix| name.starts_with(prefix)) {
            continue;
        }
        if getpriority_process(Some(pid)).is_ok_and(|niceness| niceness >= NICENESS) {
            continue;
        }
        if let Err(e) = setpriority_process(Some(pid), NICENESS) {
            tracing::debug!(error = %e, "an index thread keeps the usual priority");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_named_as_the_index_names_its_threads_is_lowered() {
        let (tx, rx) = std::sync::mpsc::channel();
        let (done_tx, done_rx) = std::sync::mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("merge_thread_9".into())
            .spawn(move || {
                let before = getpriority_process(None).unwrap_or_default();
                tx.send(before).unwrap_or_default();
                done_rx.recv().unwrap_or_default();
                getpriority_process(None).unwrap_or_default()
            })
            .unwrap();
        let before = rx.recv().unwrap();
        lower_index_threads();
        done_tx.send(()).unwrap();
        let after = thread.join().unwrap();
        assert_eq!(after, before.max(NICENESS));
        // Other threads (this test's own) keep theirs.
        assert_eq!(getpriority_process(None).unwrap(), before);
    }
}
