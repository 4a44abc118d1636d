<?php

namespace App\Crawl;

use App\Jobs\RoundtripPage;
use Crawlq\Laravel\CrawlqJob;
use Crawlq\Laravel\CrawlqQueue;

/**
 * Laravel's side of the adapter round trip (tests/frameworks/roundtrip.py), through the queue
 * driver only: `seed` pushes a RoundtripPage job per queue; `take` pops the request another
 * framework seeded and releases it (what a worker does with a job that threw: a retry); `check`
 * pops a request Laravel seeded after another framework retried it, and deletes it (an ack).
 * Prints one JSON line per queue: what Laravel sees of the request.
 */
final class Roundtrip
{
    public function __construct(private readonly CrawlqQueue $queue)
    {
    }

    /** @param array<string, mixed> $spec */
    public function seed(string $name, array $spec): array
    {
        $fields = $spec;
        unset($fields['urls'], $fields['body_b64']);
        $fields['body'] = $spec['body_b64'];
        $id = $this->queue->push(new RoundtripPage($spec['urls'][$name], $fields, 'laravel only'), '', $name);
        return ['seeded' => $id !== null];
    }

    public function take(string $name): array
    {
        $job = $this->pop($name);
        $view = $this->view($job);
        $job->release(0);
        return $view + ['answer' => $job->outcome()];
    }

    public function check(string $name): array
    {
        $job = $this->pop($name);
        $command = unserialize($job->payload()['data']['command']);
        $view = $this->view($job) + ['own' => [
            'job' => $job->payload()['displayName'],
            'note' => $command->note,
            'attempts' => $job->attempts(),
        ]];
        $job->delete();
        return $view + ['answer' => $job->outcome()];
    }

    private function pop(string $name): CrawlqJob
    {
        $deadline = microtime(true) + 10;
        while (microtime(true) < $deadline) {
            $job = $this->queue->pop($name);
            if ($job !== null) {
                return $job;
            }
        }
        throw new \RuntimeException("nothing to pop from {$name}");
    }

    /** @return array<string, mixed> */
    private function view(CrawlqJob $job): array
    {
        $request = $job->crawlRequest();
        return [
            'url' => $request['url'],
            'method' => $request['method'],
            'headers' => array_map(fn ($pair) => [strtolower($pair[0]), $pair[1]], $request['headers']),
            'body_b64' => base64_encode($request['body'] ?? ''),
            'user_data' => $request['user_data'],
            'label' => $request['label'],
            'depth' => $request['depth'],
            'retries' => $request['retries'],
        ];
    }
}
