//! jq programs over JSON content, with the `jaq` crates.
//!
//! A program runs in a worker process (`cairn jq-worker`), never in the
//! server: jaq has no step or memory limit, and `def f: f; f` or
//! `[range(1e12)]` would hold a server thread or its memory for good. The
//! worker caps its own CPU time and address space with rlimits before it
//! reads anything, and the server kills it at a deadline (see
//! `domain::memories::jq`). The server only compiles the program first, so a
//! syntax error is answered without a process.
//!
//! The worker reads the content from stdin as a stream of whitespace-separated
//! JSON values (one document, or JSON lines, as jq reads its input), runs
//! the program on each, and prints one JSON object: `{"results": [...],
//! "truncated": bool, "inputs": n}` or `{"error": {"code", "message"}}`.
//! Values keep their keys in input order.

use std::io::{Read, Write};

use clap::Args;
use hifijson::token::Lex;
use jaq_core::load::{Arena, File, Loader};
use jaq_core::{Compiler, Ctx, RcIter};
use jaq_json::Val;

/// Longest program accepted, in bytes.
pub const MAX_PROGRAM_BYTES: usize = 4096;

/// A compiled jq program.
pub type Filter = jaq_core::Filter<jaq_core::Native<Val>>;

/// Compiles `program` with jq's standard library, or says why it cannot
/// (jaq's messages, with the offending text).
pub fn compile(program: &str) -> Result<Filter, String> {
    if program.len() > MAX_PROGRAM_BYTES {
        return Err(format!(
            "the program is longer than {MAX_PROGRAM_BYTES} bytes"
        ));
    }
    let loader = Loader::new(jaq_std::defs().chain(jaq_json::defs()));
    let arena = Arena::default();
    let modules = loader
        .load(
            &arena,
            File {
                code: program,
                path: (),
            },
        )
        .map_err(|errors| describe(program, &format!("{errors:?}")))?;
    Compiler::default()
        .with_funs(jaq_std::funs().chain(jaq_json::funs()))
        .compile(modules)
        .map_err(|errors| describe(program, &format!("{errors:?}")))
}

fn describe(program: &str, errors: &str) -> String {
    let errors: String = errors.chars().take(600).collect();
    format!("cannot compile the jq program `{program}`: {errors}")
}

/// Arguments of the hidden `cairn jq-worker` subcommand.
#[derive(Args, Clone, Debug)]
pub struct WorkerArgs {
    /// Stop once the printed results exceed this many bytes.
    #[arg(long)]
    pub max_output_bytes: usize,
    /// Most results.
    #[arg(long)]
    pub max_results: usize,
    /// CPU seconds before the kernel stops the worker (RLIMIT_CPU).
    #[arg(long)]
    pub cpu_seconds: u64,
    /// Address space of the worker (RLIMIT_AS).
    #[arg(long)]
    pub memory_bytes: u64,
    /// The program.
    pub program: String,
}

/// Runs the worker: limits itself, reads stdin, prints its answer.
pub fn worker(args: &WorkerArgs) -> std::process::ExitCode {
    let answer = limit_self(args)
        .and_then(|()| {
            let mut input = Vec::new();
            std::io::stdin()
                .read_to_end(&mut input)
                .map_err(|e| ("read_failed", e.to_string()))?;
            evaluate(args, &input)
        })
        .unwrap_or_else(|(code, message)| {
            serde_json::json!({"error": {"code": code, "message": message}}).to_string()
        });
    let mut out = std::io::stdout().lock();
    match out.write_all(answer.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(_) => std::process::ExitCode::FAILURE,
    }
}

type Failure = (&'static str, String);

fn limit_self(args: &WorkerArgs) -> Result<(), Failure> {
    use rustix::process::{Resource, Rlimit, setrlimit};
    let limits = [
        (Resource::Cpu, args.cpu_seconds),
        (Resource::As, args.memory_bytes),
    ];
    for (resource, value) in limits {
        let limit = Rlimit {
            current: Some(value),
            maximum: Some(value),
        };
        setrlimit(resource, limit).map_err(|e| ("limit_failed", e.to_string()))?;
    }
    Ok(())
}

/// Runs the program on every JSON value of `input`; the answer as JSON text.
fn evaluate(args: &WorkerArgs, input: &[u8]) -> Result<String, Failure> {
    let filter = compile(&args.program).map_err(|message| ("invalid_program", message))?;
    let mut lexer = hifijson::SliceLexer::new(input);
    let mut results: Vec<String> = Vec::new();
    let (mut bytes, mut inputs, mut truncated) = (0usize, 0u64, false);
    'values: while let Some(token) = lexer.ws_token() {
        let value = Val::parse(token, &mut lexer).map_err(|e| {
            let at = input.len() - lexer.as_slice().len();
            let line = 1 + memchr::memchr_iter(b'\n', &input[..at]).count();
            (
                "not_json",
                format!("the content is not JSON near line {line} (byte {at}): {e}"),
            )
        })?;
        inputs += 1;
        let no_inputs = RcIter::new(core::iter::empty());
        for output in filter.run((Ctx::new([], &no_inputs), value)) {
            let output = output.map_err(|e| ("jq_error", format!("input {inputs}: {e}")))?;
            let text = output.to_string();
            if results.len() >= args.max_results || bytes + text.len() > args.max_output_bytes {
                truncated = true;
                break 'values;
            }
            bytes += text.len() + 1;
            results.push(text);
        }
    }
    Ok(format!(
        "{{\"results\":[{}],\"truncated\":{truncated},\"inputs\":{inputs}}}",
        results.join(",")
    ))
}
