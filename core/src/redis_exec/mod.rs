//! The native executor: the `redis` crate over tokio. Scripts go over one auto-reconnecting
//! multiplexed connection, or, when the server is a Redis Cluster node, over a cluster
//! connection that follows the cluster's topology (MOVED, ASK, failovers). Blocking waits use
//! small pools of separate connections, per node.

use crate::config::{Config, redacted_url};
use crate::error::{Error, Result};
use crate::ops::{Reply, ScriptCall};
use crate::queue::{Executor, Queue};
use crate::scripts;
use redis::aio::{ConnectionManager, ConnectionManagerConfig, MultiplexedConnection};
use redis::cluster_async::ClusterConnection;
use redis::cluster_routing::{RoutingInfo, SingleNodeRoutingInfo};
use redis::{
    AsyncConnectionConfig, ConnectionAddr, ConnectionInfo, ErrorKind, IntoConnectionInfo,
    RedisError, ServerErrorKind,
};
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod connect;
mod replies;
use connect::*;
pub use replies::to_error;
use replies::*;

/// The `redis` crate this executor is built on, for tools that also send plain commands
/// (see [`RedisExecutor::connection`]).
pub use redis;

/// Idle blocking connections kept for reuse, per node.
const BLOCKING_POOL: usize = 16;

/// The connection scripts go over: to one server, or to a cluster.
#[derive(Clone)]
pub enum Connection {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl redis::aio::ConnectionLike for Connection {
    fn req_packed_command<'a>(
        &'a mut self,
        cmd: &'a redis::Cmd,
    ) -> redis::RedisFuture<'a, redis::Value> {
        match self {
            Connection::Single(c) => c.req_packed_command(cmd),
            Connection::Cluster(c) => c.req_packed_command(cmd),
        }
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a redis::Pipeline,
        offset: usize,
        count: usize,
    ) -> redis::RedisFuture<'a, Vec<redis::Value>> {
        match self {
            Connection::Single(c) => c.req_packed_commands(cmd, offset, count),
            Connection::Cluster(c) => c.req_packed_commands(cmd, offset, count),
        }
    }

    fn get_db(&self) -> i64 {
        match self {
            Connection::Single(c) => c.get_db(),
            Connection::Cluster(c) => c.get_db(),
        }
    }
}

/// `<command> <function name, SHA-1 or source> <key count> <keys> <args>`.
fn invocation(command: &str, script: &str, call: &ScriptCall) -> redis::Cmd {
    let mut cmd = redis::cmd(command);
    cmd.arg(script)
        .arg(call.keys.len())
        .arg(&*call.keys)
        .arg(&call.args);
    cmd
}

/// Runs scripts on a Redis server (TCP, TLS with `rediss://`, or a unix socket) or a Redis
/// Cluster (detected from any of its nodes).
pub struct RedisExecutor {
    /// How to reach the node given in the URL; other nodes are reached with its settings.
    info: ConnectionInfo,
    root_cert: Option<Vec<u8>>,
    scripts: Connection,
    /// Idle connections for blocking waits, by node address.
    blocking: Arc<Mutex<HashMap<String, Vec<MultiplexedConnection>>>>,
    /// In a cluster: the node that last held each wait key's slot.
    wait_nodes: Mutex<HashMap<String, (String, u16)>>,
    connect_timeout: Duration,
    command_timeout: Duration,
    /// Scripts run as functions (FCALL) until the server or the ACL refuses them; then by
    /// EVALSHA.
    functions: AtomicBool,
}

impl std::fmt::Debug for RedisExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisExecutor")
            .field("server", &self.info.addr())
            .field("cluster", &self.in_cluster())
            .finish()
    }
}

