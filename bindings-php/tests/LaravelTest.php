<?php

declare(strict_types=1);

// The Laravel queue driver (bindings-php/laravel) on Debian's php-laravel-framework, driven by
// Laravel's own queue Worker on a real redis-server. The two-worker crawl of a local site is
// tests/frameworks/run.py laravel.

if (!is_file('/usr/share/php/Illuminate/autoload.php')) {
    throw new RuntimeException('the Laravel driver tests need Laravel: apt-get install php-laravel-framework (tools/setup.sh does)');
}
require_once 'Illuminate/autoload.php';
spl_autoload_register(function (string $class): void {
    if (str_starts_with($class, 'Crawlq\\Laravel\\')) {
        require dirname(__DIR__) . '/laravel/src/' . str_replace('\\', '/', substr($class, 15)) . '.php';
    }
});

use Crawlq\Laravel\CrawlJob;
use Crawlq\Laravel\CrawlqConnector;
use Crawlq\Laravel\CrawlqJob;
use Crawlq\Laravel\CrawlqQueue;
use Crawlq\Laravel\CrawlqServiceProvider;
use Crawlq\Laravel\InvalidCrawlJobException;
use Illuminate\Bus\Queueable;
use Illuminate\Contracts\Queue\ShouldQueue;
use Illuminate\Queue\Events\JobQueued;
use Illuminate\Queue\InteractsWithQueue;
use Illuminate\Queue\WorkerOptions;
use PHPUnit\Framework\TestCase;

/** What the test jobs did, by URL. */
final class Ran
{
    /** @var array<string, list<string>> */
    public static array $log = [];
}

/** A POST with the shared fields of a crawl request; records the request it ran as. */
final class PostTestJob implements ShouldQueue, CrawlJob
{
    use InteractsWithQueue, Queueable;

    public function __construct(public string $url, public array $fields)
    {
    }

    public function crawlUrl(): string
    {
        return $this->url;
    }

    public function crawlFields(): array
    {
        // the job's own properties are serialized into Laravel's JSON payload: bytes travel
        // as base64 there, and as bytes in the crawl request
        return isset($this->fields['body']) ? ['body' => base64_decode($this->fields['body'])] + $this->fields : $this->fields;
    }

    public function handle(): void
    {
        Ran::$log[$this->url][] = $this->job->crawlRequest();
    }
}

/** Runs, throws while its URL says so, records everything. */
final class CrawlTestJob implements ShouldQueue, CrawlJob
{
    use InteractsWithQueue, Queueable;

    public ?int $tries = null;

    public function __construct(public string $url, public int $priority = 0)
    {
    }

    public function crawlUrl(): string
    {
        return $this->url;
    }

    public function crawlPriority(): int
    {
        return $this->priority;
    }

    public function handle(): void
    {
        $job = $this->job;
        Ran::$log[$this->url][] = 'run ' . $job->attempts() . ' ' . get_class($job) . ' ' . $job->url();
        $path = parse_url($this->url, PHP_URL_PATH);
        if ($path === '/throws') {
            throw new RuntimeException('it broke');
        }
        if ($path === '/gone') {
            $this->fail(new RuntimeException('HTTP 410'));
        }
        if ($path === '/links') {
            $report = $job->deleteWithLinks([
                new CrawlTestJob('http://d.com/1'),
                new CrawlTestJob('ftp://d.com/x'),
                new CrawlTestJob('http://d.com/links'),
            ]);
            Ran::$log[$this->url][] = json_encode([$report->added, $report->duplicates, array_column($report->invalid, 'index'), $job->outcome()]);
        }
        if ($path === '/slow') {
            $before = $job->lease()->expiresAt;
            Ran::$log[$this->url][] = 'extended ' . ($job->extendLease(60.0) > $before + 30 ? 'yes' : 'no');
        }
        if ($path === '/loses-its-lease' || $path === '/outlives-its-lease-time') {
            // Runs past its lease time (retry_after 0.3 s), then another worker reclaims.
            usleep(400_000);
            $job->getContainer()['queue']->connection($job->getConnectionName())->frontier()->reclaim();
        }
    }

    public function failed(Throwable $e): void
    {
        Ran::$log[$this->url][] = 'failed: ' . $e->getMessage();
    }
}

/** A job that names no URL. */
final class PlainTestJob implements ShouldQueue
{
    use InteractsWithQueue, Queueable;

    public function handle(): void
    {
    }
}

/** Handles items seeded by crawlq workers of other languages. */
final class ForeignItemHandler
{
    public function handle(CrawlqJob $job, array $data): void
    {
        Ran::$log[$data['url']][] = 'handled ' . json_encode($data['payload']);
        if (($data['payload']['fail'] ?? false) === true) {
            throw new RuntimeException('handler failed');
        }
    }
}

