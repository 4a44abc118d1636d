<?php

namespace Crawlq\Laravel;

use Illuminate\Queue\Failed\FailedJobProviderInterface;
use Illuminate\Queue\QueueManager;

/**
 * Laravel's failed-job store over crawlq's dead letters, so that `queue:failed` lists them,
 * `queue:retry` requeues them (the same item, its URL and payload, with fresh attempts: a URL
 * pushed again would be a duplicate), `queue:forget` purges one and `queue:flush` purges them
 * all. In config/queue.php:
 *
 * ```php
 * 'failed' => ['driver' => 'crawlq', 'connection' => 'crawlq'],
 * ```
 *
 * The dead letters are those of the connection's queue; every item of it is listed, whichever
 * framework or language queued it. A failed job of a crawlq connection is a dead letter already
 * (the driver's answer), so `log()` stores nothing for it. Failed jobs of other connections go to
 * the store Laravel builds from the same settings (its database store when they name a `table`,
 * else none), and are listed, retried and forgotten there as before.
 */
class CrawlqFailedJobProvider implements FailedJobProviderInterface
{
    /** Dead letters read per call by all(). */
    private const PAGE = 1000;

    public function __construct(
        private readonly QueueManager $queues,
        private readonly string $connection,
        private readonly FailedJobProviderInterface $others,
    ) {
    }

    private function crawlq(): CrawlqQueue
    {
        $queue = $this->queues->connection($this->connection);
        if (!$queue instanceof CrawlqQueue) {
            throw new \InvalidArgumentException("queue.failed.connection names '{$this->connection}', which is not a crawlq connection");
        }
        return $queue;
    }

    public function log($connection, $queue, $payload, $exception)
    {
        if ($this->queues->connection($connection) instanceof CrawlqQueue) {
            return null; // a dead letter already: crawlq keeps it
        }
        return $this->others->log($connection, $queue, $payload, $exception);
    }

    /** Every dead letter of the connection's queue, oldest first, then the other store's. */
    public function all()
    {
        $queue = $this->crawlq();
        $frontier = $queue->frontier();
        $failed = [];
        for ($offset = 0; ; $offset += self::PAGE) {
            $page = $frontier->dead(self::PAGE, $offset);
            foreach ($page as $dead) {
                $failed[] = $this->record($queue, $dead);
            }
            if (count($page) < self::PAGE) {
                break;
            }
        }
        return array_merge($failed, $this->others->all());
    }

    public function find($id)
    {
        $queue = $this->crawlq();
        $dead = $this->deadLetter($queue, (string) $id);
        return $dead === null ? $this->others->find($id) : $this->record($queue, $dead);
    }

    public function forget($id)
    {
        $queue = $this->crawlq();
        try {
            $purged = $queue->frontier()->purgeDead([(string) $id]) > 0;
        } catch (\Crawlq\InvalidArgumentException) {
            $purged = false; // not an id of this queue's items
        }
        // (Laravel's store without a table says yes to any id: asked only for one it holds)
        return $purged || ($this->others->find($id) !== null && $this->others->forget($id));
    }

    public function flush()
    {
        $this->crawlq()->frontier()->purgeDead();
        $this->others->flush();
    }

    /** The dead letter `$id` of the connection's queue, or null. */
    private function deadLetter(CrawlqQueue $queue, string $id): ?array
    {
        try {
            return $queue->frontier()->deadLetters([$id])[0];
        } catch (\Crawlq\InvalidArgumentException) {
            return null; // not an id of this queue's items (another store's)
        }
    }

    /**
     * A dead letter as Laravel's failed-job commands read one. Its payload is the Laravel job's
     * (for an item another framework queued, one whose `job` is `crawlq: <url>`), with the dead
     * letter's id under `crawlq.dead`: CrawlqQueue::pushRaw requeues that item when
     * `queue:retry` pushes it back.
     *
     * @param array<string, mixed> $dead
     */
    private function record(CrawlqQueue $queue, array $dead): object
    {
        try {
            $request = \Crawlq\request_of_dead_letter($dead);
        } catch (\Crawlq\Exception) {
            $request = null; // a host item, or a request this version cannot read
        }
        $what = $dead['url'] ?? $dead['host'];
        $payload = $request !== null && CrawlqJob::isLaravelRequest($request)
            ? $request['frameworks']['laravel']
            : ['displayName' => $request['label'] ?? $what, 'job' => "crawlq: {$what}"];
        $payload['crawlq'] = ['dead' => $dead['id'], 'url' => $dead['url']];
        // (the order of Laravel's own rows: queue:failed shows them by position)
        return (object) [
            'id' => $dead['id'],
            'connection' => $this->connection,
            'queue' => $queue->getQueue(null),
            'payload' => json_encode($payload, \JSON_UNESCAPED_UNICODE | \JSON_UNESCAPED_SLASHES),
            'exception' => (string) ($dead['last_error'] ?? ''),
            'failed_at' => date('Y-m-d H:i:s', (int) $dead['died_at']),
        ];
    }
}