impl RedisExecutor {
    /// Connect to `url` (`redis://[[user]:password@]host[:port][/db]`, `rediss://...` for TLS,
    /// `unix:///path/to/socket`) and check the connection with a `PING`, so a wrong or missing
    /// password, a certificate the client does not trust or a bad URL is an [`Error::Config`]
    /// here, and an unreachable server an [`Error::Unavailable`] after `connect_timeout`. When
    /// the server is a Redis Cluster node, the executor drives the whole cluster.
    pub async fn connect(url: &str, config: &Config) -> Result<RedisExecutor> {
        let bad_url = |e: RedisError| {
            Error::Config(format!(
                "redis URL {}: {}",
                redacted_url(url),
                crate::config::why_url_unread(url, e.detail().unwrap_or(&e.to_string()))
            ))
        };
        // RESP3: the connection manager then hears a dropped connection at once (a killed
        // client, a restarted server) and reconnects before the next call, instead of failing it.
        crate::config::check_redis_url_scheme(url)?;
        let info = url.into_connection_info().map_err(bad_url)?;
        let settings = info
            .redis_settings()
            .clone()
            .set_protocol(redis::ProtocolVersion::RESP3);
        let info = info.set_redis_settings(settings);
        let root_cert = match &config.tls_ca_file {
            Some(path) => Some(
                std::fs::read(path)
                    .map_err(|e| Error::Config(format!("tls_ca_file {path:?}: {e}")))?,
            ),
            None => None,
        };
        let client = client_for(&info, &root_cert).map_err(bad_url)?;
        let manager_config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(config.connect_timeout))
            .set_response_timeout(Some(config.command_timeout))
            .set_number_of_retries(3)
            .set_min_delay(Backoff::FIRST)
            .set_max_delay(Backoff::MAX);
        let context = format!("connecting to {}", redacted_url(url));
        // An unreachable server is tried again until connect_timeout; one that answers but is
        // not ready (LOADING, even to PING) is waited for as calls wait, up to command_timeout
        // if that is longer.
        let reach_by = Instant::now() + config.connect_timeout;
        let mut backoff = Backoff::until(config.connect_timeout.max(config.command_timeout));
        let (manager, cluster_info) = loop {
            let attempt = async {
                let manager =
                    ConnectionManager::new_with_config(client.clone(), manager_config.clone())
                        .await?;
                let mut conn = manager.clone();
                redis::cmd("PING").query_async::<String>(&mut conn).await?;
                // a cluster node answers CLUSTER INFO; another server refuses it
                let cluster = redis::cmd("CLUSTER")
                    .arg("INFO")
                    .query_async::<String>(&mut conn)
                    .await
                    .unwrap_or_default();
                Ok::<_, RedisError>((manager, cluster))
            };
            match attempt.await {
                Ok(ok) => break ok,
                Err(e)
                    if may_retry(&e, true)
                        && backoff.allows()
                        && (e.code().is_some() || backoff.allows_before(reach_by)) =>
                {
                    backoff.wait().await
                }
                // an address of another service (an HTTP port): not worth trying again
                Err(e) if e.kind() == ErrorKind::Parse => {
                    return Err(crate::config::not_redis_protocol(&context, &e.to_string()));
                }
                Err(e) => return Err(to_error(e, &context)),
            }
        };
        let scripts = if cluster_info.contains("cluster_state:") {
            Connection::Cluster(cluster_connection(&info, &root_cert, config, &context).await?)
        } else {
            Connection::Single(manager)
        };
        Ok(RedisExecutor {
            info,
            root_cert,
            scripts,
            blocking: Arc::default(),
            wait_nodes: Mutex::default(),
            connect_timeout: config.connect_timeout,
            command_timeout: config.command_timeout,
            functions: AtomicBool::new(true),
        })
    }

    /// The executor's connection (auto-reconnecting; in a cluster, routed by key), for plain
    /// commands outside the queue's scripts on the same server (the CLI's `import-list` moves
    /// items of a foreign list with it). Queue state must only change through the scripts.
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
    pub fn connection(&self) -> Connection {
        self.scripts.clone()
    }

    /// Every key matching a `SCAN` glob `pattern`, on the server or on every primary of the
    /// cluster. Bounded work per round trip (`COUNT 1000`); the whole key space is walked, so
    /// this is for tools (queue listing, removal), never for a hot path.
    pub async fn scan_keys(&self, pattern: &str) -> Result<Vec<String>> {
        let context = format!("scanning keys {pattern}");
        let mut keys = Vec::new();
        let mut conn = self.scripts.clone();
        match &self.scripts {
            Connection::Single(_) => {
                scan_node(&mut conn, pattern, &mut keys, None)
                    .await
                    .map_err(|e| to_error(e, &context))?;
            }
            Connection::Cluster(_) => {
                let nodes: String = redis::cmd("CLUSTER")
                    .arg("NODES")
                    .query_async(&mut conn)
                    .await
                    .map_err(|e| to_error(e, &context))?;
                for (host, port) in cluster_primaries(&nodes) {
                    let route =
                        RoutingInfo::SingleNode(SingleNodeRoutingInfo::ByAddress { host, port });
                    scan_node(&mut conn, pattern, &mut keys, Some(route))
                        .await
                        .map_err(|e| to_error(e, &context))?;
                }
            }
        }
        keys.sort();
        keys.dedup();
        Ok(keys)
    }

    async fn eval_once(&self, call: &ScriptCall) -> redis::RedisResult<redis::Value> {
        // Each error handled here is refused before the function runs, so the call is then
        // made once more, never twice.
        if self.functions.load(Ordering::Relaxed) {
            match self.fcall(call).await {
                // not loaded on this server (new, flushed, restarted, a node added to the
                // cluster): load the library and call again
                Err(e) if is_function_not_found(&e) => match self.load_library().await {
                    Ok(()) => match self.fcall(call).await {
                        Err(e) if is_function_not_found(&e) || refuses_functions(&e) => {}
                        done => return done,
                    },
                    Err(e) if refuses_functions(&e) => {
                        self.functions.store(false, Ordering::Relaxed)
                    }
                    // out of memory, a node down: this call goes by EVALSHA
                    Err(_) => {}
                },
                Err(e) if refuses_functions(&e) => self.functions.store(false, Ordering::Relaxed),
                done => return done,
            }
        }
        self.evalsha(call).await
    }

    async fn fcall(&self, call: &ScriptCall) -> redis::RedisResult<redis::Value> {
        invocation("FCALL", call.script.function_name(), call)
            .query_async(&mut self.scripts.clone())
            .await
    }

    /// `FUNCTION LOAD REPLACE` of this build's library (in a cluster: on every primary).
    async fn load_library(&self) -> redis::RedisResult<()> {
        let mut load = redis::cmd("FUNCTION");
        load.arg("LOAD")
            .arg("REPLACE")
            .arg(scripts::library().source);
        load.query_async::<redis::Value>(&mut self.scripts.clone())
            .await
            .map(drop)
    }

    async fn evalsha(&self, call: &ScriptCall) -> redis::RedisResult<redis::Value> {
        let mut conn = self.scripts.clone();
        let evalsha = invocation("EVALSHA", call.script.sha1(), call);
        match evalsha.query_async(&mut conn).await {
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::NoScript) => {
                invocation("EVAL", call.script.source(), call)
                    .query_async(&mut conn)
                    .await
            }
            other => other,
        }
    }

    /// `WAIT` after a script, on the connection (in a cluster: the node) the script ran on.
    async fn wait_replicas(
        &self,
        key: &str,
        count: u32,
        timeout: Duration,
    ) -> redis::RedisResult<i64> {
        let mut wait = redis::cmd("WAIT");
        wait.arg(count).arg(timeout.as_millis().max(1) as u64);
        match &self.scripts {
            Connection::Single(c) => wait.query_async(&mut c.clone()).await,
            Connection::Cluster(c) => {
                let route = redis::cluster_routing::Route::with_key(
                    key,
                    redis::cluster_routing::SlotAddr::Master,
                );
                let routing = redis::cluster_routing::RoutingInfo::SingleNode(
                    redis::cluster_routing::SingleNodeRoutingInfo::SpecificNode(route),
                );
                let value = c.clone().route_command(wait, routing).await?;
                redis::FromRedisValue::from_redis_value(value)
                    .map_err(|e| RedisError::from((ErrorKind::Client, "WAIT reply", e.to_string())))
            }
        }
    }

    /// A connection for a blocking wait on `addr` (none: the URL's node), from the pool.
    async fn blocking_connection(
        &self,
        addr: Option<&(String, u16)>,
    ) -> redis::RedisResult<(String, MultiplexedConnection)> {
        let info = match addr {
            Some((host, port)) => {
                self.info
                    .clone()
                    .set_addr(node_addr(self.info.addr(), host, *port))
            }
            None => self.info.clone(),
        };
        let name = info.addr().to_string();
        if let Some(conn) = self
            .blocking
            .lock()
            .expect("pool lock")
            .get_mut(&name)
            .and_then(Vec::pop)
        {
            return Ok((name, conn));
        }
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.connect_timeout))
            .set_response_timeout(None);
        let client = client_for(&info, &self.root_cert)?;
        let conn = client
            .get_multiplexed_async_connection_with_config(&config)
            .await?;
        Ok((name, conn))
    }

    /// In a cluster: the master that serves `key`'s slot, as the nodes tell it now (`CLUSTER
    /// SLOTS` through the cluster connection, which follows failovers); `None` on one server,
    /// or when no node answered.
    async fn slot_master(&self, key: &str) -> Option<(String, u16)> {
        let slot = i64::from(crate::keys::cluster_slot(key));
        self.slot_ranges()
            .await?
            .into_iter()
            .find(|(start, end, _)| (*start..=*end).contains(&slot))
            .map(|(_, _, master)| master)
    }

    /// In a cluster: each range of slots with its master (`CLUSTER SLOTS`); `None` on one
    /// server, or when no node answered.
    async fn slot_ranges(&self) -> Option<Vec<(i64, i64, (String, u16))>> {
        let Connection::Cluster(cluster) = &self.scripts else {
            return None;
        };
        let reply: redis::Value = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query_async(&mut cluster.clone())
            .await
            .ok()?;
        let redis::Value::Array(ranges) = reply else {
            return None;
        };
        let range = |range: redis::Value| {
            let redis::Value::Array(fields) = range else {
                return None;
            };
            let (redis::Value::Int(start), redis::Value::Int(end)) =
                (fields.first()?, fields.get(1)?)
            else {
                return None;
            };
            let redis::Value::Array(master) = fields.get(2)? else {
                return None;
            };
            let host: String = redis::from_redis_value(master.first()?.clone()).ok()?;
            let port: u16 = redis::from_redis_value(master.get(1)?.clone()).ok()?;
            Some((*start, *end, (host, port)))
        };
        Some(ranges.into_iter().filter_map(range).collect())
    }

    /// The node that holds `key`, as `host:port` (a socket's path on one server reached that
    /// way): in a cluster the master of its slot as the nodes tell it now (`?` when none
    /// answered), else the server itself. For tools: where a queue's shards live.
    ///
    /// ```no_run
    /// # async fn demo(exec: crawlq::RedisExecutor) {
    /// println!("{}", exec.node_of("crawlq:{jobs}:meta").await);
    /// # }
    /// ```
    pub async fn node_of(&self, key: &str) -> String {
        match &self.scripts {
            Connection::Cluster(_) => self
                .slot_master(key)
                .await
                .map_or_else(|| "?".to_string(), |(host, port)| format!("{host}:{port}")),
            Connection::Single(_) => match self.info.addr() {
                ConnectionAddr::Tcp(host, port) | ConnectionAddr::TcpTls { host, port, .. } => {
                    format!("{host}:{port}")
                }
                ConnectionAddr::Unix(path) => path.display().to_string(),
                other => other.to_string(),
            },
        }
    }

    /// One BLPOP on a pooled connection to the node that holds `key` (in a cluster, the slot's
    /// master as the cluster tells it, then as its MOVED answers do). The connection goes back to
    /// the pool only after Redis answered, so a pooled connection is one that worked a moment
    /// ago.
    async fn blpop(&self, key: &str, timeout: Duration) -> redis::RedisResult<Option<bool>> {
        let known = self
            .wait_nodes
            .lock()
            .expect("nodes lock")
            .get(key)
            .cloned();
        let node = match known {
            Some(node) => Some(node),
            None => {
                let master = self.slot_master(key).await;
                if let Some(node) = &master {
                    self.wait_nodes
                        .lock()
                        .expect("nodes lock")
                        .insert(key.to_string(), node.clone());
                }
                master
            }
        };
        let (name, conn) = self.blocking_connection(node.as_ref()).await?;
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
                    give_back(&self.blocking, name, conn);
                    Ok(Some(marker.is_some()))
                }
                Ok(Err(e)) => {
                    if let Some((host, port)) = e.redirect_node().and_then(|(addr, _)| split_addr(addr)) {
                        // the slot lives elsewhere now: remember where, and let the caller retry
                        self.wait_nodes.lock().expect("nodes lock").insert(key.to_string(), (host, port));
                        give_back(&self.blocking, name, conn);
                    }
                    Err(e)
                }
                Err(e) => Err(RedisError::from(std::io::Error::other(e.to_string()))),
            },
            _ = tokio::time::sleep(timeout) => {
                let pool = self.blocking.clone();
                let grace = self.command_timeout;
                tokio::spawn(async move {
                    if let Ok(Ok(Ok(_))) = tokio::time::timeout(grace, reply).await {
                        give_back(&pool, name, conn);
                    }
                });
                Ok(None)
            }
        }
    }
}

