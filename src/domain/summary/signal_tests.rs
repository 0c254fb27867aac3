//! The classifier on real lines of each kind, and on the words that must
//! not count.

use super::classify;
use crate::domain::summary::signal::Level;

fn level(line: &str) -> Option<Level> {
    classify(line.as_bytes())
}

fn all(lines: &[&str], want: Option<Level>) {
    for line in lines {
        assert_eq!(level(line), want, "{line:?}");
    }
}

#[test]
fn package_names_identifiers_paths_and_prose_are_not_flagged() {
    all(
        &[
            "ii  liberror-perl                             0.17029-2                      all          Perl module for error/exception handling in an OO-ish way",
            "ii  liberror-prone-java                       2.18.0-1                       all          Catch common Java mistakes as compile-time errors",
            "ii  libgpg-error0:amd64                       1.46-1                         amd64        GnuPG development runtime library",
            "ii  libasan8:amd64                            12.2.0-14+deb12u1              amd64        AddressSanitizer -- a fast memory error detector",
            "./src/errors:",
            "./logs/error.log",
            "-rw-r--r-- 1 root root 2 2026-11-24 19:16 error.log",
            "src/handlers/on_failure.rs",
            "tests/failures/test_error_paths.rs",
            "test tests::handles_error_case_on_empty_input ... ok",
            "test_error_message_is_clear (test_inventory.InventoryTest.test_error_message_is_clear) ... ok",
            "tests/test_cart.py::test_error_handling_rejects_zero_quantity PASSED     [  4%]",
            "Error handling in the shop service",
            "Fatal errors (a missing config file, an unreadable key) stop the process",
            "with exit status 1 before it listens. A panic inside a handler is caught by",
            "provider are wrapped in PaymentError and logged once at the edge; warnings",
            "Failover: when the primary database fails its health check three times, the",
            "<h1>Error handling</h1>",
            "<h2>Panics and fatal errors</h2>",
            "<style>.error { color: red } .fail { color: darkred }</style>",
            "<script>window.onerror = function (msg) { console.error(\"fatal\", msg); };</script>",
            "    \"status\": \"failed\",",
            "    \"error\": null",
            "For more information about this error, try `rustc --explain E0308`.",
            "Package libgpg-error-dev is already the newest version (1.46-1).",
            "Loading orders from errors-2026-11.csv",
            "starting worker (error_reporting=on)",
            "    at Object.readFileSync (node:fs:448:20)",
            "Found 2 errors in 2 files.",
            "Errors  Files",
            "2026-11-24T10:00:32.5000000Z Error budget check: 0.12% of requests failed (budget 1%)",
            "exit status 0",
            "Process completed with exit code 0.",
        ],
        None,
    );
}

#[test]
fn an_info_level_decides_whatever_the_message_says() {
    all(
        &[
            "2026-11-24 19:16:19,405 INFO etl.orders: processed 140 rows (error_rate=0.00, failover=disabled)",
            "2026-11-24 04:00:01,001 INFO  [pool-3-thread-1] c.a.s.billing.InvoiceJob - invoice 70001 sent (errorsAllowed=3, onFailure=retry)",
            "time=2026-11-24T09:00:01.001Z level=info msg=\"request done\" path=/api/errors/report status=200 error_count=0",
            "{\"ts\": \"2026-11-24T11:00:01Z\", \"level\": \"info\", \"msg\": \"job done\", \"errors\": 0}",
            "2026/11/24 08:31:09 [info] 29#29: *441 client 10.0.0.12 closed keepalive connection",
            "I1124 07:21:10.123456    4021 replica.go:120] applied entry 1000 (shard errors-7, failover=false)",
            "INFO child exited with code 1",
        ],
        None,
    );
}

#[test]
fn log_levels_are_read_where_logs_put_them() {
    all(
        &[
            "2026-11-24 19:16:19,403 ERROR etl.orders: row 137 could not be transformed",
            "2026-11-24 04:12:09,114 ERROR [pool-3-thread-7] c.a.s.billing.InvoiceJob - invoice 99120 not sent",
            "[2026-11-24 10:00:00] [ERROR] payment capture failed",
            "ERROR:root:could not open socket",
            "time=2026-11-24T09:00:01Z level=error msg=\"payment capture failed\"",
            "{\"ts\": \"2026-11-24T11:01:17Z\", \"level\": \"error\", \"msg\": \"export failed\"}",
            "2026/11/24 08:31:09 [error] 29#29: *441 connect() failed (111: Connection refused)",
            "2026/11/24 08:40:51 [crit] 30#30: *502 open() failed (28: No space left on device)",
            "2026-11-24T10:00:41.2000000Z ##[error]Process completed with exit code 1.",
            "Nov 24 06:07:02 web-3 shop-api[1804]: error: could not connect to redis",
            "E1124 07:21:33.448210    4021 replica.go:218] failed to apply snapshot 44",
            "F1124 07:21:33.448210    4021 main.go:12] cannot start",
            "E: Unable to locate package libfailsafe-java",
            "E       assert 100 == 90",
            "npm ERR! code ERESOLVE",
            "npm error code ERESOLVE",
            "#6 2.116 npm error Missing: react-error-boundary@4.0.13 from lock file",
            "#6 ERROR: process \"/bin/sh -c npm ci\" did not complete successfully: exit code: 1",
            "FATAL: disk quota exceeded on /var/lib/buildkite-agent/builds",
            "<pre>FATAL: disk quota exceeded on /var/lib/x",
            "fatal: not a git repository (or any of the parent directories): .git",
            "\x1b[31mERROR\x1b[0m connection reset",
        ],
        Some(Level::Error),
    );
    all(
        &[
            "2026-11-24 19:16:19,300 WARNING etl.orders: slow batch",
            "time=2026-11-24T09:00:01Z level=warn msg=\"slow query\"",
            "2026/11/24 08:14:22 [warn] 29#29: *118 an upstream response is buffered",
            "W: http://deb.example.org/debian/dists/bookworm/InRelease: Key is stored in legacy trusted.gpg keyring",
            "W1124 07:21:34.448901    4021 replica.go:230] falling back to full resync",
            "npm warn deprecated inflight@1.0.6: This module is not supported",
            "warning: unused variable: `budget`",
            "src/errors/total.rs:669:66: warning: unused variable: `budget`",
            "src/errors.ts(3,10): warning TS6133: 'x' is declared but its value is never read.",
        ],
        Some(Level::Warning),
    );
}

