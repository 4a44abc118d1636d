//! The native executor: the `redis` crate over tokio. One auto-reconnecting multiplexed
//! connection for scripts, and a small pool of separate connections for blocking waits.

use crate::config::Config;
use crate::error::{Error, Result};
use crate::ops::{Reply, ScriptCall};
use crate::queue::{Executor, Queue};
use redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection};
use redis::{AsyncConnectionConfig, ErrorKind, IntoConnectionInfo, RedisError, ServerErrorKind};
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
    /// Connect to `url` (`redis://[[user]:password@]host[:port][/db]`, `rediss://...` for TLS,
    /// `unix:///path/to/socket`) and check the connection with a `PING`, so a wrong or missing
    /// password, a certificate the client does not trust or a bad URL is an [`Error::Config`]
    /// here, and an unreachable server an [`Error::Unavailable`] after `connect_timeout`.
    pub async fn connect(url: &str, config: &Config) -> Result<RedisExecutor> {
        let bad_url = |e: RedisError| Error::Config(format!("redis URL {}: {e}", redacted(url)));
        // RESP3: the connection manager then hears a dropped connection at once (a killed
        // client, a restarted server) and reconnects before the next call, instead of failing it.
        let info = url.into_connection_info().map_err(bad_url)?;
        let settings = info
            .redis_settings()
            .clone()
            .set_protocol(redis::ProtocolVersion::RESP3);
        let info = info.set_redis_settings(settings);
        let client = match &config.tls_ca_file {
            Some(path) => {
                let root_cert = std::fs::read(path)
                    .map_err(|e| Error::Config(format!("tls_ca_file {path:?}: {e}")))?;
                install_tls_provider();
                redis::Client::build_with_tls(
                    info,
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
                redis::Client::open(info)
            }
        }
        .map_err(bad_url)?;
        let manager_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.connect_timeout))
            .set_response_timeout(Some(config.command_timeout))
            .set_number_of_retries(3)
            .set_min_delay(Duration::from_millis(50))
            .set_max_delay(Duration::from_secs(1));
        let context = format!("connecting to {}", redacted(url));
        // A server that is loading its data set answers LOADING even to PING: wait for it, as
        // calls do.
        let deadline = Instant::now() + config.connect_timeout.max(config.command_timeout);
        let mut delay = Duration::from_millis(50);
        let manager = loop {
            let attempt = async {
                let manager =
                    ConnectionManager::new_with_config(client.clone(), manager_config.clone())
                        .await?;
                let mut conn = manager.clone();
                redis::cmd("PING").query_async::<String>(&mut conn).await?;
                Ok::<_, RedisError>(manager)
            };
            match attempt.await {
                Ok(manager) => break manager,
                Err(e) if may_retry(&e, true) && Instant::now() + delay < deadline => {
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(1));
                }
                Err(e) => return Err(to_error(e, &context)),
            }
        };
        let exec = RedisExecutor {
            client,
            manager,
            blocking: Arc::default(),
            connect_timeout: config.connect_timeout,
            command_timeout: config.command_timeout,
            started: Instant::now(),
        };
        Ok(exec)
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

    /// `WAIT` on the scripts' connection: how many replicas have its writes so far.
    async fn wait_replicas(&self, count: u32, timeout: Duration) -> redis::RedisResult<i64> {
        let mut conn = self.manager.clone();
        redis::cmd("WAIT")
            .arg(count)
            .arg(timeout.as_millis().max(1) as u64)
            .query_async(&mut conn)
            .await
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

    /// One BLPOP on a pooled connection. The connection goes back to the pool only after Redis
    /// answered, so a pooled connection is one that worked a moment ago.
    async fn blpop(&self, key: &str, timeout: Duration) -> redis::RedisResult<Option<bool>> {
        let conn = match self.blocking_connection().await {
            Ok(conn) => conn,
            Err(_) => {
                return Err(RedisError::from(std::io::Error::from(
                    std::io::ErrorKind::ConnectionRefused,
                )));
            }
        };
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
                    Ok(Some(marker.is_some()))
                }
                Ok(Err(e)) => Err(e),
                Err(e) => Err(RedisError::from(std::io::Error::other(e.to_string()))),
            },
            _ = tokio::time::sleep(timeout) => {
                let pool = self.blocking.clone();
                let grace = self.command_timeout;
                tokio::spawn(async move {
                    if let Ok(Ok(Ok(_))) = tokio::time::timeout(grace, reply).await {
                        give_back(&pool, conn);
                    }
                });
                Ok(None)
            }
        }
    }
}

