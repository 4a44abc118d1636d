<?php

namespace Crawlq\Laravel;

use Illuminate\Queue\Connectors\ConnectorInterface;

/**
 * Makes a CrawlqQueue from a `config/queue.php` connection:
 *
 * ```php
 * 'crawlq' => [
 *     'driver' => 'crawlq',
 *     'url' => env('CRAWLQ_URL', 'redis://127.0.0.1:6379'),
 *     // or, in place of 'url', a Redis connection of config/database.php, as Laravel's redis
 *     // driver names one: 'connection' => 'default',
 *     'queue' => env('CRAWLQ_QUEUE', 'frontier'),
 *     'retry_after' => 90,        // the lease time of a popped job, in seconds
 *     'block_for' => 1.0,         // how long a pop waits for a due host
 *     'options' => ['host_delay' => 1.0, 'max_attempts' => 5],   // crawlq Queue options
 *     'handler' => null,          // 'App\Crawl\PageHandler@handle' for items other languages seed
 *     'after_commit' => false,
 *     'crawl' => null,            // a named crawl the jobs go into (docs/crawls.md)
 *     'lease_crawls' => null,     // the named crawls its workers pop from, e.g. ['shop']; null: all
 * ],
 * ```
 */
class CrawlqConnector implements ConnectorInterface
{
    /** @param ?\ArrayAccess<string, mixed> $appConfig the application's configuration, for 'connection' */
    public function __construct(private ?\ArrayAccess $appConfig = null)
    {
    }

    public function connect(array $config)
    {
        if (!extension_loaded('crawlq')) {
            throw new \RuntimeException('the crawlq queue driver needs the crawlq PHP extension (extension=crawlq in php.ini)');
        }
        if (!isset($config['url']) && isset($config['connection'])) {
            $config['url'] = $this->urlOfRedisConnection((string) $config['connection']);
        }
        if (!isset($config['url'], $config['queue'])) {
            throw new \InvalidArgumentException("a crawlq queue connection needs 'url' (or 'connection') and 'queue'");
        }
        return new CrawlqQueue(
            (string) $config['url'],
            (string) $config['queue'],
            (array) ($config['options'] ?? []),
            (float) ($config['block_for'] ?? 1.0),
            isset($config['retry_after']) ? (float) $config['retry_after'] : null,
            $config['handler'] ?? null,
            (bool) ($config['after_commit'] ?? false),
            isset($config['crawl']) ? (string) $config['crawl'] : null,
            $config['lease_crawls'] ?? null,
        );
    }

    /**
     * The URL of a Redis connection of config/database.php (`database.redis.<name>`): its
     * `url`, or one made of its `scheme` (tcp, tls, unix; or one in the host, as phpredis takes
     * `tls://host`), `host`, `port`, `path`, `username`, `password` and `database`,
     * percent-encoded.
     */
    private function urlOfRedisConnection(string $name): string
    {
        $redis = $this->appConfig["database.redis.$name"] ?? null;
        if (!is_array($redis) || in_array($name, ['client', 'options', 'clusters'], true)) {
            throw new \InvalidArgumentException(
                "crawlq: 'connection' => '$name' names no Redis connection of config/database.php (database.redis.$name)"
            );
        }
        if (!empty($redis['url'])) {
            return (string) $redis['url'];
        }
        $scheme = (string) ($redis['scheme'] ?? 'tcp');
        $host = (string) ($redis['host'] ?? '127.0.0.1');
        // phpredis takes TLS as a scheme in the host: 'host' => 'tls://cache.internal'
        if (preg_match('#^([a-z]+)://(.*)$#i', $host, $m)) {
            [$scheme, $host] = [strtolower($m[1]), $m[2]];
        }
        $user = (string) ($redis['username'] ?? '');
        $password = (string) ($redis['password'] ?? '');
        $database = (int) ($redis['database'] ?? 0);
        if ($scheme === 'unix') {
            $query = ['db' => $database] + ($user !== '' ? ['user' => $user] : []) + ($password !== '' ? ['pass' => $password] : []);
            return 'unix://' . ($redis['path'] ?? $host) . '?' . http_build_query($query, '', '&', PHP_QUERY_RFC3986);
        }
        if (!in_array($scheme, ['tcp', 'redis', 'tls', 'ssl', 'rediss'], true)) {
            throw new \InvalidArgumentException("crawlq: Redis connection '$name' has the scheme '$scheme': tcp, tls or unix are read");
        }
        $auth = $password === '' && $user === '' ? '' : rawurlencode($user) . ($password !== '' ? ':' . rawurlencode($password) : '') . '@';
        if (str_contains($host, ':') && $host[0] !== '[') {
            $host = "[$host]"; // an IPv6 address
        }
        $tls = in_array($scheme, ['tls', 'ssl', 'rediss'], true);
        return ($tls ? 'rediss' : 'redis') . "://$auth$host:" . (int) ($redis['port'] ?? 6379) . "/$database";
    }
}