/** Records what the worker reports instead of logging it. */
final class RecordingExceptionHandler implements Illuminate\Contracts\Debug\ExceptionHandler
{
    /** @var list<string> */
    public array $reported = [];

    public function report(Throwable $e)
    {
        $this->reported[] = $e->getMessage();
    }

    public function shouldReport(Throwable $e)
    {
        return true;
    }

    public function render($request, Throwable $e)
    {
        throw $e;
    }

    public function renderForConsole($output, Throwable $e)
    {
    }
}

/** Collects the log's warnings. */
final class RecordingLog
{
    /** @var list<string> */
    public array $warnings = [];

    public function warning(string $message): void
    {
        $this->warnings[] = $message;
    }
}

final class LaravelTest extends TestCase
{
    private Illuminate\Container\Container $app;
    private Illuminate\Queue\QueueManager $manager;
    private Illuminate\Queue\Worker $worker;
    private RecordingExceptionHandler $exceptions;
    private RecordingLog $log;
    /** @var list<JobQueued> */
    private array $queued = [];

    protected function setUp(): void
    {
        Ran::$log = [];
        $app = new Illuminate\Foundation\Application(sys_get_temp_dir());
        Illuminate\Container\Container::setInstance($app);
        $connection = [
            'driver' => 'crawlq',
            'url' => shared_redis()->url(),
            'queue' => unique_name('laravel'),
            'retry_after' => 0.3,
            'block_for' => 0.0,
            'handler' => ForeignItemHandler::class . '@handle',
            'options' => ['max_attempts' => 5, 'host_delay' => 0.0, 'backoff_base' => 0.001, 'backoff_jitter' => 0.0],
        ];
        // the same, without the lease extension framework adapters have by default
        $unextended = ['queue' => unique_name('laravel'), 'options' => ['extend_every' => 0] + $connection['options']] + $connection;
        // the same queue, its jobs in a named crawl
        $crawled = ['crawl' => 'shop'] + $connection;
        // the same queue, a worker that takes only that crawl's jobs
        $shopOnly = ['options' => ['lease_crawls' => 'shop'] + $connection['options']] + $crawled;
        // the same with the connection's own setting, and settings it refuses
        $shopOnlySetting = ['lease_crawls' => ['shop']] + $crawled;
        $refused = [
            'lease-crawls-space' => ['lease_crawls' => ['shop', 'new s']] + $crawled,
            'lease-crawls-colon' => ['lease_crawls' => 'shop a:b'] + $crawled,
            'lease-crawls-twice' => ['lease_crawls' => ['shop']] + $shopOnly,
        ];
        $app->instance('config', new Illuminate\Config\Repository(['queue' => [
            'default' => 'crawlq',
            'failed' => ['driver' => 'crawlq', 'connection' => 'crawlq'],
            'connections' => ['crawlq' => $connection, 'unextended' => $unextended, 'crawled' => $crawled,
                'shop-only' => $shopOnly, 'shop-only-setting' => $shopOnlySetting] + $refused,
        ]]));
        $app->register(Illuminate\Bus\BusServiceProvider::class);
        $app->register(Illuminate\Queue\QueueServiceProvider::class);
        $app->register(CrawlqServiceProvider::class);
        $app->boot();
        $app->instance('log', $this->log = new RecordingLog());
        $app->instance(Illuminate\Contracts\Debug\ExceptionHandler::class, $this->exceptions = new RecordingExceptionHandler());
        $this->manager = $app['queue'];
        $app->instance('queue.test', $this->manager->connection('crawlq'));
        $app['events']->listen(JobQueued::class, fn (JobQueued $e) => $this->queued[] = $e);
        $this->worker = new Illuminate\Queue\Worker($this->manager, $app['events'], $this->exceptions, fn () => false);
        $this->app = $app;
    }

    private function queue(): CrawlqQueue
    {
        return $this->manager->connection('crawlq');
    }

    /** One pass of `queue:work crawlq --tries=$tries --backoff=$backoff`. */
    private function work(int $tries = 3, int $backoff = 0, string $connection = 'crawlq'): void
    {
        $this->worker->runNextJob($connection, '', new WorkerOptions('default', $backoff, 128, 60, 0, $tries));
    }

