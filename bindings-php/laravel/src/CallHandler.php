<?php

namespace Crawlq\Laravel;

use Illuminate\Contracts\Container\Container;
use Illuminate\Support\Str;

/**
 * Runs an item seeded without a Laravel job (by Scrapy, Crawlee or a crawlq worker in another
 * language) with the connection's `handler`: `$handler->handle(CrawlqJob $job, array $data)`
 * where `$data` is `['url' => ..., 'host' => ..., 'payload' => ..., 'request' => ...]`,
 * `request` being its crawl request (method, headers, body, user_data, label, depth, ...). A
 * handler that returns without answering acks the item; one that throws is retried like any
 * job. A `failed(array $data, \Throwable $e)` method, if the handler has one, runs when the
 * item becomes a dead letter.
 */
final class CallHandler
{
    public function __construct(private readonly Container $container)
    {
    }

    public function call(CrawlqJob $job, array $data): void
    {
        [$class, $method] = Str::parseCallback($data['handler'], 'handle');
        $this->container->make($class)->{$method}($job, $data);
        if (!$job->isDeletedOrReleased()) {
            $job->delete();
        }
    }

    public function failed(array $data, ?\Throwable $e): void
    {
        [$class] = Str::parseCallback($data['handler'], 'handle');
        $handler = $this->container->make($class);
        if (method_exists($handler, 'failed')) {
            $handler->failed($data, $e);
        }
    }
}
