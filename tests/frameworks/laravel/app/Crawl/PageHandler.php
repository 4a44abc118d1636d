<?php

namespace App\Crawl;

use Crawlq\Laravel\CrawlqJob;

/**
 * The connection's `handler`: runs the requests other frameworks seeded (Scrapy, Crawlee), as
 * FetchPage runs Laravel's own.
 */
final class PageHandler
{
    /** @param array{url: string, host: string, payload: mixed, request: array<string, mixed>} $data */
    public function handle(CrawlqJob $job, array $data): void
    {
        (new PageFetcher($job))->fetch($data['request']);
    }
}
