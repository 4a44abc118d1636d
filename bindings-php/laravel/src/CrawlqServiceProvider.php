<?php

namespace Crawlq\Laravel;

use Illuminate\Queue\Events\JobExceptionOccurred;
use Illuminate\Queue\Failed\FailedJobProviderInterface;
use Illuminate\Support\ServiceProvider;

/**
 * Registers the `crawlq` queue driver, and the `crawlq` failed-job store
 * (CrawlqFailedJobProvider) for `'failed' => ['driver' => 'crawlq', ...]`. Add it to
 * `providers` in config/app.php (package discovery does this when the package is installed with
 * Composer).
 */
class CrawlqServiceProvider extends ServiceProvider
{
    public function register(): void
    {
        // 'failed' => ['driver' => 'crawlq', 'connection' => ..., 'queues' => [...]] in
        // config/queue.php: Laravel's failed-job commands see crawlq's dead letters (of the
        // connection's queue, or of each queue name listed); other connections' failed jobs go
        // to the store Laravel makes of the same settings
        $this->app->extend('queue.failer', function (FailedJobProviderInterface $others, $app) {
            $config = $app['config']['queue.failed'] ?? [];
            if (($config['driver'] ?? null) !== 'crawlq') {
                return $others;
            }
            return new CrawlqFailedJobProvider($app['queue'], (string) ($config['connection'] ?? 'crawlq'), $others,
                array_values((array) ($config['queues'] ?? [])));
        });
    }

    public function boot(): void
    {
        $this->app['queue']->extend('crawlq', fn () => new CrawlqConnector($this->app['config']));
        // The worker reports a job's exception before it releases the job: keep it, so the
        // retry (and a later dead letter) carries its message as crawlq's last_error.
        $this->app['events']->listen(JobExceptionOccurred::class, function (JobExceptionOccurred $event) {
            if ($event->job instanceof CrawlqJob) {
                $event->job->noteException($event->exception);
            }
        });
    }
}
