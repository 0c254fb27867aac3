//! The `cairn` binary: `cairn serve` (the default) or `cairn openapi`.

use cairn::config::{Cli, Command, Config};
use clap::Parser;

/// jemalloc, one arena, with a background thread that hands memory freed for
/// a quarter of a second back to the system (`.cargo/config.toml`): glibc
/// kept every load peak.
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(Command::Openapi) => print_openapi(),
        Some(Command::JqWorker(args)) => return cairn::jq::worker(&args),
        Some(Command::Client(command)) => return cairn::cli::run(*command).await,
        Some(Command::Serve(config)) => serve(*config).await,
        None => serve(cli.serve).await,
    };
    match result {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cairn: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

async fn serve(config: Config) -> anyhow::Result<()> {
    init_tracing(&config.log_format);
    cairn::app::run(config).await
}

fn print_openapi() -> anyhow::Result<()> {
    println!("{}", cairn::http::openapi_document().to_pretty_json()?);
    Ok(())
}

fn init_tracing(format: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info,sqlx=warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        // Colour only for a terminal: a log file gets plain text.
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()));
    if format == "json" {
        builder.json().flatten_event(true).init();
    } else {
        builder.init();
    }
}
