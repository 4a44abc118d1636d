<?php

namespace Crawlq\Laravel;

use Illuminate\Queue\Events\JobExceptionOccurred;
use Illuminate\Support\ServiceProvider;

/**
 * Registers the `crawlq` queue driver. Add it to `providers` in config/app.php (package
 * discovery does this when the package is installed with Composer).
 */
class CrawlqServiceProvider extends ServiceProvider
{
    public function boot(): void
    {
        $this->app['queue']->extend('crawlq', fn () => new CrawlqConnector());
        // The worker reports a job's exception before it releases the job: keep it, so the
        // retry (and a later dead letter) carries its message as crawlq's last_error.
        $this->app['events']->listen(JobExceptionOccurred::class, function (JobExceptionOccurred $event) {
            if ($event->job instanceof CrawlqJob) {
                $event->job->noteException($event->exception);
            }
        });
    }
}
