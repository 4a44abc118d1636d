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
 * // or, for jobs pushed to other queue names of the connection too (->onQueue('images')):
 * 'failed' => ['driver' => 'crawlq', 'connection' => 'crawlq', 'queues' => ['default', 'images']],
 * ```
 *
 * The dead letters are those of the connection's queue, or of each queue name in `queues`; every
 * item of them is listed, whichever framework or language queued it. A dead letter of the
 * connection's own queue has crawlq's item id as its id; one of another queue name has
 * `<queue>:<item id>` (item ids are per queue). A failed job of a crawlq connection is a dead
 * letter already (the driver's answer), so `log()` stores nothing for it. Failed jobs of other
 * connections go to the store Laravel builds from the same settings (its database store when
 * they name a `table`, else none), and are listed, retried and forgotten there as before.
 */
class CrawlqFailedJobProvider implements FailedJobProviderInterface
{
    /** Dead letters read per call by all(). */
    private const PAGE = 1000;

    /**
     * @param list<string> $queueNames the connection's queue names whose dead letters are
     *                                 listed (empty: its own queue)
     */
    public function __construct(
        private readonly QueueManager $queues,
        private readonly string $connection,
        private readonly FailedJobProviderInterface $others,
        private readonly array $queueNames = [],
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

    /**
     * The queue names listed, the connection's own first when it is one of them.
     *
     * @return list<string>
     */
    private function names(CrawlqQueue $queue): array
    {
        $own = $queue->getQueue(null);
        $names = array_values(array_unique(array_map('strval', $this->queueNames ?: [$own])));
        usort($names, fn (string $a, string $b) => ($b === $own) <=> ($a === $own));
        return $names;
    }

    /** The id `queue:failed` shows for item `$id` of queue `$name`. */
    private function failedId(CrawlqQueue $queue, string $name, string $id): string
    {
        return $name === $queue->getQueue(null) ? $id : "{$name}:{$id}";
    }

    /**
     * The queue name and item id a failed-job id stands for, or null for an id of no queue
     * listed (another store's).
     *
     * @return array{0: string, 1: string}|null
     */
    private function locate(CrawlqQueue $queue, string $id): ?array
    {
        $at = strrpos($id, ':');
        [$name, $item] = $at === false ? [$queue->getQueue(null), $id] : [substr($id, 0, $at), substr($id, $at + 1)];
        if ($item === '' || !in_array($name, $this->names($queue), true)
            || $this->failedId($queue, $name, $item) !== $id) {
            return null;
        }
        return [$name, $item];
    }

    public function log($connection, $queue, $payload, $exception)
    {
        if ($this->queues->connection($connection) instanceof CrawlqQueue) {
            return null; // a dead letter already: crawlq keeps it
        }
        return $this->others->log($connection, $queue, $payload, $exception);
    }

    /** Every dead letter of the queues listed, oldest first in each, then the other store's. */
    public function all()
    {
        $queue = $this->crawlq();
        $failed = [];
        foreach ($this->names($queue) as $name) {
            $frontier = $queue->frontier($name);
            for ($offset = 0; ; $offset += self::PAGE) {
                $page = $frontier->dead(self::PAGE, $offset);
                foreach ($page as $dead) {
                    $failed[] = $this->record($queue, $name, $dead);
                }
                if (count($page) < self::PAGE) {
                    break;
                }
            }
        }
        return array_merge($failed, $this->others->all());
    }

    public function find($id)
    {
        $queue = $this->crawlq();
        $at = $this->locate($queue, (string) $id);
        $dead = $at === null ? null : $this->deadLetter($queue, ...$at);
        return $dead === null ? $this->others->find($id) : $this->record($queue, $at[0], $dead);
    }

    public function forget($id)
    {
        $queue = $this->crawlq();
        $at = $this->locate($queue, (string) $id);
        $purged = false;
        if ($at !== null) {
            try {
                $purged = $queue->frontier($at[0])->purgeDead([$at[1]]) > 0;
            } catch (\Crawlq\InvalidArgumentException) {
                // not an id of that queue's items
            }
        }
        // (Laravel's store without a table says yes to any id: asked only for one it holds)
        return $purged || ($this->others->find($id) !== null && $this->others->forget($id));
    }

    public function flush()
    {
        $queue = $this->crawlq();
        foreach ($this->names($queue) as $name) {
            $queue->frontier($name)->purgeDead();
        }
        $this->others->flush();
    }

    /** The dead letter `$id` of queue `$name`, or null. */
    private function deadLetter(CrawlqQueue $queue, string $name, string $id): ?array
    {
        try {
            return $queue->frontier($name)->deadLetters([$id])[0];
        } catch (\Crawlq\InvalidArgumentException) {
            return null; // not an id of that queue's items (another store's)
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
    private function record(CrawlqQueue $queue, string $name, array $dead): object
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
            'id' => $this->failedId($queue, $name, (string) $dead['id']),
            'connection' => $this->connection,
            'queue' => $name,
            'payload' => json_encode($payload, \JSON_UNESCAPED_UNICODE | \JSON_UNESCAPED_SLASHES),
            'exception' => (string) ($dead['last_error'] ?? ''),
            'failed_at' => date('Y-m-d H:i:s', (int) $dead['died_at']),
        ];
    }
}