    public function testPushQueuesAJobOnceByItsUrlAndReturnsItsId(): void
    {
        $q = $this->queue();
        $id = $q->push(new CrawlTestJob('http://a.com/1'));
        $this->assertIsString($id);
        $this->assertNull($q->push(new CrawlTestJob('HTTP://A.com:80/1#top')), 'the same URL is a duplicate');
        $this->assertNotNull($q->later(30, new CrawlTestJob('http://a.com/later')));
        $this->assertSame(2, $q->size());
        $stats = $q->frontier()->stats();
        // the duplicate was answered by Redis or, once seen, by the adapter's known-seen cache,
        // which the queue counts as a duplicate too
        $this->assertSame([1, 1, 1], [$stats['ready'], $stats['delayed'], $stats['duplicates_total']]);
        $this->assertSame([$id], array_map(fn ($e) => $e->id, array_slice($this->queued, 0, 1)));
        $peek = $q->frontier()->peek(1)[0];
        $this->assertSame(1, $peek['payload']['$request'], 'a job is queued as a crawl request (PROTOCOL.md section 10)');
        $laravel = $peek['payload']['frameworks']['laravel'];
        $this->assertSame(CrawlTestJob::class, $laravel['displayName'], 'Laravel\'s payload, under its namespace');
        $this->assertArrayNotHasKey('crawlq', $laravel, 'the driver\'s own fields are the request\'s, not the job\'s');
    }

    public function testACrawlConnectionQueuesItsJobsInItsNamedCrawl(): void
    {
        $q = $this->queue();
        $shop = $this->manager->connection('crawled');
        $this->assertIsString($q->push(new CrawlTestJob('http://a.com/1')));
        // de-duplicated within its crawl: the default crawl's job is another item
        $this->assertIsString($shop->push(new CrawlTestJob('http://a.com/1')));
        $this->assertNull($shop->push(new CrawlTestJob('http://a.com/1')));
        $this->assertSame(1, $shop->bulk([new CrawlTestJob('http://a.com/2')])->added);
        $crawls = array_map(fn ($l) => $l->crawl ?? '', $q->frontier()->lease(10, 0.0));
        sort($crawls);
        $this->assertSame(['', 'shop', 'shop'], $crawls);
    }

    /** The connection's `lease_crawls`, or `lease_crawls` in its options. */
    public function shopOnlyConnections(): array
    {
        return ['in the options' => ['shop-only'], 'the connection\'s setting' => ['shop-only-setting']];
    }

    /** @dataProvider shopOnlyConnections */
    public function testLeaseCrawlsMakesTheConnectionsWorkersTakeOnlyThoseCrawls(string $connection): void
    {
        $q = $this->queue();
        $q->push(new CrawlTestJob('http://a.com/default'));
        $shop = $this->manager->connection($connection);
        $shop->push(new CrawlTestJob('http://a.com/shop/1'));
        $shop->push(new CrawlTestJob('http://b.com/shop/2'));
        for ($i = 0; $i < 3; $i++) {
            $this->work(3, 0, $connection);
        }
        $ran = array_keys(Ran::$log);
        sort($ran);
        $this->assertSame(['http://a.com/shop/1', 'http://b.com/shop/2'], $ran, 'its crawl\'s jobs only');
        $this->assertSame(0, $q->frontier()->crawlStats('shop')['pending']);
        $this->assertSame(1, $q->size(), 'the default crawl\'s job is left for other workers');
    }

    public function testAConnectionsLeaseCrawlsThatIsNotAListOfCrawlNamesIsRefused(): void
    {
        // (a connection's queue opens at its first use)
        foreach ([
            'lease-crawls-space' => [Crawlq\ConfigException::class, 'got "new s" in ["shop","new s"]'],
            'lease-crawls-colon' => [Crawlq\ConfigException::class, 'lease_crawls: crawl name "a:b" holds \':\''],
            'lease-crawls-twice' => [InvalidArgumentException::class, "'lease_crawls' and its options' lease_crawls are both set"],
        ] as $connection => [$class, $why]) {
            try {
                $this->manager->connection($connection)->size();
                $this->fail("$connection was accepted");
            } catch (Throwable $e) {
                $this->assertInstanceOf($class, $e, $connection);
                $this->assertStringContainsString($why, $e->getMessage());
            }
        }
    }

    /** `php artisan queue:clear $connection --queue=$queue --force`: its exit status and output. */
    private function queueClear(string $connection, string $queue): array
    {
        // (the command asks the environment before it looks at --force)
        $this->app->instance('env', 'testing');
        return $this->artisan(new Illuminate\Queue\Console\ClearCommand(), ['connection' => $connection, '--queue' => $queue, '--force' => true]);
    }

    /** Laravel's console command run with `$arguments`: its exit status and output. */
    private function artisan(Illuminate\Console\Command $command, array $arguments = []): array
    {
        $command->setLaravel($this->app);
        $output = new Symfony\Component\Console\Output\BufferedOutput();
        $status = $command->run(new Symfony\Component\Console\Input\ArrayInput($arguments), $output);
        return [$status, trim($output->fetch())];
    }

