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
 * A job may also define `crawlPriority(): int` (higher is leased first within its host). A job
 * is a GET of its URL, known by its canonical URL as every framework knows it (docs/PROTOCOL.md
 * section 10).
 */
interface CrawlJob
{
    /** The URL this job fetches. */
    public function crawlUrl(): string;
}
