<?php

declare(strict_types=1);

use Crawlq\Queue;
use PHPUnit\Framework\TestCase;

/** PHP-FPM and CLI workers: fork, one connection per process, memory across many calls. */
final class ProcessTest extends TestCase
{
    public function testAForkedChildGetsItsOwnRuntimeAndConnection(): void
    {
        $q = new Queue(shared_redis()->url(), unique_name('fork'));
        $q->seed(array_map(fn ($i) => "http://a.com/$i", range(0, 9)));
        $this->assertCount(2, $q->lease(2, 0.0), 'the parent has used its runtime and connection');
        $report = tempnam(sys_get_temp_dir(), 'crawlq-fork');
        $pid = pcntl_fork();
        if ($pid === 0) {
            try {
                $leases = $q->lease(3, 1.0);
                file_put_contents($report, json_encode(['leased' => count($leases), 'acked' => $q->ack($leases)]));
            } catch (\Throwable $e) {
                file_put_contents($report, json_encode(['error' => get_class($e) . ': ' . $e->getMessage()]));
            }
            posix_kill(getmypid(), SIGKILL); // the child must not run PHPUnit's shutdown
        }
        pcntl_waitpid($pid, $status);
        $child = json_decode((string) file_get_contents($report), true);
        unlink($report);
        $this->assertSame(['leased' => 3, 'acked' => [true, true, true]], $child);
        $this->assertCount(5, $q->lease(10, 0.0));
        $stats = $q->stats();
        $this->assertSame([3, 7], [$stats['done'], $stats['leased']], 'the child acked three');
    }

    public function testExtendEveryKeepsHeldLeasesAliveWhileTheScriptRuns(): void
    {
        $q = new Queue(shared_redis()->url(), unique_name('held'), ['lease_ttl' => 0.6, 'extend_every' => 0.15]);
        $q->seed(['http://a.com/1', 'http://b.com/2', 'http://c.com/3']);
        $leases = $q->lease(3, 0.0);
        $this->assertTrue($q->ack($leases[2]));
        // Three lease times of PHP work without a single call into the extension.
        $end = microtime(true) + 1.8;
        while (microtime(true) < $end) {
            usleep(1000);
        }
        $this->assertSame(0, $q->reclaim()['requeued']);
        $this->assertSame(2, $q->stats()['leased']);
        $this->assertTrue($q->ack($leases[0]));
        $this->assertSame(1, $q->releaseHeld(), 'the one still held is released');
        $this->assertSame(0, $q->releaseHeld());
        $stats = $q->stats();
        $this->assertSame([0, 1, 0], [$stats['leased'], $stats['ready'], $stats['reclaimed_total']]);
    }

    public function testExtendEveryMustBeShorterThanEveryLeaseTime(): void
    {
        try {
            new Queue(shared_redis()->url(), unique_name('held'), ['lease_ttl' => 1.0, 'extend_every' => 1.0]);
            $this->fail('extend_every as long as lease_ttl was accepted');
        } catch (\Crawlq\ConfigException $e) {
            $this->assertStringContainsString('extend_every', $e->getMessage());
        }
        $q = new Queue(shared_redis()->url(), unique_name('held'), ['extend_every' => 1.0]);
        $this->expectException(\Crawlq\InvalidArgumentException::class);
        $q->lease(1, 0.0, 0.5);
    }

