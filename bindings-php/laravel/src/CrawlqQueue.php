<?php

namespace Crawlq\Laravel;

use Crawlq\Lease;
use Crawlq\Queue as Frontier;
use Crawlq\SeedReport;
use Illuminate\Contracts\Queue\ClearableQueue;
use Illuminate\Contracts\Queue\Queue as QueueContract;
use Illuminate\Queue\Queue;

/**
 * A Laravel queue on crawlq frontiers: each Laravel queue name is a crawlq queue of that name on
 * one Redis. A job is a crawl request (docs/PROTOCOL.md section 10): a GET of its URL (see
 * CrawlJob) with Laravel's job payload under `frameworks.laravel`, so a URL is queued once for
 * the frontier's life, a Scrapy or Crawlee crawler sharing the queue fetches it like its own,
 * its host is leased no faster than its politeness delay by any worker in any language, and a
 * failed job is a dead letter. Requests seeded by other frameworks run through the connection's
 * `handler`.
 *
 * ```php
 * Queue::connection('crawlq')->push(new FetchPage('https://example.com/'));   // its id, or null: seen
 * Queue::connection('crawlq')->bulk($jobs);                                   // one round trip
 * $this->job->deleteWithLinks($jobs);     // in a job: ack it and queue what its page links, one round trip
 * ```
 */
class CrawlqQueue extends Queue implements QueueContract, ClearableQueue
{
    /** The fields of a crawl request every framework reads, which a job's crawlFields() may set. */
    private const SHARED_FIELDS = ['method', 'headers', 'body', 'user_data', 'label', 'depth', 'found_on'];

    /** @var array<string, Frontier> one open frontier per queue name */
    private array $frontiers = [];

    /**
     * @param array<string, mixed> $options crawlq Queue options (host_delay, max_attempts, ...)
     * @param float $blockFor how long a pop waits in Redis for a due host before it answers null
     * @param float|null $leaseTtl the lease time of a popped job (`retry_after`; null: the
     *        options' lease_ttl, else the core's default)
     * @param string|null $handler `Class@method` that runs items seeded without a Laravel job
     *        (by crawlq workers in other languages); null dead-letters them
     */
    public function __construct(
        private readonly string $url,
        private readonly string $default,
        private readonly array $options = [],
        private readonly float $blockFor = 1.0,
        private readonly ?float $leaseTtl = null,
        private readonly ?string $handler = null,
        bool $dispatchAfterCommit = false,
        private readonly ?string $crawl = null,
        private readonly string|array|null $leaseCrawls = null,
    ) {
        $this->dispatchAfterCommit = $dispatchAfterCommit;
    }

    /**
     * The options of the driver's own seeds: the connection's `crawl`, the named crawl its jobs
     * go into (de-duplicated within it, its hosts shared with every other crawl; the links a
     * job's page queues with `deleteWithLinks` go into the page's crawl). Jobs are popped from
     * every crawl of the queue, or only from the connection's `lease_crawls`.
     *
     * @return array<string, string>
     */
    private function seedOptions(): array
    {
        return $this->crawl === null ? [] : ['crawl' => $this->crawl];
    }

    /** The crawlq queue behind a Laravel queue name (null: the connection's default queue). */
    public function frontier(?string $queue = null): Frontier
    {
        $name = $this->getQueue($queue);
        return $this->frontiers[$name] ??= new Frontier($this->url, $name, $this->frontierOptions());
    }

    /**
     * The options the frontiers open with: the connection's, `retry_after` as the lease time,
     * and the core's rule for framework adapters (a job's lease is extended every third of
     * its lease time while it runs, unless `extend_every` is set).
     *
     * @return array<string, mixed>
     */
    private function frontierOptions(): array
    {
        $options = $this->options;
        if ($this->leaseTtl !== null) {
            $options['lease_ttl'] = $this->leaseTtl;
        }
        if ($this->leaseCrawls !== null) {
            if (isset($options['lease_crawls'])) {
                throw new \InvalidArgumentException(
                    "a crawlq connection's 'lease_crawls' and its options' lease_crawls are both set: set one of them"
                );
            }
            // (a list of names or one string of them; the queue's option checks them)
            $options['lease_crawls'] = $this->leaseCrawls;
        }
        return \Crawlq\framework_options($options);
    }

    /** The queue name a job goes to. */
    public function getQueue(?string $queue): string
    {
        return $queue ?: $this->default;
    }

    /** Items queued or leased (what is left of the crawl). */
    public function size($queue = null): int
    {
        $stats = $this->frontier($queue)->stats();
        return $stats['pending'] + $stats['leased'];
    }