    public function testLaravelsFailedJobCommandsSeeTheDeadLettersAndRetryQueuesTheItemAgain(): void
    {
        $q = $this->queue();
        $name = $q->getQueue(null);
        $frontier = $q->frontier();
        $this->assertInstanceOf(Crawlq\Laravel\CrawlqFailedJobProvider::class, $this->app['queue.failer']);
        [$status, $out] = $this->artisan(new Illuminate\Queue\Console\ListFailedCommand());
        $this->assertSame([0, 'No failed jobs!'], [$status, $out]);
        // a Laravel job that failed, and an item another language queued, dead-lettered there
        $q->push(new CrawlTestJob('http://e.com/gone'));
        $this->work();
        $frontier->seed([['url' => 'http://g.com/py', 'payload' => ['from' => 'python']]]);
        $frontier->nack($frontier->lease(1, 0.0)[0], ['retry' => false, 'reason' => 'HTTP 404']);
        [$gone, $py] = array_column($frontier->dead(), 'id');

        [$status, $out] = $this->artisan(new Illuminate\Queue\Console\ListFailedCommand());
        $this->assertSame(0, $status);
        $rows = array_values(array_filter(array_map(fn ($l) => array_map('trim', explode('|', trim($l, "| \t"))), explode("\n", $out)), fn ($r) => in_array($r[0], [$gone, $py], true)));
        $this->assertSame([[$gone, 'crawlq', $name, CrawlTestJob::class], [$py, 'crawlq', $name, 'crawlq: http://g.com/py']],
            array_map(fn ($r) => array_slice($r, 0, 4), $rows), $out);
        $found = $this->app['queue.failer']->find($gone);
        $this->assertSame('HTTP 410', $found->exception);
        $this->assertSame(CrawlTestJob::class, json_decode($found->payload, true)['displayName']);
        $this->assertNull($this->app['queue.failer']->find('12345678'), 'not a dead letter');

        // queue:retry queues the item itself again (its URL pushed anew would be a duplicate)
        [$status, $out] = $this->artisan(new Illuminate\Queue\Console\RetryCommand(), ['id' => [$gone]]);
        $this->assertSame([0, "The failed job [$gone] has been pushed back onto the queue!"], [$status, $out]);
        $stats = $frontier->stats();
        $this->assertSame([1, 1], [$stats['ready'], $stats['dead']]);
        $this->work();
        $this->assertSame(['run 1', 'failed: HTTP 410', 'run 1', 'failed: HTTP 410'],
            array_map(fn ($l) => substr($l, 0, str_starts_with($l, 'run') ? 5 : 99), Ran::$log['http://e.com/gone']), 'ran again with fresh attempts');
        $this->assertSame(2, $frontier->stats()['dead'], 'and failed again');
        [$status, $out] = $this->artisan(new Illuminate\Queue\Console\RetryCommand(), ['id' => ['12345678']]);
        $this->assertSame('Unable to find failed job with ID [12345678].', $out);

        // queue:forget purges one, queue:flush the rest
        [$status, $out] = $this->artisan(new Illuminate\Queue\Console\ForgetFailedCommand(), ['id' => $py]);
        $this->assertSame('Failed job deleted successfully!', $out);
        $this->assertSame([$gone], array_column($frontier->dead(), 'id'));
        [$status, $out] = $this->artisan(new Illuminate\Queue\Console\ForgetFailedCommand(), ['id' => $py]);
        $this->assertSame('No failed job matches the given ID.', $out);
        [$status, $out] = $this->artisan(new Illuminate\Queue\Console\FlushFailedCommand());
        $this->assertSame('All failed jobs deleted successfully!', $out);
        $this->assertSame([], $frontier->dead());
        $this->assertNull($q->push(new CrawlTestJob('http://e.com/gone')), 'a purged dead letter stays seen');
    }

