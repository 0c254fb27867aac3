//! The layers' invariants (ARCHITECTURE.md): dependencies point down
//! (http → domain → storage). Storage and metrics name nothing of the
//! domain; the domain names no web framework, database driver or HTTP client;
//! the shared nouns (`src/model`) name nothing of the crate.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.map(|e| e.path()).unwrap_or_default();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `(file, line number, line)` of every line of code (comments aside) under
/// `roots` that names one of `words` as a path (`word::`), test code included.
fn offenders(roots: &[&str], words: &[&str]) -> Vec<String> {
    let base = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut files = Vec::new();
    for root in roots {
        let path = base.join(root);
        if path.is_dir() {
            rust_files(&path, &mut files);
        } else if path.is_file() {
            files.push(path);
        }
    }
    assert!(!files.is_empty(), "no sources under {roots:?}");
    let mut found = Vec::new();
    for file in files {
        if file.to_string_lossy().ends_with("tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        for (n, line) in lines.iter().enumerate() {
            // An inline test module runs to the end of the file.
            if line.trim() == "#[cfg(test)]"
                && lines
                    .get(n + 1)
                    .is_some_and(|next| next.trim_end().ends_with('{'))
            {
                break;
            }
            let code = line.split("//").next().unwrap_or("");
            if words.iter().any(|w| code.contains(&format!("{w}::"))) {
                found.push(format!("{}:{}: {}", file.display(), n + 1, line.trim()));
            }
        }
    }
    found
}

#[test]
fn storage_and_metrics_name_nothing_of_the_domain() {
    let found = offenders(
        &["src/storage", "src/metrics.rs", "src/metrics"],
        &["crate::domain"],
    );
    assert!(
        found.is_empty(),
        "arrows running back up:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_shared_nouns_name_nothing_of_the_crate() {
    let found = offenders(&["src/model"], &["crate", "super"]);
    assert!(
        found.is_empty(),
        "src/model is a leaf every layer uses; it reaches into one:\n{}",
        found.join("\n")
    );
}

#[test]
fn the_domain_names_no_framework_driver_or_http_client() {
    let found = offenders(&["src/domain"], &["axum", "sqlx", "reqwest", "crate::http"]);
    assert!(
        found.is_empty(),
        "the domain reaches outward:\n{}",
        found.join("\n")
    );
}

/// The modules of `src/http` that hold route handlers (a `#[utoipa::path`).
fn handler_modules() -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/http");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.map(|e| e.path()).unwrap_or_default();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if path.extension().is_some_and(|e| e == "rs") && text.contains("#[utoipa::path") {
            let name = path.file_stem().unwrap_or_default().to_string_lossy();
            found.push(name.into_owned());
        }
    }
    found
}

/// The first path segments named after `crate::http::` in `code` (groups
/// may span lines): `crate::http::views::X` → `views`;
/// `crate::http::{search, stats}` → both.
fn http_modules_named(code: &str) -> Vec<String> {
    let mut named = Vec::new();
    for rest in code.split("crate::http::").skip(1) {
        let items: Vec<&str> = match rest.strip_prefix('{') {
            Some(group) => group.split('}').next().unwrap_or("").split(',').collect(),
            None => vec![rest],
        };
        for item in items {
            let segment: String = item
                .trim()
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            if !segment.is_empty() {
                named.push(segment);
            }
        }
    }
    named
}

#[test]
fn mcp_tools_call_the_domain_not_the_rest_handlers() {
    let handlers = handler_modules();
    assert!(
        handlers.iter().any(|h| h == "search") && handlers.iter().any(|h| h == "memories"),
        "the handler modules were not found: {handlers:?}"
    );
    assert_eq!(
        http_modules_named("use crate::http::{search, stats::view};"),
        ["search", "stats"]
    );
    assert_eq!(
        http_modules_named(
            "use crate::http::views::{\n    A, B,\n};\nuse crate::http::{\n    error,\n    memories,\n};"
        ),
        ["views", "error", "memories"]
    );
    let mut files = Vec::new();
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("src/http/mcp"),
        &mut files,
    );
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap_or_default();
        let code: Vec<&str> = text
            .lines()
            .map(|line| line.split("//").next().unwrap_or(""))
            .collect();
        for module in http_modules_named(&code.join("\n")) {
            if handlers.contains(&module) {
                found.push(format!("{} names crate::http::{module}", file.display()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "MCP reaches into REST handlers:\n{}",
        found.join("\n")
    );
}
