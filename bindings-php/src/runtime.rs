//! The runtime and the connections of this PHP process.
//!
//! Both are created lazily on first use, never at module startup: PHP-FPM loads the extension
//! in its master process and forks the workers, and nothing that owns threads or sockets may
//! cross a fork. A process that finds itself with a different pid (a forked child) builds its
//! own. One connection per Redis URL (and connection settings) serves every `Crawlq\Queue`
//! object of the process, across requests.

use crate::errors::throw;
use crawlq::binding::progress::{Reporter, Reporting};
use crawlq::{Config, RedisExecutor};
use ext_php_rs::prelude::*;
use ext_php_rs::types::{ZendCallable, Zval};
use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use tokio::runtime::Runtime;

type ConnectionKey = (String, Option<String>, u128, u128);
/// Connections of one process, keyed by the pid that opened them (a forked child starts over).
type ProcessConnections = (u32, HashMap<ConnectionKey, Arc<RedisExecutor>>);
static CONNECTIONS: Mutex<Option<ProcessConnections>> = Mutex::new(None);

/// PHP runs one request at a time per process: a current-thread runtime driven by each call
/// is enough, and adds no threads to every FPM worker.
fn runtime() -> &'static Runtime {
    crawlq::binding::process::runtime(crawlq::binding::process::Flavor::CurrentThread)
}

/// Run a future to completion on this process's runtime.
pub fn block_on<F: Future>(fut: F) -> F::Output {
    runtime().block_on(fut)
}

/// Run a long call, handing each report it makes to `progress` (converted by `to_zval`)
/// between its bounded steps, outside the runtime. When `progress` throws, the call stops
/// there and the exception goes on to the caller.
pub fn with_progress<T, R, F, Fut>(
    progress: Option<&ZendCallable>,
    to_zval: impl Fn(&R) -> Zval,
    call: F,
) -> PhpResult<T>
where
    T: Send + 'static,
    R: Send + 'static,
    F: FnOnce(Reporter<R>) -> Fut,
    Fut: Future<Output = crawlq::Result<T>> + Send + 'static,
{
    let result = Reporting::new(call).drive(
        |call| call.next(runtime()),
        |report| match progress {
            // a thrown exception stays pending and reaches the caller unchanged
            Some(progress) => progress.try_call(vec![&to_zval(&report)]).map(drop),
            None => Ok(()),
        },
    )?;
    result.map_err(throw)
}

/// What tells one connection of the process from another: its URL and connection settings.
fn connection_key(url: &str, config: &Config) -> ConnectionKey {
    (
        url.to_string(),
        config.tls_ca_file.clone(),
        config.connect_timeout.as_millis(),
        config.command_timeout.as_millis(),
    )
}

/// The connection of this process for `url` with these connection settings.
pub fn connection(url: &str, config: &Config) -> crawlq::Result<Arc<RedisExecutor>> {
    let pid = std::process::id();
    let key = connection_key(url, config);
    {
        let mut cache = CONNECTIONS.lock().unwrap_or_else(|e| e.into_inner());
        if cache.as_ref().is_none_or(|(owner, _)| *owner != pid) {
            *cache = Some((pid, HashMap::new()));
        }
        if let Some(exec) = cache.as_ref().and_then(|(_, m)| m.get(&key)) {
            return Ok(exec.clone());
        }
    }
    let exec = Arc::new(block_on(RedisExecutor::connect(url, config))?);
    let mut cache = CONNECTIONS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((_, map)) = cache.as_mut() {
        map.insert(key, exec.clone());
    }
    Ok(exec)
}

/// Let go of this process's connection for `url` with these connection settings when no
/// queue uses it any more (`Queue::close`); the next use connects again.
pub fn drop_unused_connection(url: &str, config: &Config) {
    let pid = std::process::id();
    let key = connection_key(url, config);
    let mut cache = CONNECTIONS.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((owner, map)) = cache.as_mut()
        && *owner == pid
        && map
            .get(&key)
            .is_some_and(|exec| Arc::strong_count(exec) == 1)
    {
        map.remove(&key);
    }
}

/// Connections open in this process (for tests and diagnostics).
pub fn connection_count() -> usize {
    let pid = std::process::id();
    CONNECTIONS
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .filter(|(owner, _)| *owner == pid)
        .map_or(0, |(_, m)| m.len())
}
