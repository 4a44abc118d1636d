<?php

declare(strict_types=1);

namespace App\Jobs;

use Crawlq\Lease;
use Crawlq\Queue;

/**
 * A crawl job shaped like a Laravel job: handle() takes one URL from the frontier, fetches it
 * and answers with the outcome policy "retry timeouts and 5xx, never 4xx or robots-blocked".
 * Links found on a page are seeded back (the frontier drops duplicates). In Laravel, make it
 * `implements ShouldQueue`, or call process() from an artisan worker loop (see the README).
 */
final class CrawlPageJob
{
    /** @var array<string, list<string>> Disallow prefixes of `User-agent: *`, per site */
    private array $robots = [];

    public function __construct(private Queue $frontier, private float $timeout = 10.0)
    {
    }

    /** Lease one URL and process it; null when there was nothing to do within `$wait`. */
    public function handle(float $wait = 5.0): ?string
    {
        $leases = $this->frontier->lease(1, $wait);
        return $leases === [] ? null : $this->process($leases[0]);
    }

    /**
     * Fetch the leased URL and answer the lease. Returns what happened: 'done', or the nack
     * outcome ('retried' or 'dead').
     */
    public function process(Lease $lease): string
    {
        $url = (string) $lease->url;
        if (!$this->allowedByRobots($url)) {
            return $this->frontier->nack($lease, ['retry' => false, 'reason' => 'blocked by robots.txt']);
        }
        [$status, $body, $error] = $this->fetch($url);
        if ($error !== null) {
            return $this->frontier->nack($lease, ['reason' => $error]); // timeout, connection: retry
        }
        if ($status === 429) {
            return $this->frontier->nack($lease, ['reason' => 'HTTP 429', 'rate_limited' => true]);
        }
        if ($status >= 500) {
            return $this->frontier->nack($lease, ['reason' => "HTTP $status"]); // retry with backoff
        }
        if ($status >= 400) {
            return $this->frontier->nack($lease, ['retry' => false, 'reason' => "HTTP $status"]);
        }
        preg_match_all('/href="([^"#]+)"/', $body, $links);
        $this->frontier->seed(array_values(array_filter(array_map(
            fn (string $href) => \Crawlq\resolve_url($url, $href),
            $links[1],
        ))));
        $this->frontier->ack($lease);
        return 'done';
    }

    /** @return array{0: int, 1: string, 2: ?string} status, body, transport error */
    private function fetch(string $url): array
    {
        $context = stream_context_create(['http' => ['timeout' => $this->timeout, 'ignore_errors' => true]]);
        $body = @file_get_contents($url, false, $context);
        if ($body === false) {
            return [0, '', error_get_last()['message'] ?? 'fetch failed'];
        }
        preg_match('{^HTTP/\S+ (\d{3})}', $http_response_header[0] ?? '', $m);
        return [(int) ($m[1] ?? 0), $body, null];
    }

    private function allowedByRobots(string $url): bool
    {
        $parts = parse_url($url);
        $site = $parts['scheme'] . '://' . $parts['host'] . (isset($parts['port']) ? ':' . $parts['port'] : '');
        if (!isset($this->robots[$site])) {
            [$status, $body] = $this->fetch($site . '/robots.txt');
            $this->robots[$site] = $status === 200 ? self::disallowed($body) : [];
        }
        $path = ($parts['path'] ?? '/') . (isset($parts['query']) ? '?' . $parts['query'] : '');
        foreach ($this->robots[$site] as $prefix) {
            if ($prefix !== '' && str_starts_with($path, $prefix)) {
                return false;
            }
        }
        return true;
    }

    /** @return list<string> */
    private static function disallowed(string $robots): array
    {
        $prefixes = [];
        $applies = false;
        foreach (preg_split('/\R/', $robots) as $line) {
            $line = trim(preg_replace('/#.*/', '', $line));
            if (preg_match('/^user-agent:\s*(.+)$/i', $line, $m)) {
                $applies = trim($m[1]) === '*';
            } elseif ($applies && preg_match('/^disallow:\s*(.*)$/i', $line, $m)) {
                $prefixes[] = trim($m[1]);
            }
        }
        return $prefixes;
    }
}
