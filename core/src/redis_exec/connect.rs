//! Connections: clients for a server or a cluster's nodes (TLS, unix sockets), the cluster's primaries.

use super::*;

/// SCAN one server to the end (`route`: the node of a cluster connection to ask).
pub(super) async fn scan_node(
    conn: &mut Connection,
    pattern: &str,
    keys: &mut Vec<String>,
    route: Option<RoutingInfo>,
) -> redis::RedisResult<()> {
    let mut cursor = 0u64;
    loop {
        let mut scan = redis::cmd("SCAN");
        scan.arg(cursor)
            .arg("MATCH")
            .arg(pattern)
            .arg("COUNT")
            .arg(1000);
        let reply = match (&route, &mut *conn) {
            (Some(route), Connection::Cluster(c)) => c.route_command(scan, route.clone()).await?,
            _ => scan.query_async(conn).await?,
        };
        let (next, found): (u64, Vec<String>) = redis::from_redis_value(reply)?;
        keys.extend(found);
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}

/// The primaries in a `CLUSTER NODES` reply, as (host, port).
pub(super) fn cluster_primaries(nodes: &str) -> Vec<(String, u16)> {
    nodes
        .lines()
        .filter_map(|line| {
            let fields: Vec<&str> = line.split(' ').collect();
            let (address, flags) = (fields.get(1)?, fields.get(2)?);
            if !flags.split(',').any(|f| f == "master") || flags.contains("fail") {
                return None;
            }
            let address = address.split('@').next()?;
            let (host, port) = address.rsplit_once(':')?;
            Some((host.to_string(), port.parse().ok()?))
        })
        .collect()
}

/// A client for `info`, with the CA of `tls_ca_file` when one is given.
pub(super) fn client_for(
    info: &ConnectionInfo,
    root_cert: &Option<Vec<u8>>,
) -> redis::RedisResult<redis::Client> {
    if matches!(info.addr(), ConnectionAddr::TcpTls { .. }) {
        install_tls_provider();
    }
    match root_cert {
        Some(cert) => redis::Client::build_with_tls(
            info.clone(),
            redis::TlsCertificates {
                client_tls: None,
                root_cert: Some(cert.clone()),
            },
        ),
        None => redis::Client::open(info.clone()),
    }
}

/// The address of another node, reached the way the URL's node is (TCP or TLS).
pub(super) fn node_addr(like: &ConnectionAddr, host: &str, port: u16) -> ConnectionAddr {
    match like {
        ConnectionAddr::TcpTls {
            insecure,
            tls_params,
            ..
        } => ConnectionAddr::TcpTls {
            host: host.to_string(),
            port,
            insecure: *insecure,
            tls_params: tls_params.clone(),
        },
        _ => ConnectionAddr::Tcp(host.to_string(), port),
    }
}

pub(super) fn split_addr(addr: &str) -> Option<(String, u16)> {
    let (host, port) = addr.rsplit_once(':')?;
    Some((host.to_string(), port.parse().ok()?))
}

/// A cluster connection from one node's settings: the client discovers the other nodes and
/// follows the topology.
pub(super) async fn cluster_connection(
    info: &ConnectionInfo,
    root_cert: &Option<Vec<u8>>,
    config: &Config,
    context: &str,
) -> Result<ClusterConnection> {
    // No retries by the cluster client: it would send a call again after its connection
    // dropped with the call in flight, when the script may have run (an ack applied twice
    // answers false, a lease hands out twice as many). The executor retries what certainly did
    // not run (`may_retry`), as it does on one server; a redirect (MOVED) still makes the
    // client refresh its slot map before that retry.
    let mut builder = redis::cluster::ClusterClient::builder(vec![info.clone()])
        .connection_timeout(config.connect_timeout)
        .response_timeout(config.command_timeout)
        .retries(0)
        .use_protocol(redis::ProtocolVersion::RESP3);
    if let Some(cert) = root_cert {
        builder = builder.certs(redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(cert.clone()),
        });
    }
    let client = builder
        .build()
        .map_err(|e| Error::Config(format!("{context}: {e}")))?;
    client
        .get_async_connection()
        .await
        .map_err(|e| to_error(e, context))
}

pub(super) fn install_tls_provider() {
    // Several libraries may race to install one; whichever wins is fine.
    let _ = rustls::crypto::ring::default_provider().install_default();
}