/// Whether a failed call may be sent again: the server certainly did not run it (the connection
/// was refused; Redis was loading its data set, busy with another script, or asked to try
/// again), or the call changes nothing (a read-only script), so running it twice is harmless.
fn may_retry(e: &RedisError, read_only: bool) -> bool {
    e.is_connection_refusal()
        || matches!(
            e.code(),
            Some("LOADING" | "BUSY" | "TRYAGAIN" | "MASTERDOWN")
        )
        || (read_only && (e.is_connection_dropped() || e.is_io_error()) && !e.is_timeout())
}

impl Executor for RedisExecutor {
    async fn eval(&self, call: ScriptCall) -> Result<Reply> {
        // A call whose connection dropped while it was in flight is reported, not sent again:
        // the script may have run. Calls that provably did not run are retried until
        // connect_timeout (or command_timeout, if longer) has passed.
        let read_only = call.script.flags.contains("no-writes");
        let mut delay = Duration::from_millis(50);
        let deadline = Instant::now() + self.connect_timeout.max(self.command_timeout);
        let value = loop {
            match self.eval_once(&call).await {
                Ok(value) => break value,
                Err(e) if may_retry(&e, read_only) && Instant::now() + delay < deadline => {
                    tokio::time::sleep(delay).await;
                    delay = (delay * 2).min(Duration::from_secs(1));
                }
                Err(e) => return Err(to_error(e, call.script.name)),
            }
        };
        if let Some(replicas) = call.replicas {
            let acknowledged = self
                .wait_replicas(replicas.count, replicas.timeout)
                .await
                .map_err(|e| to_error(e, "waiting for replicas"))?;
            replicas.check(acknowledged, call.script.name)?;
        }
        Ok(to_reply(value))
    }

    async fn wait(&self, key: &str, timeout: Duration) -> Result<bool> {
        // A wait is harmless to repeat: a connection that died in the pool (killed, or the
        // server restarted) is dropped and the wait tried once more on a fresh one.
        match self.blpop(key, timeout).await {
            Ok(marker) => Ok(marker == Some(true)),
            Err(e) if e.is_connection_dropped() || e.is_io_error() => self
                .blpop(key, timeout)
                .await
                .map(|marker| marker == Some(true))
                .map_err(|e| to_error(e, "waiting for work")),
            Err(e) => Err(to_error(e, "waiting for work")),
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
        crate::keys::check_queue_name(&config.key_prefix, name)?;
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

/// Map an error of the `redis` crate to crawlq's [`Error`], the way the executor does:
/// refused or dropped connections are [`Error::Unavailable`], timeouts [`Error::Timeout`],
/// authentication and certificate problems [`Error::Config`], crawlq's script errors and
/// `WRONGTYPE` as [`Error::from_server_reply`] decides.
pub fn to_error(e: RedisError, context: &str) -> Error {
    let text = e.to_string();
    if text.contains("CRAWLQ_") || e.code() == Some("WRONGTYPE") {
        return with_context(Error::from_server_reply(&text), context);
    }
    if e.kind() == ErrorKind::AuthenticationFailed
        || matches!(e.code(), Some("NOAUTH" | "WRONGPASS"))
    {
        return Error::Config(format!(
            "{context}: authentication failed ({text}); give the password (and user) in the URL: \
             redis://user:password@host:port"
        ));
    }
    if is_tls_verification(&text) {
        return Error::Config(format!(
            "{context}: the server's TLS certificate is not trusted ({text}); set tls_ca_file to \
             the CA that signed it"
        ));
    }
    if e.is_timeout() {
        return Error::Timeout(format!("{context}: {text}"));
    }
    if e.code() == Some("LOADING") {
        return Error::Unavailable(format!(
            "{context}: Redis is still loading its data set ({text})"
        ));
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
        ErrorKind::InvalidClientConfig => Error::Config(format!("{context}: {text}")),
        ErrorKind::Server(_) | ErrorKind::Extension => Error::Server(format!("{context}: {text}")),
        _ => Error::Unavailable(format!("{context}: {text}")),
    }
}

fn with_context(error: Error, context: &str) -> Error {
    match error {
        Error::Server(m) => Error::Server(format!("{context}: {m}")),
        other => other,
    }
}

/// rustls reports an untrusted certificate (unknown issuer, wrong name, expired) as an I/O
/// error whose text names it.
fn is_tls_verification(text: &str) -> bool {
    [
        "invalid peer certificate",
        "UnknownIssuer",
        "NotValidForName",
        "certificate verify",
    ]
    .iter()
    .any(|needle| text.contains(needle))
}
