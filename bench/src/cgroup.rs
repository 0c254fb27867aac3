//! A memory cgroup for the server a benchmark starts: the limit a container
//! runtime sets (`docker run --memory`, a Kubernetes memory limit), on
//! cgroup v2 (`memory.max`) or v1 (`memory.limit_in_bytes`), whichever
//! this machine mounts with its memory controller. What the kernel then
//! did is read back: the peak charge, how often the limit was reached
//! (each time the kernel reclaimed within the group) and OOM kills.
//!
//! The group is charged for the process's heap and for the page cache of
//! the files it reads and writes (its blobs, SQLite, the search index), as
//! a container is; the kernel takes clean file pages back before it
//! would kill for memory.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};

/// A memory cgroup made for one run, removed when dropped.
pub struct MemoryGroup {
    dir: PathBuf,
    v2: bool,
}

/// What the kernel did in the group.
#[derive(Clone, Copy, Debug, Default)]
pub struct GroupReading {
    /// The limit, bytes.
    pub limit: u64,
    /// The highest charge seen, bytes (heap and page cache).
    pub peak: u64,
    /// Times the charge reached the limit (v1 `memory.failcnt`, v2
    /// `memory.events` `max`): each a reclaim inside the group.
    pub at_limit: u64,
    /// Processes the kernel killed for memory in the group.
    pub oom_kills: u64,
}

impl MemoryGroup {
    /// A new group named `name` limited to `limit` bytes.
    pub fn create(name: &str, limit: u64) -> anyhow::Result<Self> {
        let v2_root = Path::new("/sys/fs/cgroup");
        let v2 = std::fs::read_to_string(v2_root.join("cgroup.controllers"))
            .is_ok_and(|c| c.split_whitespace().any(|c| c == "memory"));
        let dir = if v2 {
            // The controller must be enabled for the root's children.
            let _ = std::fs::write(v2_root.join("cgroup.subtree_control"), "+memory");
            v2_root.join(name)
        } else {
            let v1_root = Path::new("/sys/fs/cgroup/memory");
            if !v1_root.join("memory.limit_in_bytes").exists() {
                bail!("no memory cgroup controller mounted (neither v2 nor v1)");
            }
            v1_root.join(name)
        };
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {} (root is needed)", dir.display()))?;
        let group = Self { dir, v2 };
        let limit_file = if v2 {
            "memory.max"
        } else {
            "memory.limit_in_bytes"
        };
        group.write(limit_file, &limit.to_string())?;
        if v2 {
            // No swap: the limit holds for the memory itself.
            let _ = group.write("memory.swap.max", "0");
        }
        Ok(group)
    }

    /// The file a process writes its pid to, to join the group.
    pub fn procs(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// What the kernel did in the group so far.
    pub fn read(&self) -> anyhow::Result<GroupReading> {
        if self.v2 {
            let events = self.read_file("memory.events")?;
            Ok(GroupReading {
                limit: self.number("memory.max").unwrap_or(u64::MAX),
                // memory.peak came with Linux 5.19.
                peak: self.number("memory.peak").unwrap_or(0),
                at_limit: keyed(&events, "max"),
                oom_kills: keyed(&events, "oom_kill"),
            })
        } else {
            let oom = self.read_file("memory.oom_control")?;
            Ok(GroupReading {
                limit: self.number("memory.limit_in_bytes")?,
                peak: self.number("memory.max_usage_in_bytes")?,
                at_limit: self.number("memory.failcnt")?,
                oom_kills: keyed(&oom, "oom_kill"),
            })
        }
    }

    fn number(&self, file: &str) -> anyhow::Result<u64> {
        let text = self.read_file(file)?;
        text.trim()
            .parse()
            .with_context(|| format!("{file}: not a number: {text:?}"))
    }

    fn read_file(&self, file: &str) -> anyhow::Result<String> {
        let path = self.dir.join(file);
        std::fs::read_to_string(&path).with_context(|| format!("cannot read {}", path.display()))
    }

    fn write(&self, file: &str, value: &str) -> anyhow::Result<()> {
        let path = self.dir.join(file);
        std::fs::write(&path, value).with_context(|| format!("cannot write {}", path.display()))
    }
}

impl Drop for MemoryGroup {
    fn drop(&mut self) {
        // Empty once its process has exited; a group still in use stays.
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// The number after `key` in a flat-keyed cgroup file (`key value` lines:
/// `memory.events`, `memory.oom_control`); 0 when the key is not there.
fn keyed(text: &str, key: &str) -> u64 {
    text.lines()
        .find_map(|line| {
            let (name, value) = line.split_once(' ')?;
            (name == key).then(|| value.trim().parse().ok())?
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::keyed;

    #[test]
    fn keyed_files_are_read_by_whole_keys() {
        // cgroup v2 memory.events: `max` must not match `oom_kill` or `low`.
        let events = "low 0\nhigh 0\nmax 1207\noom 2\noom_kill 1\noom_group_kill 0\n";
        assert_eq!(keyed(events, "max"), 1207);
        assert_eq!(keyed(events, "oom_kill"), 1);
        assert_eq!(keyed(events, "oom"), 2);
        // cgroup v1 memory.oom_control.
        let oom_control = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
        assert_eq!(keyed(oom_control, "oom_kill"), 3);
        assert_eq!(keyed("under_oom 0\n", "oom_kill"), 0);
    }
}