    public function testTheFailedJobStoreListsTheDeadLettersOfEachQueueNameItIsGiven(): void
    {
        $q = $this->queue();
        $own = $q->getQueue(null);
        $other = unique_name('laravel-other');
        $q->push(new CrawlTestJob('http://e.com/gone'));
        $this->work();
        $q->push(new CrawlTestJob('http://f.com/gone'), '', $other);
        $this->worker->runNextJob('crawlq', $other, new WorkerOptions('default', 0, 128, 60, 0, 3));
        $ownId = $q->frontier()->dead()[0]['id'];
        $otherItem = $q->frontier($other)->dead()[0]['id'];
        $otherId = "{$other}:{$otherItem}";
        $this->assertSame($ownId, $otherItem, 'item ids are per queue: the same id in both');

        // without `queues`, the store lists the connection's own queue
        $this->assertSame([$ownId], array_column($this->app['queue.failer']->all(), 'id'));

        $this->app['config']->set('queue.failed.queues', [$other, $own]);
        $this->app->forgetInstance('queue.failer');
        $failer = $this->app['queue.failer'];
        $this->assertSame([[$ownId, $own], [$otherId, $other]],
            array_map(fn ($r) => [$r->id, $r->queue], $failer->all()), "the connection's own queue first, with plain ids");
        [$status, $out] = $this->artisan(new Illuminate\Queue\Console\ListFailedCommand());
        $this->assertSame(0, $status);
        $this->assertStringContainsString($otherId, $out);
        $this->assertSame('HTTP 410', $failer->find($otherId)->exception);
        $this->assertSame('http://f.com/gone', json_decode($failer->find($otherId)->payload, true)['crawlq']['url']);
        $this->assertNull($failer->find("{$other}:12345678"), 'no such item there');
        $this->assertNull($failer->find(unique_name('unlisted') . ":{$otherItem}"), 'a queue not listed');
        $this->assertNull($failer->find("{$own}:{$ownId}"), "the own queue's dead letters go by their plain id");

        // queue:retry --queue= queues the item itself again, in its queue
        [$status, $out] = $this->artisan(new Illuminate\Queue\Console\RetryCommand(), ['--queue' => $other]);
        $this->assertSame([0, "The failed job [$otherId] has been pushed back onto the queue!"], [$status, $out]);
        $stats = $q->frontier($other)->stats();
        $this->assertSame([1, 0], [$stats['ready'], $stats['dead']]);
        $this->assertSame(1, $q->frontier()->stats()['dead'], 'the own queue untouched');
        $this->worker->runNextJob('crawlq', $other, new WorkerOptions('default', 0, 128, 60, 0, 3));
        $this->assertSame([$otherItem], array_column($q->frontier($other)->dead(), 'id'), 'failed again');

        // queue:forget takes the id queue:failed shows; queue:flush purges every queue listed
        [$status, $out] = $this->artisan(new Illuminate\Queue\Console\ForgetFailedCommand(), ['id' => $otherId]);
        $this->assertSame('Failed job deleted successfully!', $out);
        $this->assertSame([[], 1], [$q->frontier($other)->dead(), $q->frontier()->stats()['dead']]);
        $q->push(new CrawlTestJob('http://g.com/gone'), '', $other);
        $this->worker->runNextJob('crawlq', $other, new WorkerOptions('default', 0, 128, 60, 0, 3));
        $this->assertCount(2, $failer->all());
        [$status, $out] = $this->artisan(new Illuminate\Queue\Console\FlushFailedCommand());
        $this->assertSame('All failed jobs deleted successfully!', $out);
        $this->assertSame([[], []], [$q->frontier()->dead(), $q->frontier($other)->dead()]);
    }

    public function testQueueClearRemovesTheQueueSoItsUrlsCanBeQueuedAgain(): void
    {
        $q = $this->queue();
        $name = $q->getQueue(null);
        foreach (['http://a.com/1', 'http://a.com/2', 'http://b.com/1'] as $url) {
            $this->assertIsString($q->push(new CrawlTestJob($url)));
        }
        $lease = $q->frontier()->lease(1, 0.0)[0];
        try {
            $q->clear(null);
            $this->fail('cleared while a job was leased');
        } catch (Crawlq\InvalidArgumentException $e) {
            $this->assertStringContainsString('has 1 leased items: stop its workers first', $e->getMessage());
        }
        $this->assertSame(3, $q->size(), 'a refused clear changes nothing');
        $q->frontier()->release($lease);
        $this->assertSame([0, "Cleared 3 jobs from the [$name] queue"], $this->queueClear('crawlq', $name));
        $this->assertSame(0, $q->size());
        $this->assertSame(0, $q->frontier()->stats()['seen']);
        // the same connection (its known-seen cache knew the URLs) queues them again
        $this->assertIsString($q->push(new CrawlTestJob('http://a.com/1')));
        $this->assertSame(1, $q->size());
    }

    public function testQueueClearOnACrawlConnectionDeletesOnlyItsCrawl(): void
    {
        $q = $this->queue();
        $name = $q->getQueue(null);
        $q->push(new CrawlTestJob('http://a.com/default'));
        $shop = $this->manager->connection('crawled');
        $shop->push(new CrawlTestJob('http://a.com/shop/1'));
        $shop->push(new CrawlTestJob('http://b.com/shop/2'));
        $this->assertSame([0, "Cleared 2 jobs from the [$name] queue"], $this->queueClear('crawled', $name));
        $this->assertSame(1, $q->size(), 'the default crawl\'s job is left');
        $this->assertSame('http://a.com/default', $q->frontier()->lease(1, 0.0)[0]->url);
    }

