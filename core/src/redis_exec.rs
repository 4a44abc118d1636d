//! The native executor: the `redis` crate over tokio. One auto-reconnecting multiplexed
//! connection for scripts, and a small pool of separate connections for blocking waits.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::ops::{Reply, ScriptCall};
use crate::queue::{Executor, Queue};
use redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection};
use redis::{AsyncConnectionConfig, ErrorKind, RedisError, ServerErrorKind};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The `redis` crate this executor is built on, for tools that also send plain commands
/// (see [`RedisExecutor::connection`]).
pub use redis;

/// Idle blocking connections kept for reuse.
const BLOCKING_POOL: usize = 16;

/// Runs scripts on a Redis server (TCP, TLS with `rediss://`, or a unix socket).
pub struct RedisExecutor {
    client: redis::Client,
    manager: ConnectionManager,
    blocking: Arc<Mutex<Vec<MultiplexedConnection>>>,
    connect_timeout: Duration,
    command_timeout: Duration,
    started: Instant,
}

impl std::fmt::Debug for RedisExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisExecutor")
            .field("server", &self.client.get_connection_info().addr())
            .finish()
    }
}

impl RedisExecutor {
    /// Connect to `url` (`redis://[:password@]host[:port][/db]`, `rediss://...` for TLS,
    /// `unix:///path/to/socket`). Fails with [`Error::Unavailable`] when the server cannot be
    /// reached within `connect_timeout`.
    pub async fn connect(url: &str, config: &Config) -> Result<RedisExecutor> {
        let client = match &config.tls_ca_file {
            Some(path) => {
                let root_cert = std::fs::read(path)
                    .map_err(|e| Error::Config(format!("tls_ca_file {path:?}: {e}")))?;
                install_tls_provider();
                redis::Client::build_with_tls(
                    url,
                    redis::TlsCertificates {
                        client_tls: None,
                        root_cert: Some(root_cert),
                    },
                )
            }
            None => {
                if url.starts_with("rediss://") {
                    install_tls_provider();
                }
                redis::Client::open(url)
            }
        }
        .map_err(|e| Error::Config(format!("redis URL {}: {e}", redacted(url))))?;
        let manager_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.connect_timeout))
            .set_response_timeout(Some(config.command_timeout))
            .set_number_of_retries(3)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(Duration::from_secs(1));
        let manager = ConnectionManager::new_with_config(client.clone(), manager_config)
            .await
            .map_err(|e| to_error(e, &format!("connecting to {}", redacted(url))))?;
        Ok(RedisExecutor {
            client,
            manager,
            blocking: Arc::default(),
            connect_timeout: config.connect_timeout,
            command_timeout: config.command_timeout,
            started: Instant::now(),
        })
    }

    /// The executor's auto-reconnecting connection, for plain commands outside the queue's
    /// scripts on the same server (the CLI's `import-list` moves items of a foreign list with
    /// it). Queue state must only change through the scripts.
    ///
    /// ```no_run
    /// # async fn demo() -> crawlq::Result<()> {
    /// use crawlq::redis_exec::{RedisExecutor, redis};
    /// let exec = RedisExecutor::connect("redis://127.0.0.1:6379/0", &crawlq::Config::default()).await?;
    /// let mut conn = exec.connection();
    /// let len: u64 = redis::cmd("LLEN").arg("old-queue").query_async(&mut conn).await
    ///     .map_err(|e| crawlq::redis_exec::to_error(e, "LLEN"))?;
    /// # Ok(()) }
    /// ```
    pub fn connection(&self) -> ConnectionManager {
        self.manager.clone()
    }

    async fn eval_once(&self, call: &ScriptCall) -> redis::RedisResult<redis::Value> {
        let mut conn = self.manager.clone();
        let mut evalsha = redis::cmd("EVALSHA");
        evalsha
            .arg(call.script.sha1())
            .arg(call.keys.len())
            .arg(&*call.keys)
            .arg(&call.args);
        match evalsha.query_async(&mut conn).await {
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                let mut eval = redis::cmd("EVAL");
                eval.arg(call.script.source())
                    .arg(call.keys.len())
                    .arg(&*call.keys)
                    .arg(&call.args);
                eval.query_async(&mut conn).await
            }
            other => other,
        }
    }

    async fn blocking_connection(&self) -> Result<MultiplexedConnection> {
        if let Some(conn) = self.blocking.lock().expect("pool lock").pop() {
            return Ok(conn);
        }
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(None);
        self.client
            .get_multiplexed_async_connection_with_config(&config)
            .await
            .map_err(|e| to_error(e, "opening a connection for a blocking wait"))
    }
}

