//! Unit tests of the stack-trace summaries (Python, JVM, Rust, Go, Node).

use super::tests::of;

pub(super) const PYTHON_TRACE: &str = r#"Traceback (most recent call last):
  File "/app/manage.py", line 22, in <module>
    main()
  File "/app/manage.py", line 18, in main
    execute_from_command_line(sys.argv)
  File "/app/shop/importer.py", line 57, in load_prices
    price = Decimal(row["price"])
decimal.InvalidOperation: [<class 'decimal.ConversionSyntax'>]
"#;

#[test]
fn python_tracebacks_show_the_exception_and_innermost_frames() {
    let s = of(PYTHON_TRACE.as_bytes(), "text/plain");
    assert!(s.starts_with("kind: stack-trace (python) |"), "{s}");
    assert!(
        s.contains("message: decimal.InvalidOperation: [<class 'decimal.ConversionSyntax'>]"),
        "{s}"
    );
    assert!(
        s.contains("top frames:\nL6: File \"/app/shop/importer.py\", line 57, in load_prices"),
        "{s}"
    );
}

pub(super) const JAVA_TRACE: &str =
    "Exception in thread \"main\" java.lang.IllegalStateException: Order 42 has no lines
\tat com.shop.orders.OrderService.checkout(OrderService.java:118)
\tat com.shop.orders.OrderController.post(OrderController.java:54)
\tat java.base/jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(Native Method)
\t... 23 more
Caused by: java.sql.SQLException: Connection is closed
\tat com.zaxxer.hikari.pool.ProxyConnection.checkClosed(ProxyConnection.java:515)
\t... 25 more
";

#[test]
fn java_traces_show_the_exception_frames_and_cause() {
    let s = of(JAVA_TRACE.as_bytes(), "text/plain");
    assert!(s.starts_with("kind: stack-trace (jvm) |"), "{s}");
    assert!(s.contains("message: Exception in thread \"main\" java.lang.IllegalStateException: Order 42 has no lines"), "{s}");
    assert!(
        s.contains("root cause: java.sql.SQLException: Connection is closed"),
        "{s}"
    );
    assert!(
        s.contains("L2: at com.shop.orders.OrderService.checkout(OrderService.java:118)"),
        "{s}"
    );
}

pub(super) const RUST_PANIC: &str = "thread 'main' panicked at src/main.rs:14:22:
called `Option::unwrap()` on a `None` value
stack backtrace:
   0: rust_begin_unwind
             at /rustc/abc/library/std/src/panicking.rs:652:5
   1: core::panicking::panic_fmt
   2: core::option::unwrap_failed
   3: shop::load_config
             at ./src/main.rs:14:22
   4: shop::main
             at ./src/main.rs:5:5
note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.
";

#[test]
fn rust_panics_show_the_message_and_own_frames() {
    let s = of(RUST_PANIC.as_bytes(), "text/plain");
    assert!(s.starts_with("kind: stack-trace (rust) |"), "{s}");
    assert!(s.contains("message: thread 'main' panicked at src/main.rs:14:22 called `Option::unwrap()` on a `None` value"), "{s}");
    assert!(
        s.contains("top frames:\nL8: 3: shop::load_config\nL10: 4: shop::main"),
        "{s}"
    );
}

#[test]
fn go_and_node_traces_are_recognized() {
    let go = "panic: runtime error: index out of range [5] with length 3\n\ngoroutine 1 [running]:\nmain.pick(...)\n\t/app/main.go:12\nmain.main()\n\t/app/main.go:7 +0x1d\nexit status 2\n";
    let s = of(go.as_bytes(), "text/plain");
    assert!(s.starts_with("kind: stack-trace (go)"), "{s}");
    assert!(s.contains("L4: main.pick(...)"), "{s}");
    let node = "/app/server.js:10\nTypeError: Cannot read properties of undefined (reading 'id')\n    at handler (/app/server.js:10:21)\n    at Layer.handle (/app/node_modules/express/lib/router/layer.js:95:5)\n";
    let s = of(node.as_bytes(), "text/plain");
    assert!(s.starts_with("kind: stack-trace (node)"), "{s}");
    assert!(
        s.contains("message: TypeError: Cannot read properties of undefined"),
        "{s}"
    );
}