    public function testAJobSetsTheSharedFieldsOfItsRequest(): void
    {
        $q = $this->queue();
        $fields = ['method' => 'post', 'headers' => [['X-Seen', 'a'], ['X-Seen', 'b']], 'body' => base64_encode("\x00\xffq=1"),
            'user_data' => ['page' => 3], 'label' => 'FORM', 'depth' => 2, 'found_on' => 'http://k.com/'];
        $this->assertNotNull($q->push(new PostTestJob('http://k.com/search', $fields)));
        $this->assertNull($q->push(new PostTestJob('http://k.com/search', $fields)), 'the same method, URL and body');
        $this->assertNotNull($q->push(new PostTestJob('http://k.com/search', ['body' => base64_encode('q=2')] + $fields)), 'another body');
        $this->assertNotNull($q->push(new PostTestJob('http://k.com/search', [])), 'a GET of the URL');
        $this->work();
        $request = Ran::$log['http://k.com/search'][0];
        $this->assertSame(['POST', [['X-Seen', 'a'], ['X-Seen', 'b']], "\x00\xffq=1", ['page' => 3], 'FORM', 2, 'http://k.com/'],
            [$request['method'], $request['headers'], $request['body'], $request['user_data'], $request['label'], $request['depth'], $request['found_on']]);
        $this->assertSame(PostTestJob::class, $request['frameworks']['laravel']['displayName']);
        try {
            $q->push(new PostTestJob('http://k.com/other', ['url' => 'http://elsewhere/', 'frameworks' => []]));
            $this->fail('a job set a field that is not a shared one');
        } catch (InvalidCrawlJobException $e) {
            $this->assertStringContainsString('crawlFields() names url, frameworks', $e->getMessage());
        }
    }

    public function testBulkSeedsInOneCallAndReportsARefusedUrlByItsIndex(): void
    {
        $q = $this->queue();
        $q->push(new CrawlTestJob('http://b.com/seen'));
        $report = $q->bulk([
            new CrawlTestJob('http://b.com/1'),
            new CrawlTestJob('ftp://b.com/2'),
            new CrawlTestJob('http://b.com/seen'),
            new CrawlTestJob('http://b.com/3', 5),
        ]);
        $this->assertSame([2, 1], [$report->added, $report->duplicates]);
        $this->assertSame([[1, 'unsupported_scheme']], array_map(fn ($i) => [$i['index'], $i['code']], $report->invalid));
        $this->assertSame([true, false, false, true], array_map('is_string', $report->ids));
        $this->assertCount(3, $this->queued, 'JobQueued for each queued job, none for the others');
        $this->assertSame('http://b.com/3', $q->frontier()->peek(1)[0]['url'], 'crawlPriority() is the item\'s priority');
    }

    public function testAJobWithoutAUrlOrWithARefusedUrlIsATypedError(): void
    {
        $q = $this->queue();
        try {
            $q->push(new PlainTestJob());
            $this->fail('a job that names no URL was queued');
        } catch (InvalidCrawlJobException $e) {
            $this->assertStringContainsString('PlainTestJob must implement ' . CrawlJob::class, $e->getMessage());
        }
        try {
            $q->push(new CrawlTestJob('not a url'));
            $this->fail('an invalid URL was queued');
        } catch (InvalidCrawlJobException $e) {
            $this->assertSame(['not a url', 'invalid_host'], [$e->input, $e->refusal]);
        }
        $this->expectException(InvalidCrawlJobException::class);
        $q->pushRaw(json_encode(['job' => 'X@handle', 'data' => []]));
    }

    public function testAJobThatReturnsIsAcked(): void
    {
        $q = $this->queue();
        $q->push(new CrawlTestJob('http://c.com/ok'));
        $this->work();
        $this->assertSame(['run 1 ' . CrawlqJob::class . ' http://c.com/ok'], Ran::$log['http://c.com/ok']);
        $this->assertSame([1, 0, true], [$q->frontier()->stats()['done'], $q->size(), $q->isFinished()]);
    }

    public function testDeleteWithLinksAcksTheJobAndQueuesItsLinksInOneCall(): void
    {
        $q = $this->queue();
        $q->push(new CrawlTestJob('http://d.com/links'));
        $this->queued = [];
        $this->work();
        $this->assertSame('[1,1,[1],"acked"]', Ran::$log['http://d.com/links'][1], 'added, duplicates (itself), refused by index, acked');
        $this->assertCount(1, $this->queued, 'JobQueued for the one queued link');
        $stats = $q->frontier()->stats();
        $this->assertSame([1, 1, 0], [$stats['done'], $stats['pending'], $stats['leased']], 'acked once: the worker did not answer it again');
        $this->assertSame([], $this->log->warnings);
        $this->work();
        $this->assertSame(['run 1 ' . CrawlqJob::class . ' http://d.com/1'], Ran::$log['http://d.com/1']);
        $this->assertTrue($q->isFinished());
    }

