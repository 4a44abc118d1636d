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
    public function connect(array $config)
    {
        if (!extension_loaded('crawlq')) {
            throw new \RuntimeException('the crawlq queue driver needs the crawlq PHP extension (extension=crawlq in php.ini)');
        }
        if (!isset($config['url'], $config['queue'])) {
            throw new \InvalidArgumentException("a crawlq queue connection needs 'url' and 'queue'");
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
}
