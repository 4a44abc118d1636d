<?php

namespace App\Jobs;

use App\Crawl\PageFetcher;
use Crawlq\Laravel\CrawlJob;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;

/**
 * Fetch one page of the test site and queue its links (App\Crawl\PageFetcher). Its crawl
 * request says who seeded it (an `X-Seeded-By` header the site logs), how deep it is and the
 * page it was found on, for whichever framework fetches it.
 */
final class FetchPage implements ShouldQueue, CrawlJob
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public function __construct(public string $url, public int $depth = 0, public ?string $foundOn = null)
    {
    }

    public function crawlUrl(): string
    {
        return $this->url;
    }

    public function crawlFields(): array
    {
        return ['headers' => [['X-Seeded-By', 'laravel']], 'depth' => $this->depth, 'found_on' => $this->foundOn];
    }

    public function handle(): void
    {
        (new PageFetcher($this->job))->fetch($this->job->crawlRequest());
    }
}