    public function testAThrowingJobIsRetriedUntilTriesThenADeadLetterWithItsMessage(): void
    {
        $q = $this->queue();
        $q->push(new CrawlTestJob('http://d.com/throws'));
        $this->work(tries: 2);
        $stats = $q->frontier()->stats();
        $this->assertSame([1, 0], [$stats['retried_total'], $stats['dead']]);
        usleep(20_000);
        $this->work(tries: 2);
        $log = Ran::$log['http://d.com/throws'];
        $this->assertSame(['run 1', 'run 2', 'failed: it broke'], [substr($log[0], 0, 5), substr($log[1], 0, 5), $log[2]]);
        [$dead] = $q->frontier()->dead();
        $this->assertSame(['http://d.com/throws', 2, 'it broke'], [$dead['url'], $dead['attempts'], $dead['last_error']]);
        $this->assertSame(['it broke', 'it broke'], $this->exceptions->reported);
    }

    public function testFailIsADeadLetterAtOnce(): void
    {
        $q = $this->queue();
        $q->push(new CrawlTestJob('http://e.com/gone'));
        $this->work();
        $this->assertSame('failed: HTTP 410', Ran::$log['http://e.com/gone'][1]);
        [$dead] = $q->frontier()->dead();
        $this->assertSame([1, 'HTTP 410'], [$dead['attempts'], $dead['last_error']]);
    }

    public function testAReleaseWithABackoffDelaysTheRetry(): void
    {
        $q = $this->queue();
        $q->push(new CrawlTestJob('http://f.com/throws'));
        $this->work(tries: 3, backoff: 30);
        $stats = $q->frontier()->stats();
        $this->assertSame([1, 0, 1], [$stats['delayed'], $stats['ready'], $stats['retried_total']]);
    }

    public function testItemsOfOtherLanguagesRunTheHandler(): void
    {
        $q = $this->queue();
        $q->frontier()->seed([['url' => 'http://g.com/1', 'payload' => ['from' => 'python']], ['url' => 'http://g.com/2', 'payload' => ['fail' => true]]]);
        $this->work();
        $this->work();
        $this->assertSame(['handled {"from":"python"}'], Ran::$log['http://g.com/1']);
        $this->assertSame(['handled {"fail":true}'], Ran::$log['http://g.com/2']);
        $stats = $q->frontier()->stats();
        $this->assertSame([1, 1], [$stats['done'], $stats['retried_total']]);
    }

    public function testItemsOfOtherLanguagesAreDeadLettersWithoutAHandler(): void
    {
        $queue = (new CrawlqConnector())->connect(['url' => shared_redis()->url(), 'queue' => unique_name('laravel'), 'block_for' => 0.0]);
        $queue->setContainer($this->app);
        $queue->frontier()->seed('http://h.com/');
        $this->assertNull($queue->pop());
        [$dead] = $queue->frontier()->dead();
        $this->assertStringStartsWith("no handler: http://h.com/ was queued without a Laravel job", $dead['last_error']);
    }

    public function testALongJobExtendsItsLease(): void
    {
        $q = $this->queue();
        $q->push(new CrawlTestJob('http://i.com/slow'));
        $this->work();
        $this->assertSame('extended yes', Ran::$log['http://i.com/slow'][1]);
        $this->assertSame(1, $q->frontier()->stats()['done']);
    }

    public function testARunningJobKeepsItsLeaseWithoutAsking(): void
    {
        $q = $this->queue();
        $q->push(new CrawlTestJob('http://j.com/outlives-its-lease-time'));
        $this->work();
        $stats = $q->frontier()->stats();
        $this->assertSame([1, 0, 0], [$stats['done'], $stats['ready'], $stats['reclaimed_total']],
            'extended every third of retry_after while it ran, so the reclaim found nothing expired');
        $this->assertSame([], $this->log->warnings);
    }

    public function testAJobWhoseLeaseWasTakenBackIsNotAckedAndSaysSo(): void
    {
        $q = $this->manager->connection('unextended');
        $q->push(new CrawlTestJob('http://j.com/loses-its-lease'));
        $this->work(connection: 'unextended');
        $stats = $q->frontier()->stats();
        $this->assertSame([0, 1, 1], [$stats['done'], $stats['ready'], $stats['reclaimed_total']]);
        $this->assertStringContainsString('the lease of http://j.com/loses-its-lease expired before the job answered', $this->log->warnings[0] ?? '');
    }