    /**
     * Delete a queue's jobs (`php artisan queue:clear crawlq --queue=...`): how many were
     * queued or leased.
     *
     * On a connection with a `crawl`, its crawl is deleted (deleteCrawl: its items, dead ones
     * too, while workers run; other crawls are not touched, and the name then starts a fresh
     * crawl, to which its URLs are new). Otherwise the whole crawlq queue is removed (removeQueue: every item, whichever
     * framework queued it, dead letters, host settings and the seen set, so its URLs can be
     * queued again); that is refused with a Crawlq\InvalidArgumentException while jobs are
     * leased: stop the workers first.
     *
     * @param string|null $queue
     */
    public function clear($queue): int
    {
        $frontier = $this->frontier($queue);
        if ($this->crawl !== null) {
            $gone = $frontier->deleteCrawl($this->crawl);
            return $gone['ready'] + $gone['delayed'] + $gone['leased'];
        }
        $stats = $frontier->stats();
        $frontier->removeQueue();
        // (the next job opens the queue again, as a new one)
        unset($this->frontiers[$this->getQueue($queue)]);
        return $stats['pending'] + $stats['leased'];
    }

    /**
     * Queue a CrawlJob.
     *
     * @return string|null the job's id, or null when its URL was queued before (de-duplicated)
     * @throws InvalidCrawlJobException when the job names no URL or its URL is refused
     */
    public function push($job, $data = '', $queue = null)
    {
        return $this->enqueueUsing(
            $job,
            $this->createPayload($job, $this->getQueue($queue), $data),
            $queue,
            null,
            fn ($payload, $queue) => $this->pushRaw($payload, $queue),
        );
    }

    /**
     * Queue a payload this driver made (`createPayload`); `$options['delay']` in seconds.
     *
     * @return string|null the job's id, or null when its URL was queued before
     */
    public function pushRaw($payload, $queue = null, array $options = [])
    {
        $decoded = json_decode($payload, true);
        $dead = is_array($decoded) ? ($decoded['crawlq']['dead'] ?? null) : null;
        if (is_string($dead)) {
            // `queue:retry` of a dead letter (CrawlqFailedJobProvider): the item itself is queued
            // again with fresh attempts; its URL pushed anew would be a duplicate
            return $this->frontier($queue)->requeueDead([$dead]) > 0 ? $dead : null;
        }
        $report = $this->frontier($queue)->seedRequests([$this->item($decoded, $options['delay'] ?? null)], $this->seedOptions());
        if ($report->invalid) {
            throw InvalidCrawlJobException::fromSeedReport($report->invalid[0]);
        }
        return $report->ids[0];
    }

    /** Queue a CrawlJob to run after `$delay` (seconds, DateInterval or DateTime). */
    public function later($delay, $job, $data = '', $queue = null)
    {
        return $this->enqueueUsing(
            $job,
            $this->createPayload($job, $this->getQueue($queue), $data),
            $queue,
            $delay,
            fn ($payload, $queue, $delay) => $this->pushRaw($payload, $queue, ['delay' => (float) $this->secondsUntil($delay)]),
        );
    }

    /**
     * Queue many CrawlJobs in one round trip. A job whose URL is refused does not stop the
     * others: it is in the report's `invalid` with its index.
     *
     * Unlike push(), the jobs are queued at once even inside a database transaction.
     *
     * @param list<object> $jobs
     * @return SeedReport ids per job (null: a duplicate or invalid), added, duplicates, invalid
     * @throws InvalidCrawlJobException when a job names no URL (nothing is queued)
     */
    public function bulk($jobs, $data = '', $queue = null)
    {
        $jobs = array_values((array) $jobs);
        $report = $this->frontier($queue)->seedRequests($this->requestItems($jobs, $data, $queue), $this->seedOptions());
        $this->jobsQueued($report, $jobs);
        return $report;
    }

    /**
     * Ack a leased job and queue the CrawlJobs found on its page, in one round trip
     * (CrawlqJob::deleteWithLinks). Refused jobs are in the report's `invalid` with their index.
     *
     * @param list<object> $jobs
     * @return array{acked: bool, links: SeedReport}
     * @throws InvalidCrawlJobException when a job names no URL (nothing is queued or acked)
     */
    public function ackWithJobs(Lease $lease, array $jobs, ?string $queue = null): array
    {
        $jobs = array_values($jobs);
        $answer = $this->frontier($queue)->ackWithRequests($lease, $this->requestItems($jobs, '', $queue));
        $this->jobsQueued($answer['links'], $jobs);
        return $answer;
    }

    /**
     * The crawl requests `$jobs` are queued as.
     *
     * @param list<object> $jobs
     * @return list<array<string, mixed>>
     */
    private function requestItems(array $jobs, mixed $data, ?string $queue): array
    {
        $items = [];
        foreach ($jobs as $job) {
            $items[] = $this->item(json_decode($this->createPayload($job, $this->getQueue($queue), $data), true), null);
        }
        return $items;
    }

