<?php

namespace App\Crawl;

use App\Jobs\FetchPage;
use Crawlq\Laravel\CrawlqJob;

/**
 * Fetches one page of the test site as its crawl request says (method, headers, body) and queues
 * its links as FetchPage jobs: a 404 is a failed job (a dead letter at once), a 5xx an exception
 * (retried by the worker, up to --tries). Used for Laravel's own jobs and, through PageHandler,
 * for the requests other frameworks seeded.
 */
final class PageFetcher
{
    public function __construct(private readonly CrawlqJob $job)
    {
    }

    /** @param array<string, mixed> $request the job's crawl request (CrawlqJob::crawlRequest()) */
    public function fetch(array $request): void
    {
        $url = $request['url'];
        $headers = [
            'User-Agent: site-worker/' . getenv('WORKER'),
            // When crawlq leased the request (the Redis clock), so the site can check
            // politeness by lease times as well as by arrival times.
            'X-Crawlq-Leased-At: ' . $this->job->lease()->leasedAt,
        ];
        foreach ($request['headers'] as [$name, $value]) {
            $headers[] = "{$name}: {$value}";
        }
        $http = ['method' => $request['method'], 'header' => $headers, 'ignore_errors' => true, 'timeout' => 10];
        if ($request['body'] !== null) {
            $http['content'] = $request['body'];
        }
        $body = @file_get_contents($url, false, stream_context_create(['http' => $http]));
        if ($body === false) {
            throw new \RuntimeException("fetch failed: {$url}");
        }
        $status = (int) explode(' ', $http_response_header[0] ?? 'HTTP/1.1 0')[1];
        if ($status === 404) {
            $this->job->fail(new \RuntimeException('HTTP 404'));
            return;
        }
        if ($status >= 500) {
            throw new \RuntimeException("HTTP {$status}");
        }
        preg_match_all('/href="([^"#]+)"/', $body, $matches);
        $jobs = [];
        foreach ($matches[1] as $href) {
            $link = \Crawlq\resolve_url($url, $href);
            if ($link !== null) {
                $jobs[] = new FetchPage($link, $request['depth'] + 1, $url);
            }
        }
        // the page's ack and its links in one round trip
        $report = $this->job->deleteWithLinks($jobs);
        foreach ($report->invalid as $invalid) {
            logger()->warning("link refused: {$invalid['input']}: {$invalid['reason']}");
        }
    }
}
