//! Unit tests of what summaries flag and quote on failing runs: compiler
//! output, package lists full of `error` names, tracebacks inside logs,
//! long lines.

use super::tests::of;

#[test]
fn compilers_are_recognized_by_their_diagnostics() {
    use super::detect::compiler;
    assert_eq!(compiler("error[E0308]: mismatched types"), Some("rustc"));
    assert_eq!(
        compiler("   Compiling rcart v0.1.0 (/tmp/rcart)"),
        Some("rustc")
    );
    assert_eq!(
        compiler("parse.c:8:43: error: expected ‘;’ before ‘return’"),
        Some("gcc")
    );
    assert_eq!(
        compiler("Broken.java:3: error: incompatible types"),
        Some("javac")
    );
    assert_eq!(
        compiler("src/api/errors.ts(14,7): error TS2322: Type 'string'"),
        Some("tsc")
    );
    assert_eq!(
        compiler("./main.go:12:2: error: undefined: x"),
        Some("go build")
    );
    assert_eq!(compiler("src/errors/mod.rs"), None);
    assert_eq!(compiler("Compiling the error report"), None);
}

#[test]
fn a_package_list_flags_nothing() {
    let mut dpkg = String::from("Desired=Unknown/Install/Remove/Purge/Hold\n");
    for name in [
        "liberror-perl",
        "liberror-prone-java",
        "libgpg-error0",
        "libfailover",
    ] {
        dpkg.push_str(&format!(
            "ii  {name:<40} 1.0-1  all  Perl module for error/exception handling, fatal-safe\n"
        ));
    }
    for i in 0..40 {
        dpkg.push_str(&format!("ii  libfoo{i:<34} 1.0-1  amd64  a library\n"));
    }
    let s = of(dpkg.as_bytes(), "text/plain");
    assert!(!s.contains("errors:") && !s.contains("failed:"), "{s}");
    assert!(s.contains("no structure recognized: head and tail"), "{s}");
}

#[test]
fn a_traceback_in_a_log_shows_its_exception_and_where_it_was_raised() {
    let mut log = String::new();
    for i in 0..30 {
        log.push_str(&format!(
            "2026-11-24 10:00:{i:02},000 INFO job: row {i} ok (error_rate=0)\n"
        ));
    }
    log.push_str("2026-11-24 10:00:30,000 ERROR job: row 30 failed\n");
    log.push_str("Traceback (most recent call last):\n");
    log.push_str("  File \"/srv/job.py\", line 16, in <module>\n    transform(r)\n");
    log.push_str("  File \"/srv/job.py\", line 6, in transform\n    return float(row)\n");
    log.push_str("ValueError: could not convert string to float: 'n/a'\n");
    log.push_str("2026-11-24 10:00:31,000 INFO job: done\n");
    let s = of(log.as_bytes(), "text/plain");
    assert!(s.starts_with("kind: log |"), "{s}");
    assert!(
        s.contains("L37: ValueError: could not convert string to float: 'n/a'"),
        "{s}"
    );
    assert!(
        s.contains("raised at:\nL35: File \"/srv/job.py\", line 6, in transform"),
        "{s}"
    );
    assert!(s.contains("lines by level: 2 error"), "{s}");
}

#[test]
fn quoted_lines_are_whole_up_to_the_cap_and_cut_lines_are_marked() {
    let planted = "FATAL: disk quota exceeded on /var/lib/buildkite-agent/builds/node-7/acme/shop/target (used 50.0 GiB of 50.0 GiB)";
    let mut page =
        String::from("<!DOCTYPE html><html><head><title>Build</title></head><body>\n<pre>\n");
    for i in 0..200 {
        page.push_str(&format!("[build] step {i} fine\n"));
    }
    page.push_str(planted);
    page.push('\n');
    let long = format!("ERROR: {}", "x".repeat(400));
    page.push_str(&long);
    page.push_str("\n</pre></body></html>\n");
    let s = of(page.as_bytes(), "text/html");
    assert!(s.contains(&format!("L203: {planted}\n")), "{s}");
    let cut = s
        .lines()
        .find(|l| l.starts_with("L204: ERROR: xxx"))
        .unwrap_or_default();
    assert!(cut.ends_with('…'), "{s}");
    assert!(cut.chars().count() > 100, "{s}");
}
