//! `bare-endpoint --listen 127.0.0.1:PORT`: serves the bare axum JSON baseline of the HTTP
//! benchmark on a multi-threaded tokio runtime (one worker per core, like `slipverify`).

use clap::Parser;

#[derive(Parser)]
#[command(
    name = "bare-endpoint",
    about = "Bare axum JSON endpoint (benchmark baseline)"
)]
struct Cli {
    #[arg(long, default_value = "127.0.0.1:8090")]
    listen: String,
}

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let cli = Cli::parse();
    let listener = tokio::net::TcpListener::bind(&cli.listen).await?;
    eprintln!("bare-endpoint listening on {}", listener.local_addr()?);
    axum::serve(listener, bench::bare_router())
        .with_graceful_shutdown(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await
}