#[test]
fn test_runner_verdicts_are_failures() {
    all(
        &[
            "FAILED tests/test_cart.py::test_total_with_discount - assert 100 == 90",
            "tests/test_cart.py::test_total_with_discount FAILED                      [ 10%]",
            "test tests::total_with_discount ... FAILED",
            "test result: FAILED. 3 passed; 2 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.00s",
            "--- FAIL: TestTotalWithDiscount (0.00s)",
            "    --- FAIL: TestFailoverRetries/both_down (0.00s)",
            "    cart_test.go:42: total = 100, want 90",
            "FAIL",
            "FAIL\tgithub.com/acme/shop/cart\t0.014s",
            "FAIL src/cart/total.test.js",
            "    ✕ applies the discount (5 ms)",
            "test_stock_count (test_inventory.InventoryTest.test_stock_count) ... FAIL",
            "test_restock_raises (test_inventory.InventoryTest.test_restock_raises) ... ERROR",
            "FAIL: test_stock_count (test_inventory.InventoryTest.test_stock_count)",
            "FAILED (failures=1, errors=1)",
        ],
        Some(Level::Failed),
    );
}

#[test]
fn compiler_diagnostics_exceptions_panics_and_exit_statuses_are_errors() {
    all(
        &[
            "error[E0308]: mismatched types",
            "error: could not compile `rcart` (lib) due to 2 previous errors",
            "parse.c:8:43: error: expected ‘;’ before ‘return’",
            "src/warnings/emit.c:4:12: error: expected ‘;’ before ‘}’ token",
            "Broken.java:3: error: incompatible types: String cannot be converted to int",
            "src/api/errors.ts(14,7): error TS2322: Type 'string' is not assignable to type 'number'.",
            "main.c:1:10: fatal error: missing.h: No such file or directory",
            "ValueError: invalid literal for int() with base 10: 'twelve'",
            "json.decoder.JSONDecodeError: Expecting property name enclosed in double quotes",
            "KeyError: 'sku-404'",
            "tests/test_cart.py:15: AssertionError",
            "Exception in thread \"main\" java.lang.IllegalStateException: bad order quantity: x3",
            "Caused by: java.lang.NumberFormatException: For input string: \"x3\"",
            "Error: ENOENT: no such file or directory, open '/etc/app/config.json'",
            "thread 'main' panicked at src/main.rs:4:5:",
            "thread 'tests::parse_qty_of_words' (12315) panicked at src/lib.rs:20:50:",
            "panic: runtime error: invalid memory address or nil pointer dereference",
            "exit status 2",
            "Nov 24 06:07:03 web-3 systemd[1]: shop-api.service: Main process exited, code=exited, status=1/FAILURE",
            "make: *** [Makefile:3: parse] Error 1",
            "subprocess.CalledProcessError: Command '['make']' returned non-zero exit status 2.",
        ],
        Some(Level::Error),
    );
    all(
        &[
            "parse.c:4:12: warning: implicit declaration of function ‘atoi’ [-Wimplicit-function-declaration]",
            "warning: unused variable: `x`",
            "  /tmp/fx/py/tests/test_cart.py:30: DeprecationWarning: Cart.total(discount=) is deprecated",
        ],
        Some(Level::Warning),
    );
}

#[test]
fn odd_bytes_and_long_lines_are_judged_without_panicking() {
    assert_eq!(classify(b"\xff\xfeERROR: \xc3"), None);
    assert_eq!(classify("é".repeat(600).as_bytes()), None);
    assert_eq!(classify(b"<<<<"), None);
    assert_eq!(classify(b"E"), None);
    assert_eq!(
        classify(format!("ERROR {}", "é".repeat(100)).as_bytes()),
        Some(Level::Error)
    );
}
