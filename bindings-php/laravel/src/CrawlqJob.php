<?php

namespace Crawlq\Laravel;

use Crawlq\Lease;
use Crawlq\Queue as Frontier;
use Crawlq\SeedReport;
use Illuminate\Container\Container;
use Illuminate\Contracts\Queue\Job as JobContract;
use Illuminate\Queue\Jobs\Job;

/**
 * A leased crawlq item as a Laravel job. Laravel's answers map to the lease: delete is an ack,
 * release a nack for a retry (attempt counted, crawlq's backoff when the delay is 0), fail a
 * dead letter with the exception's message. In a job class, `$this->job` is this object.
 */
class CrawlqJob extends Job implements JobContract
{
    /** @var array<string, mixed> */
    private array $decoded;
    private ?\Throwable $lastException = null;
    /** What crawlq answered for this lease: 'acked', 'retried', 'dead' or 'lost' (null: not yet). */
    private ?string $outcome = null;

    /**
     * @param array<string, mixed> $request the lease's crawl request (`Crawlq\request_of`)
     */
    public function __construct(
        Container $container,
        private readonly Frontier $frontier,
        private readonly Lease $lease,
        private readonly array $request,
        ?string $connectionName,
        string $queue,
        ?string $handler,
    ) {
        $this->container = $container;
        $this->connectionName = $connectionName;
        $this->queue = $queue;
        $this->decoded = self::isLaravelRequest($request)
            ? $request['frameworks']['laravel']
            : self::handlerPayload($lease, $request, (string) $handler);
    }

    /** True for a crawl request a Laravel job was queued as (its payload under `frameworks.laravel`). */
    public static function isLaravelRequest(array $request): bool
    {
        $laravel = $request['frameworks']['laravel'] ?? null;
        return is_array($laravel) && is_string($laravel['job'] ?? null);
    }

    /** The crawl request this job runs: URL, method, headers, body, user data, label, depth, ... */
    public function crawlRequest(): array
    {
        return $this->request;
    }

    /** The crawlq lease behind this job (URL, host, attempt, token, leasedAt, ...). */
    public function lease(): Lease
    {
        return $this->lease;
    }

    /** The URL this job fetches. */
    public function url(): ?string
    {
        return $this->lease->url;
    }

    /**
     * Push the lease's deadline to now + `$seconds`, for a job that runs longer than the
     * connection's lease time. Returns the new deadline (seconds since the epoch).
     *
     * @throws \Crawlq\LeaseLostException when the lease expired and another worker may have it
     */
    public function extendLease(float $seconds): float
    {
        return $this->frontier->extend($this->lease, $seconds);
    }

    /** What crawlq answered for this lease: 'acked', 'retried', 'dead', 'lost', or null. */
    public function outcome(): ?string
    {
        return $this->outcome;
    }

    public function getJobId()
    {
        return $this->lease->id;
    }

    public function getRawBody()
    {
        return json_encode($this->decoded, \JSON_UNESCAPED_UNICODE | \JSON_UNESCAPED_SLASHES);
    }

    public function payload()
    {
        return $this->decoded;
    }

    /** 1 on the first delivery, 2 on the first retry, ... (expired leases count). */
    public function attempts()
    {
        return $this->lease->attempt;
    }

    /** Keeps the exception a run raised, as the reason of the nack or dead letter that follows. */
    public function noteException(\Throwable $e): void
    {
        $this->lastException = $e;
    }

    public function fail($e = null)
    {
        if ($e !== null) {
            $this->lastException = $e;
        }
        parent::fail($e);
    }

    /**
     * Ack this job and queue the CrawlJobs found on its page, in one round trip (crawlq's
     * ackWithRequests): the page's links cost no call of their own, and the frontier never
     * looks finished in between. The job is deleted (the worker does not ack it again); a job
     * already deleted, released or failed only queues the links.
     * Refused jobs are in the report's `invalid` with their index; the links are queued even
     * when the lease was lost (outcome() says 'lost').
     *
     * ```php
     * public function handle(): void
     * {
     *     $links = ...;   // new FetchPage(...) per link found
     *     $this->job->deleteWithLinks($links);
     * }
     * ```
     *
     * @param list<object> $jobs
     * @return SeedReport ids per job (null: a duplicate or refused), added, duplicates, invalid
     * @throws InvalidCrawlJobException when a job names no URL (nothing is queued or acked)
     */
    public function deleteWithLinks(array $jobs): SeedReport
    {
        /** @var CrawlqQueue $connection */
        $connection = $this->container['queue']->connection($this->connectionName);
        if ($this->isDeleted() || $this->isReleased() || $this->hasFailed()) {
            // answered already: the links are queued all the same
            return $connection->bulk($jobs, '', $this->queue);
        }
        $answer = $connection->ackWithJobs($this->lease, $jobs, $this->queue);
        parent::delete();
        $this->answer($answer['acked'] ? 'acked' : 'lost');
        return $answer['links'];
    }

