<?php

namespace App\Providers;

use Illuminate\Support\ServiceProvider;

class AppServiceProvider extends ServiceProvider
{
    public function register(): void
    {
        // What Laravel's ArtisanServiceProvider does for queue:work in a full application.
        $this->app->alias('queue.worker', \Illuminate\Queue\Worker::class);
    }
}
