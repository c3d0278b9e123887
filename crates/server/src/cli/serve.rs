//! `slipverify serve`: the flags that override `[server]`, then the HTTP API until a signal.

use server::App;
use std::process::ExitCode;

/// `serve`'s flags win over the environment and the file.
pub(crate) fn override_sources(
    mut sources: config::Sources,
    listen: Option<&str>,
    metrics_listen: Option<&str>,
    trusted_proxy: &[String],
    admin_token: Option<&str>,
) -> config::Sources {
    if let Some(l) = listen {
        sources = sources.set("server.listen", l);
    }
    if let Some(l) = metrics_listen {
        sources = sources.set("metrics.listen", l);
    }
    if !trusted_proxy.is_empty() {
        sources = sources.set("server.trusted_proxies", trusted_proxy);
    }
    if let Some(t) = admin_token {
        sources = sources.set("server.admin_token", t);
    }
    sources
}

pub(crate) async fn run(app: &App, cfg: &config::Config, demo: bool) -> anyhow::Result<ExitCode> {
    let listen = cfg.server.listen.clone();
    if app.services.admin_api_enabled() {
        tracing::warn!("admin API enabled at /admin");
    }
    if !cfg.server.trusted_proxies.is_empty() {
        tracing::info!(proxies = ?app.services.trusted_proxies().to_strings(), "trusting X-Forwarded-For from these peers");
    }
    let listener = edge::listen(&listen)
        .await
        .map_err(|e| anyhow::anyhow!("cannot listen on {listen}: {e}"))?;
    let addr = listener.local_addr()?;
    tracing::info!(%addr, backend = app.store_backend(), "slipverify listening");
    let metrics = match &app.metrics_listen {
        Some(a) => Some(server::metrics_listener::bind(a).await?),
        None => None,
    };
    if demo {
        let d = server::demo::prepare(app).await?;
        // A closed stdout (e.g. piped into `head`) must not take the server down.
        let banner = server::demo::banner(&d, &format!("http://{addr}"));
        let _ = std::io::Write::write_all(&mut std::io::stdout(), banner.as_bytes());
    }
    server::serve_all(
        listener,
        metrics,
        app,
        std::sync::Arc::default(),
        shutdown_signal(),
    )
    .await?;
    Ok(ExitCode::SUCCESS)
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        if let Ok(mut s) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        {
            s.recv().await;
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = term => {},
    }
}