    /** Ack the lease; after fail(), dead-letter it instead. */
    public function delete()
    {
        parent::delete();
        if ($this->hasFailed()) {
            $this->answer($this->frontier->nack($this->lease, ['retry' => false, 'reason' => $this->reason('failed')]));
        } else {
            $this->answer($this->frontier->ack($this->lease) ? 'acked' : 'lost');
        }
    }

    /**
     * Retry later: `$delay` seconds, or crawlq's backoff when it is 0. The stored request counts
     * the retry; every other framework's fields are kept.
     */
    public function release($delay = 0)
    {
        parent::release($delay);
        // the stored request, one more retry counted: what other frameworks wrote stays as it is
        $payload = \Crawlq\request_update($this->lease, ['retries' => $this->request['retries'] + 1]);
        $options = ['retry' => true, 'reason' => $this->reason('released'), 'payload' => $payload];
        if ($delay > 0) {
            $options['delay'] = (float) $delay;
        }
        $this->answer($this->frontier->nack($this->lease, $options));
    }

    /**
     * The host answered "slow down" (HTTP 429, or 503 with Retry-After): retry without counting
     * the attempt, grow the host's adaptive delay, and hold the retry and every lease of the
     * host at least `$retryAfter` (the Retry-After header's text: seconds or an HTTP-date;
     * null or one that is neither: the adaptive hold alone). For example, in a job's handle():
     * `return $this->job->releaseRateLimited($response->header('Retry-After'));`
     */
    public function releaseRateLimited(?string $retryAfter = null): void
    {
        parent::release(0);
        $this->answer($this->frontier->nack($this->lease, [
            'retry' => true,
            'rate_limited' => true,
            'reason' => $this->reason('rate limited'),
            // the header as the server sent it: one that is neither seconds nor a date is ignored
            'retry_after_header' => $retryAfter,
        ]));
    }

    private function answer(string $outcome): void
    {
        $this->outcome = $outcome;
        if ($outcome === 'lost') {
            $this->warn("crawlq: the lease of {$this->lease->url} expired before the job answered; another worker may run it again (raise the connection's lease_ttl, or extendLease())");
        } elseif ($outcome === 'dead' && !$this->hasFailed()) {
            // crawlq's max_attempts came before the worker's --tries: Laravel's failed() hook
            // did not run for this job.
            $this->warn("crawlq: {$this->lease->url} reached the queue's max_attempts ({$this->lease->attempt} attempts) and is a dead letter; keep max_attempts above --tries");
        }
    }

    private function reason(string $fallback): string
    {
        $e = $this->lastException;
        return $e === null ? $fallback : ($e->getMessage() !== '' ? $e->getMessage() : get_class($e));
    }

    private function warn(string $message): void
    {
        if ($this->container->bound('log')) {
            $this->container['log']->warning($message);
        } else {
            error_log($message);
        }
    }

    /**
     * @param array<string, mixed> $request
     * @return array<string, mixed> a Laravel payload that runs `$handler` for a request another
     *         framework (or the plain API) seeded
     */
    private static function handlerPayload(Lease $lease, array $request, string $handler): array
    {
        return [
            'uuid' => $lease->id,
            'displayName' => $handler,
            'job' => CallHandler::class . '@call',
            'maxTries' => null,
            'maxExceptions' => null,
            'failOnTimeout' => false,
            'backoff' => null,
            'timeout' => null,
            'retryUntil' => null,
            'data' => ['handler' => $handler, 'url' => $lease->url, 'host' => $lease->host, 'payload' => $lease->payload, 'request' => $request],
        ];
    }
}