/// The waits between retries of a call that provably did not run (and of a connection's
/// first contact): 50 ms, doubling up to 1 s, for as long as the next wait ends within the
/// time the call was given. The connection manager's own reconnects use the same bounds.
struct Backoff {
    delay: Duration,
    deadline: Instant,
}

impl Backoff {
    const FIRST: Duration = Duration::from_millis(50);
    const MAX: Duration = Duration::from_secs(1);

    /// Retries for at most `budget` from now.
    fn until(budget: Duration) -> Backoff {
        Backoff {
            delay: Backoff::FIRST,
            deadline: Instant::now() + budget,
        }
    }

    /// Whether the next wait ends before the deadline.
    fn allows(&self) -> bool {
        self.allows_before(self.deadline)
    }

    /// Whether the next wait ends before `deadline` (one sooner than the backoff's own).
    fn allows_before(&self, deadline: Instant) -> bool {
        Instant::now() + self.delay < deadline
    }

    async fn wait(&mut self) {
        tokio::time::sleep(self.delay).await;
        self.delay = (self.delay * 2).min(Backoff::MAX);
    }
}

impl Executor for RedisExecutor {
    async fn sleep(&self, duration: Duration) {
        tokio::time::sleep(duration).await;
    }

    async fn eval(&self, call: ScriptCall) -> Result<Reply> {
        // A call whose connection dropped while it was in flight is reported, not sent again:
        // the script may have run. Calls that provably did not run are retried until
        // connect_timeout (or command_timeout, if longer) has passed.
        let read_only = call.script.flags.contains("no-writes");
        // a call reading several shards at once (docs/PROTOCOL.md section 9, "Readings")
        let several_slots = call.script.flags.contains("allow-cross-slot-keys");
        let mut backoff = Backoff::until(self.connect_timeout.max(self.command_timeout));
        let value = loop {
            match self.eval_once(&call).await {
                Ok(value) => break value,
                // one of its shards is not (or no longer) on the node: not worth waiting for,
                // the caller reads the shards one by one
                Err(e) if several_slots && is_slot_moving(&e) => {
                    return Err(Error::Server(format!(
                        "{}: a shard is not on the node the call went to ({e})",
                        call.script.name
                    )));
                }
                Err(e) if may_retry(&e, read_only) && backoff.allows() => backoff.wait().await,
                Err(e) => return Err(to_error(e, call.script.name)),
            }
        };
        if let Some(replicas) = call.replicas {
            let acknowledged = self
                .wait_replicas(&call.keys[0], replicas.count, replicas.timeout)
                .await
                .map_err(|e| to_error(e, "waiting for replicas"))?;
            replicas.check(acknowledged, call.script.name)?;
        }
        Ok(to_reply(value))
    }

