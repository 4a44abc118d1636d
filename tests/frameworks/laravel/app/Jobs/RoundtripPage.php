<?php

namespace App\Jobs;

use Crawlq\Laravel\CrawlJob;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Queue\InteractsWithQueue;

/**
 * The request Laravel seeds in the adapter round trip (tests/frameworks/roundtrip.py): the
 * shared fields of a crawl request, and `$note`, a property only Laravel understands (it rides in
 * the job's payload under `frameworks.laravel`).
 */
final class RoundtripPage implements ShouldQueue, CrawlJob
{
    use InteractsWithQueue, Queueable;

    /** @param array<string, mixed> $fields shared fields, the body as base64 (the job is JSON) */
    public function __construct(public string $url, public array $fields, public string $note)
    {
    }

    public function crawlUrl(): string
    {
        return $this->url;
    }

    public function crawlFields(): array
    {
        return ['body' => base64_decode($this->fields['body'])] + $this->fields;
    }

    public function handle(): void
    {
    }
}