    /** @param list<object> $jobs */
    private function jobsQueued(SeedReport $report, array $jobs): void
    {
        foreach ($report->ids as $index => $id) {
            if ($id !== null) {
                $this->raiseJobQueuedEvent($id, $jobs[$index]);
            }
        }
    }

    /**
     * Lease the next due job, waiting up to `block_for` seconds; null when none was due. An item
     * that is no crawl request (a host item, a newer format) is a dead letter `undecodable: ...`;
     * one without a Laravel job (seeded by another framework) runs through the connection's
     * handler, or is a dead letter when it has none.
     */
    public function pop($queue = null)
    {
        $name = $this->getQueue($queue);
        $frontier = $this->frontier($name);
        foreach ($frontier->lease(1, $this->blockFor, $this->leaseTtl) as $lease) {
            try {
                $request = \Crawlq\request_of($lease);
            } catch (\Crawlq\Exception $e) {
                $frontier->nack($lease, ['retry' => false, 'reason' => 'undecodable: ' . $e->getMessage()]);
                continue;
            }
            if (CrawlqJob::isLaravelRequest($request) || $this->handler !== null) {
                return new CrawlqJob($this->container, $frontier, $lease, $request, $this->connectionName, $name, $this->handler);
            }
            $frontier->nack($lease, ['retry' => false, 'reason' => "no handler: {$lease->url} was queued without a Laravel job and the connection has no 'handler'"]);
        }
        return null;
    }

    /** True when nothing is queued or leased on the queue by any worker: the crawl is over. */
    public function isFinished(?string $queue = null): bool
    {
        return $this->frontier($queue)->isFinished();
    }

    /**
     * Adds what the driver needs to a job's payload: the URL (and priority, key) it is queued
     * under, so pushRaw, and a worker in any language, can read it from the payload alone.
     */
    protected function createPayloadArray($job, $queue, $data = '')
    {
        $payload = parent::createPayloadArray($job, $queue, $data);
        $payload['crawlq'] = $this->crawlFields($job, $data);
        return $payload;
    }

    /** @return array{url: string, priority?: int, request?: array<string, mixed>} */
    private function crawlFields(mixed $job, mixed $data): array
    {
        if ($job instanceof CrawlJob) {
            $fields = ['url' => $job->crawlUrl()];
            if (method_exists($job, 'crawlPriority')) {
                $fields['priority'] = $job->crawlPriority();
            }
            if (method_exists($job, 'crawlFields')) {
                $shared = $job->crawlFields();
                $unknown = array_diff(array_keys($shared), self::SHARED_FIELDS);
                if ($unknown) {
                    throw new InvalidCrawlJobException(get_class($job) . '::crawlFields() names ' . implode(', ', $unknown) . '; a crawl request\'s shared fields are ' . implode(', ', self::SHARED_FIELDS));
                }
                // base64 here: the job payload is JSON text, and a body is bytes
                if (isset($shared['body'])) {
                    $shared['body'] = base64_encode((string) $shared['body']);
                }
                $fields['request'] = $shared;
            }
            return $fields;
        }
        // 'Class@method' jobs name their URL in the data.
        if (is_string($job) && is_array($data) && is_string($data['url'] ?? null)) {
            return ['url' => $data['url']];
        }
        $what = is_object($job) ? get_class($job) : (is_string($job) ? $job : get_debug_type($job));
        throw new InvalidCrawlJobException("crawlq queues crawl jobs: {$what} must implement " . CrawlJob::class . ' (or, for a Class@method job, pass [\'url\' => ...] as its data)');
    }

    /**
     * The crawl request a job is queued as: a GET of its URL, the job's payload (without the
     * driver's own fields) under `frameworks.laravel`.
     *
     * @return array<string, mixed>
     */
    private function item(mixed $payload, ?float $delay): array
    {
        $fields = is_array($payload) ? ($payload['crawlq'] ?? null) : null;
        if (!is_array($fields) || !is_string($fields['url'] ?? null)) {
            throw new InvalidCrawlJobException('crawlq queues crawl jobs: this payload names no URL (make it with the crawlq connection)');
        }
        unset($payload['crawlq']);
        $item = ['url' => $fields['url']];
        foreach ((array) ($fields['request'] ?? []) as $name => $value) {
            $item[$name] = $name === 'body' ? base64_decode((string) $value, true) : $value;
        }
        $item['frameworks'] = ['laravel' => $payload];
        if (isset($fields['priority'])) {
            $item['priority'] = (int) $fields['priority'];
        }
        if ($delay !== null && $delay > 0) {
            $item['delay'] = $delay;
        }
        return $item;
    }
}