    async fn wait(&self, key: &str, timeout: Duration) -> Result<bool> {
        // A wait is harmless to repeat: a connection that died in the pool (killed, or the
        // server restarted) is dropped and the wait tried again on a fresh one; in a cluster, a
        // MOVED answer names the node to wait on, and a node that stopped answering is looked
        // up again (its replica may have taken over). A wait never fails because the node it
        // waited on went away: after a short pause it ends without a marker, and the caller's
        // next script call (which retries and reports an unreachable Redis) decides.
        let started = Instant::now();
        for attempt in 0..3 {
            match self.blpop(key, timeout).await {
                Ok(marker) => return Ok(marker == Some(true)),
                Err(e) if e.redirect_node().is_some() => {}
                Err(e)
                    if e.is_connection_dropped()
                        || e.is_io_error()
                        || e.kind() == ErrorKind::ClusterConnectionNotFound
                        || may_retry(&e, true) =>
                {
                    // the node may be gone for good: ask the cluster again next time
                    self.wait_nodes.lock().expect("nodes lock").remove(key);
                    if attempt == 2 {
                        let pause = Duration::from_millis(250)
                            .min(timeout.saturating_sub(started.elapsed()));
                        tokio::time::sleep(pause).await;
                    }
                }
                Err(e) => return Err(to_error(e, "waiting for work")),
            }
        }
        Ok(false)
    }

