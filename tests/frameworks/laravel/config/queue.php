<?php

return [
    'default' => 'crawlq',
    'connections' => [
        'crawlq' => [
            'driver' => 'crawlq',
            'url' => env('CRAWLQ_URL', 'redis://127.0.0.1:6379'),
            'queue' => env('CRAWLQ_QUEUE', 'frontier'),
            'retry_after' => (float) env('LEASE_TTL', 30),
            'block_for' => 1.0,
            // the requests other frameworks seed on a shared queue (a mixed crawl)
            'handler' => App\Crawl\PageHandler::class . '@handle',
            'options' => [
                'host_delay' => (float) env('HOST_DELAY', 1.0),
                'max_attempts' => 5,
                'backoff_base' => 0.2,
                // ?a=1&b=2 and ?b=2&a=1 are one page, as for every crawler of the test
                'sort_query' => true,
            ],
        ],
    ],
    // Failed jobs are crawlq's dead letters: `queue:failed`, `queue:retry`, ... see them.
    'failed' => ['driver' => 'crawlq', 'connection' => 'crawlq'],
];