    public function testOnSigtermTheDocumentedHandlerReleasesWhatTheProcessHolds(): void
    {
        $name = unique_name('held');
        $q = new Queue(shared_redis()->url(), $name);
        $q->seed(['http://a.com/1', 'http://b.com/2', 'http://c.com/3']);
        $script = sprintf(<<<'PHP'
            $q = new Crawlq\Queue(%s, %s);
            pcntl_async_signals(true);
            pcntl_signal(SIGTERM, function () use ($q) { echo 'released ', $q->releaseHeld(), "\n"; exit(0); });
            $q->lease(2, 0.0);
            echo "holding\n";
            while (true) { usleep(10000); }
            PHP, var_export(shared_redis()->url(), true), var_export($name, true));
        $child = proc_open(array_merge(php_command(), ['-r', $script]), [1 => ['pipe', 'w']], $pipes);
        $this->assertSame("holding\n", fgets($pipes[1]));
        $this->assertSame(2, $q->stats()['leased']);
        proc_terminate($child, SIGTERM);
        $out = stream_get_contents($pipes[1]);
        $this->assertSame(0, proc_close($child));
        $this->assertSame("released 2\n", $out);
        $stats = $q->stats();
        $this->assertSame([0, 3, 2], [$stats['leased'], $stats['ready'], $stats['released_total']]);
    }

    public function testAPausedHostHoldsABlockingLeaseInAnotherProcessUntilResumed(): void
    {
        $name = unique_name('paused');
        $q = new Queue(shared_redis()->url(), $name);
        $q->seed(['http://paused.com/1']);
        $q->pauseHost('paused.com');
        [$child, $pipes] = $this->blockingLeaseInAnotherProcess($name);
        usleep(500_000);
        $this->assertSame(1, $q->stats()['ready'], 'not leased while paused');
        $resumed = microtime(true);
        $this->assertFalse($q->resumeHost('paused.com')['paused']);
        [$url, $at] = explode(' ', trim((string) stream_get_contents($pipes[1])));
        $this->assertSame(0, proc_close($child));
        $this->assertSame('http://paused.com/1', $url);
        $this->assertLessThan(5.0, (float) $at - $resumed, 'woken by the resume, not by its wait running out');
    }

    public function testAFreedInFlightSlotWakesABlockingLeaseInAnotherProcess(): void
    {
        $name = unique_name('flight');
        $q = new Queue(shared_redis()->url(), $name);
        $q->seed(['http://full.com/1', 'http://full.com/2']);
        $q->setHostInFlight('full.com', 1);
        [$first] = $q->lease(1, 0.0);
        $this->assertTrue($q->hostInfo('full.com')['full']);
        [$child, $pipes] = $this->blockingLeaseInAnotherProcess($name);
        usleep(500_000);
        $this->assertSame(1, $q->stats()['ready'], 'not leased while the host is full');
        $acked = microtime(true);
        $this->assertTrue($q->ack($first));
        [$url, $at] = explode(' ', trim((string) stream_get_contents($pipes[1])));
        $this->assertSame(0, proc_close($child));
        $this->assertSame('http://full.com/2', $url);
        $this->assertLessThan(5.0, (float) $at - $acked, 'woken by the ack, not by its wait running out');
    }

    public function testOneConnectionPerProcessIsReused(): void
    {
        $url = shared_redis()->url();
        new Queue($url, 'warm');
        $before = Crawlq\connection_count();
        for ($i = 0; $i < 500; $i++) {
            $q = new Queue($url, unique_name('reuse'));
            $q->stats();
        }
        $this->assertSame($before, Crawlq\connection_count(), 'every Queue object shares the connection');
        new Queue($url, 'other-settings', ['command_timeout' => 3]);
        $this->assertSame($before + 1, Crawlq\connection_count(), 'other connection settings, other connection');
    }