    fn monotonic_ms(&self) -> u64 {
        // one epoch for the whole process: every executor's readings compare (a lease held
        // through one queue may be extended through another's connection, crawlq::binding::held)
        static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        EPOCH.get_or_init(Instant::now).elapsed().as_millis() as u64
    }

    fn in_cluster(&self) -> bool {
        matches!(self.scripts, Connection::Cluster(_))
    }

    /// In a cluster, keys are grouped by the master of their slot as `CLUSTER SLOTS` tells it
    /// now (each key alone when no node answered); on one server they are one group.
    async fn node_groups(&self, keys: &[String]) -> Vec<usize> {
        if !self.in_cluster() {
            return vec![0; keys.len()];
        }
        let Some(ranges) = self.slot_ranges().await else {
            return (0..keys.len()).collect();
        };
        let mut masters: Vec<&(String, u16)> = Vec::new();
        keys.iter()
            .enumerate()
            .map(|(i, key)| {
                let slot = i64::from(crate::keys::cluster_slot(key));
                let Some((_, _, master)) = ranges
                    .iter()
                    .find(|(start, end, _)| (*start..=*end).contains(&slot))
                else {
                    // no master known for the slot: a group of its own (keys.len() + i
                    // is above every master's number)
                    return keys.len() + i;
                };
                masters
                    .iter()
                    .position(|m| *m == master)
                    .unwrap_or_else(|| {
                        masters.push(master);
                        masters.len() - 1
                    })
            })
            .collect()
    }

