<?php

namespace Crawlq\Laravel;

use Crawlq\Queue as Frontier;
use Crawlq\SeedReport;
use Illuminate\Contracts\Queue\Queue as QueueContract;
use Illuminate\Queue\Queue;

/**
 * A Laravel queue on crawlq frontiers: each Laravel queue name is a crawlq queue of that name on
 * one Redis. A job is an item keyed by its URL (see CrawlJob) whose payload is Laravel's job
 * payload, so a URL is queued once for the frontier's life, its host is leased no faster than
 * its politeness delay by any worker in any language, and a failed job is a dead letter.
 *
 * ```php
 * Queue::connection('crawlq')->push(new FetchPage('https://example.com/'));   // its id, or null: seen
 * Queue::connection('crawlq')->bulk($jobs);                                   // one round trip
 * ```
 */
class CrawlqQueue extends Queue implements QueueContract
{
    /** @var array<string, Frontier> one open frontier per queue name */
    private array $frontiers = [];

    /**
     * @param array<string, mixed> $options crawlq Queue options (host_delay, max_attempts, ...)
     * @param float $blockFor how long a pop waits in Redis for a due host before it answers null
     * @param float|null $leaseTtl the lease time of a popped job (null: the queue's lease_ttl)
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
    ) {
        $this->dispatchAfterCommit = $dispatchAfterCommit;
    }

    /** The crawlq queue behind a Laravel queue name (null: the connection's default queue). */
    public function frontier(?string $queue = null): Frontier
    {
        $name = $this->getQueue($queue);
        return $this->frontiers[$name] ??= new Frontier($this->url, $name, $this->options ?: null);
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
        $report = $this->frontier($queue)->seed([$this->item($decoded, $options['delay'] ?? null)]);
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
        $items = [];
        foreach ($jobs as $job) {
            $items[] = $this->item(json_decode($this->createPayload($job, $this->getQueue($queue), $data), true), null);
        }
        $report = $this->frontier($queue)->seed($items);
        foreach ($report->ids as $index => $id) {
            if ($id !== null) {
                $this->raiseJobQueuedEvent($id, $jobs[$index]);
            }
        }
        return $report;
    }

    /** Lease the next due job, waiting up to `block_for` seconds; null when none was due. */
    public function pop($queue = null)
    {
        $name = $this->getQueue($queue);
        $frontier = $this->frontier($name);
        foreach ($frontier->lease(1, $this->blockFor, $this->leaseTtl) as $lease) {
            if (CrawlqJob::isLaravelPayload($lease->payload) || $this->handler !== null) {
                return new CrawlqJob($this->container, $frontier, $lease, $this->connectionName, $name, $this->handler);
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

    /** @return array{url: string, priority?: int, key?: string} */
    private function crawlFields(mixed $job, mixed $data): array
    {
        if ($job instanceof CrawlJob) {
            $fields = ['url' => $job->crawlUrl()];
            if (method_exists($job, 'crawlPriority')) {
                $fields['priority'] = $job->crawlPriority();
            }
            if (method_exists($job, 'crawlKey') && ($key = $job->crawlKey()) !== null) {
                $fields['key'] = $key;
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

    /** @return array<string, mixed> */
    private function item(mixed $payload, ?float $delay): array
    {
        $fields = is_array($payload) ? ($payload['crawlq'] ?? null) : null;
        if (!is_array($fields) || !is_string($fields['url'] ?? null)) {
            throw new InvalidCrawlJobException('crawlq queues crawl jobs: this payload names no URL (make it with the crawlq connection)');
        }
        $item = ['url' => $fields['url'], 'payload' => $payload];
        if (isset($fields['priority'])) {
            $item['priority'] = (int) $fields['priority'];
        }
        if (isset($fields['key'])) {
            $item['key'] = (string) $fields['key'];
        }
        if ($delay !== null && $delay > 0) {
            $item['delay'] = $delay;
        }
        return $item;
    }
}