    public function testCloseStopsTheExtenderAndLetsGoOfAnUnusedConnection(): void
    {
        $url = shared_redis()->url();
        // connection settings of their own: a connection only these queues use
        $options = ['lease_ttl' => 0.6, 'extend_every' => 0.15, 'command_timeout' => 7.25];
        $name = unique_name('close');
        $before = Crawlq\connection_count();
        $q = new Queue($url, $name, $options);
        $other = new Queue($url, $name, $options);
        $this->assertSame($before + 1, Crawlq\connection_count(), 'one connection for both');
        $q->seed(['http://a.com/1', 'http://b.com/2', 'http://c.com/3']);
        [$first, $second] = $q->lease(2, 0.0);
        [$long] = $q->lease(1, 0.0, 60.0);

        $q->close();
        $this->assertSame($before + 1, Crawlq\connection_count(), 'still used by the other queue');
        $other->close();
        $this->assertSame($before, Crawlq\connection_count(), 'used by no queue: let go of');
        $q->close(); // closing twice is nothing

        // closed, nothing extends the leases: they expire and are taken back
        usleep(1_500_000); // past any extension made before close (0.6 s each)
        $this->assertSame(2, $other->reclaim(10)['requeued'], 'neither lease was extended');
        $this->assertSame($before + 1, Crawlq\connection_count(), 'a later call connects again');
        $this->assertSame([false, false], [$q->ack($first), $q->ack($second)], 'both were taken back');
        $this->assertSame(1, $q->releaseHeld(), 'the live lease is still held after close');
        $this->assertFalse($q->ack($long), 'released');
        // the queue works on as before: it leases, and holds what it leased
        $this->assertCount(3, $q->lease(3, 0.0));
        $this->assertSame(3, $q->releaseHeld());
        $this->assertSame($before + 1, Crawlq\connection_count(), 'one connection again for both');
        $stats = $q->stats();
        $this->assertSame([0, 3, 2], [$stats['leased'], $stats['ready'], $stats['reclaimed_total']]);
        $q->close();
        $other->close();
        $this->assertSame($before, Crawlq\connection_count());
    }

    /**
     * A PHP process that waits (up to 20 s) in a blocking lease of one item of queue `$name`,
     * then prints its URL and the time; returned once it is waiting.
     *
     * @return array{0: resource, 1: array<int, resource>}
     */
    private function blockingLeaseInAnotherProcess(string $name): array
    {
        $script = sprintf(<<<'PHP'
            $q = new Crawlq\Queue(%s, %s);
            echo "waiting\n";
            $leases = $q->lease(1, 20.0);
            echo count($leases) === 1 ? $leases[0]->url : 'none', ' ', sprintf('%%.3f', microtime(true)), "\n";
            PHP, var_export(shared_redis()->url(), true), var_export($name, true));
        $child = proc_open(array_merge(php_command(), ['-r', $script]), [1 => ['pipe', 'w']], $pipes);
        $this->assertSame("waiting\n", fgets($pipes[1]));
        return [$child, $pipes];
    }

    private static function rss(): int
    {
        preg_match('/VmRSS:\s+(\d+)/', (string) file_get_contents('/proc/self/status'), $m);
        return (int) $m[1] * 1024;
    }

    public function testMemoryStaysFlatOverOneHundredThousandCalls(): void
    {
        $q = new Queue(shared_redis()->url(), unique_name('mem'));
        $round = function (int $calls) use ($q): void {
            for ($i = 0; $i < $calls; $i += 3) {
                $q->seed(["http://m.com/$i-" . mt_rand()], ['payload' => ['i' => $i, 'tags' => ['a', 'b']]]);
                [$lease] = $q->lease(1, 0.0);
                $q->ack($lease);
            }
        };
        $round(6_000); // warm up: allocator pools, script cache, connection buffers
        gc_collect_cycles();
        [$heap, $rss] = [memory_get_usage(), self::rss()];
        $round(100_000);
        gc_collect_cycles();
        $heapGrowth = memory_get_usage() - $heap;
        $rssGrowth = self::rss() - $rss;
        fwrite(STDERR, sprintf("\n100k calls: PHP heap %+d bytes, RSS %+d KiB\n", $heapGrowth, intdiv($rssGrowth, 1024)));
        $this->assertLessThan(100_000, $heapGrowth, 'PHP heap');
        $this->assertLessThan(4 * 1024 * 1024, $rssGrowth, 'process memory (40 bytes per call would already fail)');
        $this->assertSame(0, $q->stats()['leased']);
    }
}
