//! The exporter's history read back from Prometheus (`crawlq web --prometheus URL`): the
//! queue page's charts over longer windows than the console's own memory. A plain HTTP/1.0
//! GET of `/api/v1/query_range` (Prometheus serves plain HTTP on its port; put a TLS proxy's
//! inner address here).

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

const TIMEOUT: Duration = Duration::from_secs(5);
/// The most points a line is drawn with (the step is the window over this).
const POINTS: f64 = 240.0;

/// The windows a queue page can show from Prometheus: (query value, seconds).
pub const WINDOWS: [(&str, u64); 5] = [
    ("5m", 300),
    ("1h", 3600),
    ("6h", 6 * 3600),
    ("24h", 24 * 3600),
    ("7d", 7 * 24 * 3600),
];

#[derive(Clone, Debug, PartialEq)]
pub struct Prometheus {
    /// `host:port`
    address: String,
    /// The path Prometheus is served under (`""` at the root).
    prefix: String,
}

impl Prometheus {
    /// `http://host[:port][/prefix]`.
    pub fn parse(url: &str) -> Result<Prometheus, String> {
        let rest = url.strip_prefix("http://").ok_or_else(|| {
            format!("--prometheus {url:?}: give its plain http:// address (https is not read)")
        })?;
        let (address, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        if address.is_empty() {
            return Err(format!("--prometheus {url:?}: no host"));
        }
        let address = if address.contains(':') && !address.ends_with(']') {
            address.to_string()
        } else {
            format!("{address}:80")
        };
        Ok(Prometheus {
            address,
            prefix: prefix
                .trim_end_matches('/')
                .split('/')
                .filter(|s| !s.is_empty())
                .map(|s| format!("/{s}"))
                .collect(),
        })
    }

    /// The step a window is drawn with: about 240 points, at least a second.
    pub fn step(window_s: u64) -> f64 {
        (window_s as f64 / POINTS).max(1.0)
    }

    /// One range query, ending now: each series' (time in ms, value) points. A query that
    /// returns several series (it should not, per queue) gives their sum at each time.
    pub fn range(&self, query: &str, window_s: u64) -> Result<Vec<(i64, f64)>, String> {
        let end = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64();
        let step = Prometheus::step(window_s);
        let params: String = form_urlencoded::Serializer::new(String::new())
            .append_pair("query", query)
            .append_pair("start", &format!("{:.3}", end - window_s as f64))
            .append_pair("end", &format!("{end:.3}"))
            .append_pair("step", &format!("{step:.3}"))
            .finish();
        let body = self.get(&format!("{}/api/v1/query_range?{params}", self.prefix))?;
        parse_matrix(&body)
    }

    fn get(&self, path: &str) -> Result<String, String> {
        let fail = |e: std::io::Error| format!("Prometheus at {}: {e}", self.address);
        let address = self
            .address
            .to_socket_addrs()
            .map_err(fail)?
            .next()
            .ok_or_else(|| format!("Prometheus at {}: no address", self.address))?;
        let mut stream = TcpStream::connect_timeout(&address, TIMEOUT).map_err(fail)?;
        stream.set_read_timeout(Some(TIMEOUT)).map_err(fail)?;
        stream.set_write_timeout(Some(TIMEOUT)).map_err(fail)?;
        write!(
            stream,
            "GET {path} HTTP/1.0\r\nHost: {}\r\nAccept: application/json\r\n\r\n",
            self.address
        )
        .map_err(fail)?;
        let mut response = Vec::new();
        stream
            .take(16 * 1024 * 1024)
            .read_to_end(&mut response)
            .map_err(fail)?;
        let response = String::from_utf8_lossy(&response);
        let (head, body) = response
            .split_once("\r\n\r\n")
            .ok_or_else(|| format!("Prometheus at {}: no HTTP answer", self.address))?;
        let status = head.split_whitespace().nth(1).unwrap_or("?");
        if status != "200" {
            return Err(format!(
                "Prometheus at {} answered {status}: {}",
                self.address,
                crate::format::clip(body.trim(), 200)
            ));
        }
        Ok(body.to_string())
    }
}

/// The points of a `query_range` answer (a matrix), summed over its series.
fn parse_matrix(body: &str) -> Result<Vec<(i64, f64)>, String> {
    let answer: serde_json::Value =
        serde_json::from_str(body).map_err(|e| format!("Prometheus answered no JSON: {e}"))?;
    if answer["status"] != "success" {
        return Err(format!(
            "Prometheus: {}",
            answer["error"].as_str().unwrap_or("the query failed")
        ));
    }
    let mut points: std::collections::BTreeMap<i64, f64> = std::collections::BTreeMap::new();
    for series in answer["data"]["result"].as_array().into_iter().flatten() {
        for pair in series["values"].as_array().into_iter().flatten() {
            let t = pair[0].as_f64();
            let v = pair[1].as_str().and_then(|v| v.parse::<f64>().ok());
            if let (Some(t), Some(v)) = (t, v)
                && v.is_finite()
            {
                *points.entry((t * 1000.0).round() as i64).or_default() += v;
            }
        }
    }
    Ok(points.into_iter().collect())
}

/// A label value as a PromQL string.
pub fn quoted(value: &str) -> String {
    let mut out = String::from("\"");
    for c in value.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_plain_http_with_an_optional_prefix() {
        let p = Prometheus::parse("http://127.0.0.1:9090").unwrap();
        assert_eq!(
            (p.address.as_str(), p.prefix.as_str()),
            ("127.0.0.1:9090", "")
        );
        let p = Prometheus::parse("http://prom.internal/monitoring/prometheus/").unwrap();
        assert_eq!(
            (p.address.as_str(), p.prefix.as_str()),
            ("prom.internal:80", "/monitoring/prometheus")
        );
        assert!(
            Prometheus::parse("https://prom")
                .unwrap_err()
                .contains("http://")
        );
        assert!(Prometheus::parse("http://").is_err());
    }

    #[test]
    fn matrices_are_summed_per_time_and_errors_said() {
        let body = r#"{"status":"success","data":{"resultType":"matrix","result":[
            {"metric":{"queue":"a"},"values":[[1700000000,"3"],[1700000015.5,"4"]]},
            {"metric":{"queue":"a","shard":"1"},"values":[[1700000000,"1"],[1700000030,"NaN"]]}]}}"#;
        assert_eq!(
            parse_matrix(body).unwrap(),
            vec![(1_700_000_000_000, 4.0), (1_700_000_015_500, 4.0)]
        );
        let failed = r#"{"status":"error","errorType":"bad_data","error":"parse error"}"#;
        assert_eq!(parse_matrix(failed).unwrap_err(), "Prometheus: parse error");
        assert!(parse_matrix("<html>").is_err());
    }

    #[test]
    fn label_values_are_quoted_for_promql() {
        assert_eq!(quoted(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(Prometheus::step(300), 1.25);
        assert_eq!(Prometheus::step(60), 1.0);
    }
}