impl Executor for RedisExecutor {
    async fn eval(&self, call: ScriptCall) -> Result<Reply> {
        // Only a refused connection is retried: then the script certainly did not run. A
        // connection dropped mid-call is reported, because the script may have run.
        let mut delay = Duration::from_millis(50);
        let deadline = Instant::now() + self.connect_timeout;
        loop {
            match self.eval_once(&call).await {
                Ok(value) => return Ok(to_reply(value)),
                Err(e) if e.is_connection_refusal() && Instant::now() + delay < deadline => {
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(1));
                }
                Err(e) => return Err(to_error(e, call.script.name)),
            }
        }
    }

    async fn wait(&self, key: &str, timeout: Duration) -> Result<bool> {
        let conn = self.blocking_connection().await?;
        let mut blocked = conn.clone();
        let mut blpop = redis::cmd("BLPOP");
        blpop
            .arg(key)
            .arg(format!("{:.3}", timeout.as_secs_f64().max(0.001)));
        let mut reply = tokio::spawn(async move {
            blpop
                .query_async::<Option<(Vec<u8>, Vec<u8>)>>(&mut blocked)
                .await
        });
        // Redis notices a blocked client's timeout only on its event-loop tick (1/hz, 100 ms by
        // default), so the local timer decides when the wait is over; the connection goes back
        // to the pool once Redis has answered the BLPOP.
        tokio::select! {
            joined = &mut reply => match joined {
                Ok(Ok(marker)) => {
                    give_back(&self.blocking, conn);
                    Ok(marker.is_some())
                }
                Ok(Err(e)) => Err(to_error(e, "waiting for work")),
                Err(e) => Err(Error::Unavailable(format!("waiting for work: {e}"))),
            },
            _ = tokio::time::sleep(timeout) => {
                let pool = self.blocking.clone();
                let grace = self.command_timeout;
                tokio::spawn(async move {
                    if let Ok(Ok(Ok(_))) = tokio::time::timeout(grace, reply).await {
                        give_back(&pool, conn);
                    }
                });
                Ok(false)
            }
        }
    }

    fn monotonic_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }
}

impl Queue<RedisExecutor> {
    /// Connect to Redis at `url` and open the queue `name`.
    ///
    /// ```no_run
    /// # async fn demo() -> crawlq::Result<()> {
    /// let q = crawlq::Queue::connect("redis://127.0.0.1:6379/0", "frontier", crawlq::Config::default()).await?;
    /// println!("{:?}", q.stats().await?);
    /// # Ok(()) }
    /// ```
    pub async fn connect(url: &str, name: &str, config: Config) -> Result<Queue<RedisExecutor>> {
        config.validate()?;
        crate::keys::Keys::new(&config.key_prefix, name)?;
        let exec = RedisExecutor::connect(url, &config).await?;
        Queue::with_executor(exec, name, config)
    }
}

fn give_back(pool: &Mutex<Vec<MultiplexedConnection>>, conn: MultiplexedConnection) {
    let mut pool = pool.lock().expect("pool lock");
    if pool.len() < BLOCKING_POOL {
        pool.push(conn);
    }
}

fn install_tls_provider() {
    // Several libraries may race to install one; whichever wins is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The URL without its password, for messages.
fn redacted(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme_end), Some(at)) if at > scheme_end => {
            format!("{}://***@{}", &url[..scheme_end], &url[at + 1..])
        }
        _ => url.to_string(),
    }
}

fn to_reply(value: redis::Value) -> Reply {
    use redis::Value as V;
    match value {
        V::Nil => Reply::Nil,
        V::Int(i) => Reply::Int(i),
        V::BulkString(b) => Reply::Data(b),
        V::SimpleString(s) => Reply::Data(s.into_bytes()),
        V::Okay => Reply::Data(b"OK".to_vec()),
        V::Array(items) | V::Set(items) => Reply::Array(items.into_iter().map(to_reply).collect()),
        V::Boolean(b) => Reply::Int(b as i64),
        V::Double(d) => Reply::Data(d.to_string().into_bytes()),
        V::Map(pairs) => Reply::Array(
            pairs
                .into_iter()
                .flat_map(|(k, v)| [to_reply(k), to_reply(v)])
                .collect(),
        ),
        other => Reply::Data(format!("{other:?}").into_bytes()),
    }
}

/// Map a client error to a crawlq error kind.
/// Map an error of the `redis` crate to crawlq's [`Error`], the way the executor does
/// (refused or dropped connections are [`Error::Unavailable`], timeouts [`Error::Timeout`]).
pub fn to_error(e: RedisError, context: &str) -> Error {
    let text = e.to_string();
    if text.contains("CRAWLQ_PROTOCOL") {
        return Error::Protocol(text);
    }
    if e.is_timeout() {
        return Error::Timeout(format!("{context}: {text}"));
    }
    if e.is_connection_refusal() {
        return Error::Unavailable(format!("{context}: connection refused ({text})"));
    }
    if e.is_connection_dropped() || e.is_io_error() {
        return Error::Unavailable(format!(
            "{context}: connection lost ({text}); the call may or may not have been applied"
        ));
    }
    match e.kind() {
        ErrorKind::AuthenticationFailed => {
            Error::Config(format!("{context}: authentication failed ({text})"))
        }
        ErrorKind::InvalidClientConfig => Error::Config(format!("{context}: {text}")),
        ErrorKind::Server(_) | ErrorKind::Extension => Error::Server(format!("{context}: {text}")),
        _ => Error::Unavailable(format!("{context}: {text}")),
    }
}
