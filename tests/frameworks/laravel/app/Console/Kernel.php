<?php

namespace App\Console;

use App\Crawl\Roundtrip;
use App\Jobs\FetchPage;
use Illuminate\Foundation\Console\Kernel as ConsoleKernel;

class Kernel extends ConsoleKernel
{
    // The queue worker and the failed-job commands (crawlq's failed-job store: no database):
    // Laravel's full command set wants a database this app has not.
    protected $commands = [
        \Illuminate\Queue\Console\WorkCommand::class,
        \Illuminate\Queue\Console\RestartCommand::class,
        \Illuminate\Queue\Console\ListFailedCommand::class,
        \Illuminate\Queue\Console\RetryCommand::class,
        \Illuminate\Queue\Console\ForgetFailedCommand::class,
        \Illuminate\Queue\Console\FlushFailedCommand::class,
    ];

    protected function commands()
    {
        $this->command('crawl:seed {url}', function (string $url) {
            $id = $this->laravel['queue']->connection('crawlq')->push(new FetchPage($url));
            $this->info($id === null ? "{$url} was queued before" : "queued {$url} as {$id}");
        })->describe('Queue the first page of a crawl');

        $this->command('crawl:roundtrip {phase} {queues}', function (string $phase, string $queues) {
            $roundtrip = new Roundtrip($this->laravel['queue']->connection('crawlq'));
            $spec = json_decode((string) getenv('ROUNDTRIP_SPEC'), true);
            foreach (explode(',', $queues) as $name) {
                $view = $phase === 'seed' ? $roundtrip->seed($name, $spec) : $roundtrip->{$phase}($name);
                $this->line(json_encode(['queue' => $name] + $view, JSON_UNESCAPED_SLASHES | JSON_UNESCAPED_UNICODE));
            }
        })->describe('One phase of the adapter round trip (tests/frameworks/roundtrip.py)');
    }
}
