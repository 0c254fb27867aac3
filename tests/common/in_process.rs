//! A Cairn application built and served inside the test process, on a free
//! loopback port, for tests that talk to it over real HTTP (an SDK, a
//! Python client, a stream) rather than through the router directly.

#![allow(dead_code)]

use cairn::app::App;
use cairn::config::Config;

/// The served application; dropping it stops the server (its data
/// directory goes with it).
pub struct Listening {
    /// `http://127.0.0.1:<port>`.
    pub base: String,
    /// The port it listens on.
    pub port: u16,
    _dir: tempfile::TempDir,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Builds the application over a fresh data directory with the settings
/// `configure` adjusts, and serves it until dropped.
pub async fn listen(configure: impl FnOnce(&mut Config)) -> Listening {
    let dir = tempfile::tempdir().unwrap();
    let mut config = Config::with_data_dir(dir.path());
    configure(&mut config);
    let app = App::build(&config).await.unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let router = app.router();
    let task = tokio::spawn(async move {
        let _app = app;
        cairn::http::serve(listener, router, std::future::pending())
            .await
            .unwrap();
    });
    Listening {
        base: format!("http://127.0.0.1:{port}"),
        port,
        _dir: dir,
        task,
    }
}
