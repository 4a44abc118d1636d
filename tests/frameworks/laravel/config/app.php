<?php

return [
    'name' => 'crawlq-site-crawler',
    'env' => 'testing',
    'debug' => true,
    'timezone' => 'UTC',
    'locale' => 'en',
    'providers' => [
        Illuminate\Bus\BusServiceProvider::class,
        Illuminate\Cache\CacheServiceProvider::class,
        Illuminate\Filesystem\FilesystemServiceProvider::class,
        Illuminate\Queue\QueueServiceProvider::class,
        Crawlq\Laravel\CrawlqServiceProvider::class,
        App\Providers\AppServiceProvider::class,
    ],
    'aliases' => [],
];
