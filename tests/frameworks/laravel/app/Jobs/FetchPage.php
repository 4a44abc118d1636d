<?php

namespace App\Jobs;

use Crawlq\Laravel\CrawlJob;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Foundation\Bus\Dispatchable;
use Illuminate\Queue\InteractsWithQueue;

/**
 * Fetch one page of the test site and queue its links: a 404 is a failed job (a dead letter at
 * once), a 5xx an exception (retried by the worker, up to --tries).
 */
final class FetchPage implements ShouldQueue, CrawlJob
{
    use Dispatchable, InteractsWithQueue, Queueable;

    public function __construct(public string $url)
    {
    }

    public function crawlUrl(): string
    {
        return $this->url;
    }

    public function handle(): void
    {
        $lease = $this->job->lease();
        $headers = [
            'User-Agent: site-worker/' . getenv('WORKER'),
            // When crawlq leased the request (the Redis clock), so the site can check
            // politeness by lease times as well as by arrival times.
            'X-Crawlq-Leased-At: ' . $lease->leasedAt,
        ];
        $context = stream_context_create(['http' => ['header' => $headers, 'ignore_errors' => true, 'timeout' => 10]]);
        $body = @file_get_contents($this->url, false, $context);
        if ($body === false) {
            throw new \RuntimeException("fetch failed: {$this->url}");
        }
        $status = (int) explode(' ', $http_response_header[0] ?? 'HTTP/1.1 0')[1];
        if ($status === 404) {
            $this->fail(new \RuntimeException('HTTP 404'));
            return;
        }
        if ($status >= 500) {
            throw new \RuntimeException("HTTP {$status}");
        }
        preg_match_all('/href="([^"#]+)"/', $body, $matches);
        $jobs = [];
        foreach ($matches[1] as $href) {
            $url = \Crawlq\resolve_url($this->url, $href);
            if ($url !== null) {
                $jobs[] = new self($url);
            }
        }
        $report = $this->job->getContainer()['queue']->connection('crawlq')->bulk($jobs);
        foreach ($report->invalid as $invalid) {
            logger()->warning("link refused: {$invalid['input']}: {$invalid['reason']}");
        }
    }
}
