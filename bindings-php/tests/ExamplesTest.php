<?php

declare(strict_types=1);

use Crawlq\Queue;
use PHPUnit\Framework\TestCase;

/**
 * The README's PHP worker and the Laravel-style job run for real against a local site, and the
 * committed stub matches the built extension.
 */
final class ExamplesTest extends TestCase
{
    /** @var resource|null */
    private $site = null;
    private int $sitePort = 0;
    private string $siteId = '';

    private function startSite(array $env): string
    {
        $probe = stream_socket_server('tcp://127.0.0.1:0');
        $this->sitePort = (int) substr(strrchr(stream_socket_get_name($probe, false), ':'), 1);
        fclose($probe);
        $this->siteId = uniqid('', true);
        $env += ['SITE_ID' => $this->siteId, 'PATH' => getenv('PATH'), 'PHP_CLI_SERVER_WORKERS' => '4'];
        $this->site = proc_open([PHP_BINARY, '-S', "127.0.0.1:{$this->sitePort}", __DIR__ . '/site-router.php'],
            [0 => ['file', '/dev/null', 'r'], 1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']], $pipes, null, $env);
        for ($i = 0; $i < 250; $i++) {
            $socket = @stream_socket_client("tcp://127.0.0.1:{$this->sitePort}", $errno, $error, 0.2);
            if ($socket) {
                fclose($socket);
                return "http://127.0.0.1:{$this->sitePort}/";
            }
            usleep(20_000);
        }
        $this->fail('the local site did not start');
    }

    protected function tearDown(): void
    {
        if (is_resource($this->site)) {
            // php -S forks its PHP_CLI_SERVER_WORKERS, which outlive a killed server: stop them
            // first (their parent's /proc entry lists them)
            $pid = proc_get_status($this->site)['pid'];
            $children = @file_get_contents("/proc/$pid/task/$pid/children");
            foreach (preg_split('/\s+/', trim((string) $children), -1, PREG_SPLIT_NO_EMPTY) as $child) {
                posix_kill((int) $child, 9);
            }
            proc_terminate($this->site, 9);
            proc_close($this->site);
        }
        // the site's count of rate-limited answers (site-router.php)
        @unlink(sys_get_temp_dir() . '/crawlq-site-' . $this->siteId . '-429');
    }

    private static function readmeBlock(): string
    {
        $readme = (string) file_get_contents(__DIR__ . '/../../README.md');
        $section = explode("\n## ", explode("\n## PHP / Laravel\n", $readme, 2)[1], 2)[0];
        preg_match_all('/```php\n(.*?)```/s', $section, $blocks);
        return $blocks[1][0];
    }

    public function testReadmeWorkerCrawlsTheSite(): void
    {
        $site = $this->startSite(['SITE_MODE' => 'readme']);
        $redis = new RedisServer();
        // (tempnam makes the file it names: the script is that name with `.php`, and both go)
        $reserved = tempnam(sys_get_temp_dir(), 'crawlq-readme');
        $script = $reserved . '.php';
        file_put_contents($script, self::readmeBlock());
        $cmd = array_merge(php_command(), [$script]);
        $env = ['REDIS_URL' => $redis->url(), 'START_URL' => $site, 'PATH' => getenv('PATH')];
        $process = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, null, $env);
        $out = stream_get_contents($pipes[1]);
        $err = stream_get_contents($pipes[2]);
        $code = proc_close($process);
        unlink($script);
        unlink($reserved);
        $this->assertSame(0, $code, $err);
        // /, /a, /b, /c once each though linked several times; /missing is 404: retried, then dead
        $this->assertSame("4 pages crawled, 1 dead\n", $out, $err);
    }

    public function testTheJobRetriesTimeoutsAnd5xxButNever4xxOrRobotsBlocked(): void
    {
        require_once __DIR__ . '/../examples/CrawlPageJob.php';
        $site = $this->startSite(['SITE_ROBOTS' => '1']);
        $q = new Queue(shared_redis()->url(), unique_name('job'), [
            'max_attempts' => 3, 'backoff' => 'fixed', 'backoff_base' => 0.05, 'backoff_jitter' => 0,
            'adaptive_delay_step' => 0.2, 'adaptive_delay_max' => 0.4,
        ]);
        $q->seed([$site]);
        $job = new App\Jobs\CrawlPageJob($q, timeout: 1.0);
        $outcomes = [];
        while (($outcome = $job->handle(wait: 1.5)) !== null) {
            $outcomes[] = $outcome;
        }
        $stats = $q->stats();
        $dead = [];
        foreach ($q->dead() as $letter) {
            $dead[parse_url($letter['url'], PHP_URL_PATH)] = [$letter['attempts'], $letter['last_error']];
        }
        ksort($dead);
        $this->assertSame(['/e404', '/e500', '/private/x', '/slow'], array_keys($dead));
        $this->assertSame([1, 'HTTP 404'], $dead['/e404'], 'a 4xx is never retried');
        $this->assertSame([1, 'blocked by robots.txt'], $dead['/private/x'], 'robots-blocked is never retried (nor fetched)');
        $this->assertSame([3, 'HTTP 500'], $dead['/e500'], 'a 5xx is retried until max_attempts');
        $this->assertSame(3, $dead['/slow'][0], 'a timeout is retried until max_attempts');
        $this->assertStringContainsString('HTTP request failed', $dead['/slow'][1], 'PHP reports a stream timeout this way');
        // /, /a, /b, /c and /e429 (rate limited twice, then served) are done
        $this->assertSame([5, 0, 0], [$stats['done'], $stats['pending'], $stats['leased']]);
        $this->assertSame(10, $stats['nacked_total'], '429 twice, 500 three times, the timeout three times, 404, robots');
        $this->assertSame(5, count(array_filter($outcomes, fn ($o) => $o === 'done')));
    }

    public function testTheStubMatchesTheExtension(): void
    {
        $run = function (array $cmd): string {
            $process = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
            $out = (string) stream_get_contents($pipes[1]);
            $err = (string) stream_get_contents($pipes[2]);
            $this->assertSame(0, proc_close($process), $err);
            return $out;
        };
        $extension = $run(array_merge(php_command(), [__DIR__ . '/describe.php']));
        $stub = $run([PHP_BINARY, '-n', __DIR__ . '/describe.php', 'stub']);
        $this->assertStringContainsString('Crawlq\\\\Queue', $extension);
        $this->assertSame($extension, $stub, 'crawlq.stub.php declares exactly what the extension has');
    }
}