    fn yield_now(&self) -> impl Future<Output = ()> + Send {
        // tokio's own: the task comes back after the worker has run the others (the
        // connection's writer first); a plain self-wake lets an idle worker take the task
        // back at once, racing the writer (bench/README.md, "Where the targets stand")
        tokio::task::yield_now()
    }
}

impl<E: Executor + std::borrow::Borrow<RedisExecutor>> Queue<E> {
    /// The node each shard lives on ([`RedisExecutor::node_of`] of its meta key), in shard
    /// order: for tools that show how a queue spreads over a cluster.
    pub async fn shard_nodes(&self) -> Result<Vec<String>> {
        let layout = self.layout().await?;
        let mut nodes = Vec::with_capacity(layout.count());
        for ops in layout.all() {
            let exec: &RedisExecutor = self.executor().borrow();
            nodes.push(exec.node_of(ops.keys().meta()).await);
        }
        Ok(nodes)
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
        let q = Queue::with_executor(exec, name, config)?;
        // the shard count: a queue opened with another one is refused here, not by a later call
        q.layout().await?;
        Ok(q)
    }
}

fn give_back(
    pool: &Mutex<HashMap<String, Vec<MultiplexedConnection>>>,
    node: String,
    conn: MultiplexedConnection,
) {
    let mut pool = pool.lock().expect("pool lock");
    let idle = pool.entry(node).or_default();
    if idle.len() < BLOCKING_POOL {
        idle.push(conn);
    }
}
