//! The Redis connection of a long-running command (the exporter, the web console): made on the
//! first request that needs it, so that the command starts while Redis is down, and kept for
//! the following ones (the executor reconnects by itself after that).

use crawlq::{Config, RedisExecutor};
use std::sync::Arc;
use tokio::sync::Mutex;

pub struct LazyConnection {
    url: String,
    config: Config,
    exec: Mutex<Option<Arc<RedisExecutor>>>,
}

impl LazyConnection {
    pub fn new(url: &str, config: &Config) -> LazyConnection {
        LazyConnection {
            url: url.to_string(),
            config: config.clone(),
            exec: Mutex::new(None),
        }
    }

    /// The connection, made now if no earlier call made it.
    pub async fn get(&self) -> crawlq::Result<Arc<RedisExecutor>> {
        let mut exec = self.exec.lock().await;
        if let Some(exec) = exec.as_ref() {
            return Ok(exec.clone());
        }
        let connected = Arc::new(RedisExecutor::connect(&self.url, &self.config).await?);
        *exec = Some(connected.clone());
        Ok(connected)
    }
}
