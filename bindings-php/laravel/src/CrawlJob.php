<?php

namespace Crawlq\Laravel;

/**
 * A queued job the crawlq driver can schedule: it names the URL it fetches, which is the item's
 * identity in the frontier (de-duplication) and its host (politeness).
 *
 * ```php
 * final class FetchPage implements ShouldQueue, CrawlJob
 * {
 *     use Dispatchable, InteractsWithQueue, Queueable;
 *
 *     public function __construct(public string $url) {}
 *
 *     public function crawlUrl(): string { return $this->url; }
 *
 *     public function handle(): void { ... }
 * }
 * ```
 *
 * A job is queued as a crawl request (docs/PROTOCOL.md section 10): a GET of its URL, Laravel's
 * job payload under `frameworks.laravel`, so a Scrapy or Crawlee crawler on the same queue can
 * fetch it too. A job may also define:
 *
 * - `crawlPriority(): int`: higher is leased first within its host;
 * - `crawlFields(): array`: the request's shared fields, which every framework reads: `method`,
 *   `headers` (`[[name, value], ...]` or `[name => value]`), `body` (a byte string),
 *   `user_data` (an array), `label`, `depth`, `found_on`. A GET without a body is known by its
 *   canonical URL, any other request by its method, URL and body, as every framework knows it.
 */
interface CrawlJob
{
    /** The URL this job fetches. */
    public function crawlUrl(): string;
}
