//! What the two HTTP commands (the exporter, the web console) share: listening, headers, and
//! running until Ctrl-C or SIGTERM.

use crate::error::CliError;
use std::sync::Arc;

/// A server on `address` (port 0: a free one) and the address it got, to print.
pub fn listen(address: &str) -> Result<(Arc<tiny_http::Server>, String), CliError> {
    let server = tiny_http::Server::http(address)
        .map_err(|e| CliError::Usage(format!("cannot listen on {address}: {e}")))?;
    let bound = server
        .server_addr()
        .to_ip()
        .map_or(address.to_string(), |a| a.to_string());
    Ok((Arc::new(server), bound))
}

pub fn header(name: &str, value: &str) -> tiny_http::Header {
    tiny_http::Header::from_bytes(name, value).expect("a valid header")
}

/// Wait for Ctrl-C or SIGTERM (a container stopping: status 0), or for the `threads` threads
/// serving the requests (`worker`) to end (an error), then unblock each of them.
pub async fn until_stopped(
    server: &tiny_http::Server,
    mut worker: tokio::task::JoinHandle<()>,
    threads: usize,
) -> Result<u8, CliError> {
    let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .map_err(|e| CliError::io("installing the SIGTERM handler", e))?;
    let ended = tokio::select! {
        _ = tokio::signal::ctrl_c() => Ok(0),
        _ = terminate.recv() => Ok(0),
        joined = &mut worker => match joined {
            Ok(()) => Ok(0),
            Err(e) => Err(CliError::io("the HTTP server stopped", std::io::Error::other(e))),
        },
    };
    for _ in 0..threads {
        server.unblock();
    }
    ended
}