    public function testTheQueuesMaxAttemptsBeforeTriesIsADeadLetterWithAWarning(): void
    {
        $queue = (new CrawlqConnector())->connect(['url' => shared_redis()->url(), 'queue' => unique_name('laravel'),
            'block_for' => 0.0, 'options' => ['max_attempts' => 1]]);
        $queue->setContainer($this->app);
        $queue->push(new CrawlTestJob('http://k.com/throws'));
        $job = $queue->pop();
        $job->release();
        $this->assertSame('dead', $job->outcome());
        $this->assertStringContainsString("reached the queue's max_attempts", $this->log->warnings[0] ?? '');
        $this->assertSame('released', $queue->frontier()->dead()[0]['last_error']);
    }

    public function testARateLimitedReleaseHoldsTheHostForItsRetryAfter(): void
    {
        $queue = (new CrawlqConnector())->connect(['url' => shared_redis()->url(), 'queue' => unique_name('laravel'),
            'block_for' => 0.0]);
        $queue->setContainer($this->app);
        $queue->push(new CrawlTestJob('http://busy.com/1'));
        $queue->push(new CrawlTestJob('http://odd.com/1'));
        $asked = microtime(true);
        $job = $queue->pop();
        $job->releaseRateLimited('120');
        $this->assertSame('retried', $job->outcome());
        $this->assertTrue($job->isReleased());
        $info = $queue->frontier()->hostInfo('busy.com');
        $this->assertEqualsWithDelta($asked + 120, $info['held_until'], 5.0, 'the host waits out its Retry-After');
        $this->assertGreaterThan(0, $info['adaptive_extra']);
        $this->assertSame(0, $queue->frontier()->stats()['dead']);
        // a header that is neither seconds nor a date: retried with the adaptive hold alone
        $job = $queue->pop();
        $job->releaseRateLimited('later');
        $this->assertSame('retried', $job->outcome());
        $this->assertSame([], $this->log->warnings);
        $odd = $queue->frontier()->hostInfo('odd.com');
        $this->assertLessThan($asked + 30, $odd['held_until'], 'no Retry-After hold: the adaptive one alone');
        $this->assertSame(2, $queue->frontier()->stats()['retried_total']);
    }

    public function testTheConnectorNeedsAUrlAndAQueue(): void
    {
        $this->expectExceptionMessage("a crawlq queue connection needs 'url' (or 'connection') and 'queue'");
        (new CrawlqConnector())->connect(['queue' => 'x']);
    }

    public function testAConnectionMayNameARedisConnectionOfTheDatabaseConfig(): void
    {
        $password = 'p@ss/w:rd?#%';
        $server = new RedisServer('--requirepass', $password);
        $port = (int) substr(strrchr($server->url(), ':'), 1);
        $this->app['config']->set('database.redis', [
            'client' => 'phpredis',
            'options' => ['prefix' => 'laravel_'],
            'cache' => ['host' => '127.0.0.1', 'port' => $port, 'password' => $password, 'database' => 3],
            'socket' => ['scheme' => 'unix', 'path' => '/nonexistent/redis.sock', 'password' => $password],
            'by-url' => ['url' => 'redis://127.0.0.1:1/0', 'host' => 'ignored'],
            'tls-host' => ['host' => 'tls://127.0.0.1', 'port' => 1, 'password' => 'pw', 'database' => 2],
        ]);
        $name = unique_name('laravel');
        $this->app['config']->set('queue.connections.from-database', ['driver' => 'crawlq', 'connection' => 'cache', 'queue' => $name]);
        $queue = $this->manager->connection('from-database');
        $this->assertInstanceOf(CrawlqQueue::class, $queue);
        $queue->push(new CrawlTestJob('http://db.example/1'));
        // the password went through whole, and the queue is in database 3
        $this->assertSame('1', $server->cli('-a', $password, '--no-auth-warning', '-n', '3', 'EXISTS', "crawlq:{{$name}}:meta"));
        $server->stop();

        $connector = new CrawlqConnector($this->app['config']);
        foreach (['socket' => 'unix:///nonexistent/redis.sock?db=0&pass=p%40ss%2Fw%3Ard%3F%23%25',
                  'by-url' => 'redis://127.0.0.1:1/0', 'tls-host' => 'rediss://:pw@127.0.0.1:1/2'] as $redis => $url) {
            try {
                $connector->connect(['connection' => $redis, 'queue' => 'q', 'options' => ['connect_timeout' => 0.2, 'command_timeout' => 0.2]])->size();
                $this->fail("no exception for $redis");
            } catch (Crawlq\UnavailableException $e) {
                $this->assertStringContainsString('connecting to ' . Crawlq\redacted_url($url), $e->getMessage());
            }
        }
        foreach (['nowhere', 'options', 'clusters'] as $redis) {
            try {
                $connector->connect(['connection' => $redis, 'queue' => 'q']);
                $this->fail("no exception for $redis");
            } catch (\InvalidArgumentException $e) {
                $this->assertStringContainsString("names no Redis connection of config/database.php (database.redis.$redis)", $e->getMessage());
            }
        }
    }
}
