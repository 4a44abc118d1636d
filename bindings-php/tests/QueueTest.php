<?php

declare(strict_types=1);

use Crawlq\Lease;
use Crawlq\Queue;
use PHPUnit\Framework\TestCase;

/** Every operation of Crawlq\Queue. */
final class QueueTest extends TestCase
{
    private function open(array $options = []): Queue
    {
        return new Queue(shared_redis()->url(), unique_name('q'), $options);
    }

    public function testSeedReportsAddedDuplicatesAndInvalidItems(): void
    {
        $q = $this->open();
        $report = $q->seed(['http://a.com/1', 'HTTP://A.com:80/1#x', 'ftp://a.com/', 'Example.COM.', '']);
        $this->assertSame(2, $report->added);
        $this->assertSame(1, $report->duplicates);
        $this->assertSame([[2, 'ftp://a.com/', 'unsupported_scheme'], [4, '', 'empty']],
            array_map(fn ($i) => [$i['index'], $i['input'], $i['code']], $report->invalid));
        $this->assertStringContainsString('only http and https', $report->invalid[0]['reason']);
        $this->assertSame(2, $q->stats()['ready']);
        $this->assertSame([true, false, false, true, false], array_map(fn ($id) => is_string($id), $report->ids));
        $leased = array_map(fn ($l) => $l->id, $q->lease(10, 0.0));
        sort($leased);
        $seeded = [$report->ids[0], $report->ids[3]];
        sort($seeded);
        $this->assertSame($seeded, $leased, "a lease carries its seed's id");
    }

    public function testSeedTakesOneStringItemArraysAndBatchOptions(): void
    {
        $q = $this->open();
        $this->assertSame(1, $q->seed('http://one.com/')->added);
        $report = $q->seed([
            ['url' => 'http://a.com/', 'priority' => 5, 'payload' => ['k' => [1, 2.5, null, true]]],
            ['host' => 'b.com', 'delay' => 60],
            'http://c.com/',
        ], ['payload' => ['batch' => 1]]);
        $this->assertSame(3, $report->added);
        $leases = $q->lease(10, 0.0);
        $this->assertSame([
            ['http://a.com/', 5, ['k' => [1, 2.5, null, true]]],
            ['http://one.com/', 0, null],
            ['http://c.com/', 0, ['batch' => 1]],
        ], array_map(fn (Lease $l) => [$l->url, $l->priority, $l->payload], $leases));
        $this->assertSame(1, $q->stats()['delayed']);
    }

    public function testSeedTakesATraversableAsItsList(): void
    {
        $q = $this->open();
        // an iterator's keys are dropped; a generator's values are the items, in order
        $report = $q->seed(new \ArrayIterator(['x' => 'http://a.com/1', 'y' => 'mailto:x@a.com']));
        $this->assertSame([1, [[1, 'unsupported_scheme']]], [$report->added, array_map(fn ($i) => [$i['index'], $i['code']], $report->invalid)]);
        $items = (function () {
            yield 'http://b.com/1';
            yield ['url' => 'http://b.com/2', 'priority' => 3];
        })();
        $this->assertSame(2, $q->seed($items, ['priority' => 1])->added);
        // an IteratorAggregate, as a Laravel Collection is
        $aggregate = new class () implements \IteratorAggregate {
            public function getIterator(): \Iterator
            {
                return new \ArrayIterator([['url' => 'http://c.com/', 'method' => 'POST', 'body' => 'q=1']]);
            }
        };
        $requests = $q->seedRequests($aggregate);
        $this->assertSame(1, $requests->added);
        [$page] = $q->lease(1, 0.0);
        $answer = $q->ackWithLinks($page, (function () { yield 'next.html'; })());
        $this->assertSame([true, 1], [$answer['acked'], $answer['links']->added]);
        $this->assertSame(5, $q->stats()['seen']);

        // an exception the generator throws reaches the caller, and nothing is seeded
        $throwing = (function () {
            yield 'http://d.com/1';
            throw new \DomainException('no more');
        })();
        try {
            $q->seed($throwing);
            $this->fail('the generator\'s exception did not reach the caller');
        } catch (\DomainException $e) {
            $this->assertSame('no more', $e->getMessage());
        }
        $this->assertSame(5, $q->stats()['seen'], 'nothing of the thrown batch was seeded');
        // an object that is not Traversable is a TypeError
        try {
            $q->seed(new \stdClass());
            $this->fail('an object was taken as items');
        } catch (\TypeError $e) {
            $this->assertSame('items must be a string, an array or a Traversable', $e->getMessage());
        }
    }

    public function testALeaseHasEveryPropertyAndIsAckedOnce(): void
    {
        $q = $this->open();
        $q->seed(['http://a.com/x'], ['payload' => ['depth' => 1]]);
        [$lease] = $q->lease(1, 1.0);
        $this->assertInstanceOf(Lease::class, $lease);
        $this->assertSame(['1', 'http://a.com/x', 'a.com', 0, 1, null], [$lease->id, $lease->url, $lease->host, $lease->priority, $lease->attempt, $lease->lastError]);
        $this->assertSame(['depth' => 1], $lease->payload);
        $this->assertEqualsWithDelta(120.0, $lease->expiresAt - $lease->leasedAt, 1e-6);
        $this->assertLessThanOrEqual($lease->leasedAt, $lease->enqueuedAt);
        $this->assertIsInt($lease->token);
        $this->assertTrue($q->ack($lease));
        $this->assertFalse($q->ack($lease), 'a second ack is stale');
        $stats = $q->stats();
        $this->assertSame([1, 0, 0], [$stats['done'], $stats['leased'], $stats['pending']]);
    }

    public function testPropertiesAreReadOnly(): void
    {
        $q = $this->open();
        $q->seed(['http://a.com/']);
        [$lease] = $q->lease(1, 0.0);
        try {
            $lease->id = 'other';
            $this->fail('a lease property was written');
        } catch (\Throwable $e) {
            $this->assertSame('1', $lease->id);
        }
    }

    public function testPriorityThenArrivalOrderAndBatchAnswers(): void
    {
        $q = $this->open();
        $q->seed(['http://a.com/1', 'http://b.com/1', 'http://a.com/2']);
        $q->seed([['url' => 'http://c.com/1', 'priority' => 9]]);
        $leases = $q->lease(10, 0.0);
        $this->assertSame(['http://c.com/1', 'http://a.com/1', 'http://b.com/1', 'http://a.com/2'], array_map(fn ($l) => $l->url, $leases));
        $this->assertSame([true, true, true, true], $q->ack($leases));
        $this->assertSame([], $q->lease(5, 0.0));
    }

    public function testAckAndLeaseTakesTheNextInOneCall(): void
    {
        $server = new RedisServer();
        $q = new Queue($server->url(), unique_name('q'));
        $q->seed(['http://a.com/1', 'http://b.com/1', 'http://c.com/1']);
        [$first] = $q->lease(1, 0.0);
        $server->cli('CONFIG', 'RESETSTAT');
        $next = $q->ackAndLease($first, 1, 0.0);
        $this->assertTrue($next['acked']);
        $this->assertSame(['http://b.com/1'], array_map(fn (Lease $l) => $l->url, $next['leases']));
        $this->assertStringContainsString('cmdstat_fcall:calls=1,', $server->cli('INFO', 'commandstats'), 'one call');
        // a list: one flag per lease, a stale one false; max takes what is left
        $more = $q->ackAndLease([$first, $next['leases'][0]], 5, 0.0);
        $this->assertSame([false, true], $more['acked']);
        $this->assertSame(['http://c.com/1'], array_map(fn (Lease $l) => $l->url, $more['leases']));
        // nothing ready: the ack is applied and the lease waits $wait seconds
        $started = microtime(true);
        $last = $q->ackAndLease($more['leases'][0], 1, 0.3);
        $this->assertSame(['acked' => true, 'leases' => []], $last);
        $this->assertGreaterThanOrEqual(0.25, microtime(true) - $started);
        $stats = $q->stats();
        $this->assertSame([3, 0, 0], [$stats['done'], $stats['leased'], $stats['pending']]);
        try {
            $q->ackAndLease($first, 0);
            $this->fail('max 0 is refused');
        } catch (Crawlq\InvalidArgumentException $e) {
            $this->assertSame('INVALID_ARGUMENT', $e->getCode());
        }
        $this->expectException(TypeError::class);
        $q->ackAndLease('http://a.com/1');
    }

    public function testLeasedItemsListWhatWorkersHoldSoonestExpiryFirst(): void
    {
        $q = $this->open(['fixed_clock' => T0 / 1000, 'lease_ttl' => 60, 'host_delay' => 0]);
        $this->assertSame(['total' => 0, 'now' => T0 / 1000.0, 'items' => []], $q->leasedItems());
        $q->seed(['http://a.com/1', 'http://b.com/1', 'http://c.com/1']);
        $long = $q->lease(2, 0.0);
        [$short] = $q->lease(1, 0.0, 5.0);
        $page = $q->leasedItems();
        $this->assertSame([3, T0 / 1000.0, 3], [$page['total'], $page['now'], count($page['items'])]);
        $first = $page['items'][0];
        $this->assertSame([$short->id, $short->url, $short->token, $short->expiresAt, 1, null],
            [$first['id'], $first['url'], $first['token'], $first['expires_at'], $first['attempt'], $first['crawl']]);
        $rest = array_map(fn ($i) => $i['id'], array_slice($page['items'], 1));
        $held = array_map(fn ($l) => $l->id, $long);
        sort($rest);
        sort($held);
        $this->assertSame($held, $rest);
        $this->assertSame([$page['items'][1]], $q->leasedItems(1, 1)['items']);
        $q->_setFixedClock(T0 + 5_001);
        $later = $q->leasedItems();
        $this->assertTrue($later['total'] === 3 && $later['items'][0]['expires_at'] < $later['now']);
        $q->ack($long);
        $this->assertSame([$short->id], array_map(fn ($i) => $i['id'], $q->leasedItems()['items']));
        $this->expectException(\Crawlq\InvalidArgumentException::class);
        $q->leasedItems(-1);
    }

    public function testNackBackoffAndDeadLetters(): void
    {
        $q = $this->open(['fixed_clock' => T0 / 1000, 'max_attempts' => 2, 'backoff' => 'fixed', 'backoff_base' => 30, 'backoff_jitter' => 0]);
        $q->seed(['http://n.com/1', 'http://n.com/2']);
        [$first, $second] = $q->lease(2, 0.0);
        $this->assertSame('retried', $q->nack($first, ['reason' => 'HTTP 503']));
        $this->assertSame('dead', $q->nack($second, ['retry' => false, 'reason' => 'HTTP 404']));
        $this->assertSame('lost', $q->nack($first));
        $q->_setFixedClock(T0 + 29_999);
        $this->assertSame([], $q->lease(1, 0.0));
        $q->_setFixedClock(T0 + 30_000);
        [$again] = $q->lease(1, 0.0);
        $this->assertSame([2, 'HTTP 503'], [$again->attempt, $again->lastError]);
        $this->assertSame(['dead'], $q->nack([$again], ['delay' => 0]));
        $dead = $q->dead();
        $this->assertSame([['http://n.com/2', 1, 'HTTP 404'], ['http://n.com/1', 2, 'HTTP 503']],
            array_map(fn ($d) => [$d['url'], $d['attempts'], $d['last_error']], $dead));
        $this->assertSame(T0 / 1000.0, $dead[0]['died_at']);
        $this->assertSame([$dead[1], null, $dead[0]], $q->deadLetters([$dead[1]['id'], 'nope', $dead[0]['id']]));
        $this->assertSame([], $q->deadLetters([]));
        $this->assertSame('http://n.com/1', $q->dead(1, 1)[0]['url']);
        $this->assertSame(1, $q->requeueDead([$dead[0]['id'], 'nope']));
        $this->assertSame(1, $q->requeueDead());
        $this->assertCount(2, $q->lease(5, 0.0));
        $this->assertSame(0, $q->purgeDead());
    }

    public function testExtendReleaseAndReclaim(): void
    {
        $q = $this->open(['fixed_clock' => T0 / 1000, 'lease_ttl' => 10]);
        $q->seed(['http://x.com/1', 'http://x.com/2']);
        [$a, $b] = $q->lease(2, 0.0);
        $q->_setFixedClock(T0 + 5_000);
        $this->assertSame((T0 + 65_000) / 1000.0, $q->extend($a, 60));
        $this->assertSame((T0 + 65_000) / 1000.0, $a->expiresAt);
        $this->assertTrue($q->release($b));
        $q->_setFixedClock(T0 + 20_000);
        $this->assertSame(['requeued' => 0, 'dead' => 0, 'remaining' => 0], $q->reclaim());
        [$b2] = $q->lease(1, 0.0);
        $this->assertSame(['http://x.com/2', 1], [$b2->url, $b2->attempt]);
        $q->_setFixedClock(T0 + 100_000);
        $this->assertSame(['requeued' => 2, 'dead' => 0, 'remaining' => 0], $q->reclaim(10));
        $this->assertSame([null, null], $q->extend([$a, $b2], 5));
        $this->assertSame([false], $q->release([$a]));
    }

    public function testNackAndReleaseStoreANewPayload(): void
    {
        $q = $this->open(['max_payload_bytes' => 64]);
        $q->seed([['url' => 'http://p.com/1', 'payload' => ['retry_count' => 0]], 'http://p.com/2']);
        [$a, $b] = $q->lease(2, 0.0);
        $this->assertSame('retried', $q->nack($a, ['delay' => 0, 'reason' => 'HTTP 500', 'payload' => ['retry_count' => 1]]));
        $this->assertTrue($q->release($b, ['payload' => [1, 'two']]));
        $leases = [];
        foreach ($q->lease(2, 0.0) as $l) {
            $leases[$l->url] = $l;
        }
        $this->assertSame(['retry_count' => 1], $leases['http://p.com/1']->payload);
        $this->assertSame([[1, 'two'], 1], [$leases['http://p.com/2']->payload, $leases['http://p.com/2']->attempt]);
        $held = $leases['http://p.com/1'];
        try {
            $q->release($held, ['payload' => str_repeat('x', 100)]);
            $this->fail('a payload over max_payload_bytes is refused');
        } catch (\Crawlq\InvalidArgumentException $e) {
            $this->assertStringContainsString('payload too large', $e->getMessage());
        }
        $this->assertTrue($q->ack($held), 'a refused payload changed nothing');
    }

    public function testBinaryStringsInPayloadsRoundTripByteForByte(): void
    {
        $q = $this->open(['host_delay' => 0.0]);
        $binary = implode('', array_map('chr', range(0, 255)));
        $q->seed([['url' => "http://b.com/\xff", 'payload' => ['body' => $binary, 'text' => 'héllo', 'list' => ["\x00\x80"]]]]);
        $stored = shared_redis()->cli('LRANGE', 'crawlq:{' . $q->getName() . '}:l:0:b.com', '0', '-1');
        $this->assertStringContainsString('"list":[{"$bytes":"AIA="}]', $stored);
        $this->assertStringContainsString('"text":"héllo"', $stored, 'UTF-8 strings stay text');
        [$lease] = $q->lease(1, 0.0);
        $this->assertSame('http://b.com/%EF%BF%BD', $lease->url, 'outside payloads a bad byte is U+FFFD');
        $this->assertSame(['body' => $binary, 'list' => ["\x00\x80"], 'text' => 'héllo'], $lease->payload);
        $this->assertSame('retried', $q->nack($lease, ['delay' => 0, 'payload' => "\xfe"]));
        [$lease] = $q->lease(1, 0.0);
        $this->assertSame("\xfe", $lease->payload);
        $this->assertTrue($q->release($lease, ['payload' => ['$bytes' => 'AP8K', 'other' => 1]]));
        $this->assertSame(['$bytes' => 'AP8K', 'other' => 1], $q->lease(1, 0.0)[0]->payload, 'only a one-key object is bytes');
    }

    public function testPolitenessAndHostSettings(): void
    {
        $q = $this->open(['fixed_clock' => T0 / 1000, 'host_delay' => 2.0]);
        $info = $q->setHostDelay('HTTP://Slow.COM/x', 30);
        $this->assertSame(['slow.com', 30.0], [$info['host'], $info['delay']]);
        $q->seed(['http://slow.com/1', 'http://slow.com/2', 'http://fast.com/1', 'http://fast.com/2']);
        $this->assertSame(['http://slow.com/1', 'http://fast.com/1'], array_map(fn ($l) => $l->url, $q->lease(10, 0.0)));
        $q->_setFixedClock(T0 + 2_000);
        $this->assertSame(['http://fast.com/2'], array_map(fn ($l) => $l->url, $q->lease(10, 0.0)));
        $this->assertSame(['host' => 'slow.com', 'delay' => 30.0, 'adaptive_extra' => 0.0, 'ready' => 1, 'held_until' => (T0 + 30_000) / 1000.0,
            'paused' => false, 'paused_until' => null, 'budget' => null, 'budget_used' => 0, 'budget_remaining' => null, 'deleting' => false,
            'in_flight_limit' => null, 'in_flight' => 0, 'full' => false, 'delay_from_robots' => false, 'delay_after' => null, 'delay_factor' => null], $q->hostInfo('slow.com'));
        $this->assertNull($q->setHostDelay('slow.com', null)['delay']);
    }

    public function testPauseHostUntilResumedOrForATime(): void
    {
        $q = $this->open(['fixed_clock' => T0 / 1000]);
        $q->seed(['http://p.com/1', 'http://p.com/2', 'http://o.com/1']);
        $info = $q->pauseHost('HTTP://P.com/x');
        $this->assertSame(['p.com', true, null, null, 2], [$info['host'], $info['paused'], $info['paused_until'], $info['held_until'], $info['ready']]);
        $this->assertSame(['http://o.com/1'], array_map(fn ($l) => $l->url, $q->lease(10, 0.0)));
        $this->assertFalse($q->resumeHost('p.com')['paused']);
        $this->assertSame(['http://p.com/1', 'http://p.com/2'], array_map(fn ($l) => $l->url, $q->lease(10, 0.0)));
        $timed = $q->pauseHost('p.com', 2.5);
        $this->assertSame([true, (T0 + 2_500) / 1000.0], [$timed['paused'], $timed['paused_until']]);
        $q->_setFixedClock(T0 + 2_500);
        $this->assertFalse($q->hostInfo('p.com')['paused'], 'over at its end');
        $this->expectException(Crawlq\InvalidArgumentException::class);
        $q->pauseHost('p.com', -1.0);
    }

    public function testListHostsPagesTheHostsWithExactCounts(): void
    {
        $q = $this->open(['host_delay' => 1.0]);
        $urls = array_map(fn ($i) => "http://big.com/$i", range(0, 4));
        array_push($urls, 'http://mid.com/1', 'http://mid.com/2');
        for ($i = 0; $i < 2000; $i++) {
            $urls[] = "http://h$i.example/";
        }
        $q->seed($urls);
        $q->seed([['url' => 'http://mid.com/later', 'delay' => 60]]);
        $leases = $q->lease(2, 0.0);
        $this->assertSame(['big.com', 'mid.com'], array_map(fn ($l) => $l->host, $leases));
        $this->assertSame('dead', $q->nack($leases[1], ['retry' => false]));
        $hosts = [];
        $cursor = null;
        do {
            $page = $q->listHosts($cursor, 500);
            $this->assertLessThanOrEqual(500, count($page['hosts']));
            array_push($hosts, ...$page['hosts']);
            $cursor = $page['cursor'];
        } while ($cursor !== null);
        $this->assertCount(2002, $hosts);
        $this->assertCount(2002, array_unique(array_column($hosts, 'host')));
        $this->assertSame([['big.com', 5, 4, 0, 1, 0], ['mid.com', 3, 1, 1, 0, 1]], array_map(
            fn ($h) => [$h['host'], $h['items'], $h['ready'], $h['delayed'], $h['leased'], $h['dead']],
            array_slice($hosts, 0, 2)
        ));
        $this->assertSame(2002, $q->listHosts(null, 1)['total']);
        foreach ([[null, 0], [null, -1], ['x', 10]] as [$badCursor, $badLimit]) {
            try {
                $q->listHosts($badCursor, $badLimit);
                $this->fail('accepted a bad cursor or limit');
            } catch (Crawlq\InvalidArgumentException $e) {
                $this->assertSame('INVALID_ARGUMENT', $e->getCode());
            }
        }
    }

    public function testDeleteHostWhileForkedWorkersRunKeepsCountsExact(): void
    {
        $name = unique_name('rm');
        $q = new Queue(shared_redis()->url(), $name);
        $urls = [];
        for ($h = 0; $h < 10; $h++) {
            for ($i = 0; $i < 40; $i++) {
                $urls[] = "http://h$h.com/$i";
            }
        }
        $q->seed($urls);
        $children = [];
        for ($w = 0; $w < 3; $w++) {
            $report = tempnam(sys_get_temp_dir(), 'crawlq-rm');
            $pid = pcntl_fork();
            if ($pid === 0) {
                $acked = 0;
                $lost = 0;
                $wrong = 0;
                try {
                    $mine = new Queue(shared_redis()->url(), $name);
                    $end = microtime(true) + 0.4;
                    while (microtime(true) < $end) {
                        foreach ($mine->lease(5, 0.05) as $lease) {
                            usleep(1000);
                            // ack answers false for a lease that is no longer live (here: its
                            // host was deleted)
                            if ($mine->ack($lease)) {
                                $acked++;
                            } else {
                                $lost++;
                                $wrong += $lease->host === 'h3.com' ? 0 : 1;
                            }
                        }
                    }
                    file_put_contents($report, json_encode([$acked, $lost, $wrong]));
                } catch (\Throwable $e) {
                    file_put_contents($report, json_encode(['error' => $e->getMessage()]));
                }
                posix_kill(getmypid(), SIGKILL); // the child must not run PHPUnit's shutdown
            }
            $children[$pid] = $report;
        }
        usleep(150_000);
        $gone = $q->deleteHost('http://h3.com/');
        [$acked, $lost] = [0, 0];
        foreach ($children as $pid => $report) {
            pcntl_waitpid($pid, $status);
            $got = json_decode((string) file_get_contents($report), true);
            unlink($report);
            $this->assertArrayNotHasKey('error', $got);
            $this->assertSame(0, $got[2], 'only the deleted host loses leases');
            $acked += $got[0];
            $lost += $got[1];
        }
        $s = $q->stats();
        $this->assertSame(['h3.com', 0], [$gone['host'], $gone['left']]);
        $this->assertSame($gone['ready'] + $gone['delayed'] + $gone['leased'] + $gone['dead'], $gone['removed']);
        $this->assertSame($acked, $s['done'], 'done counts exactly the acks that succeeded');
        $this->assertLessThanOrEqual($gone['leased'], $lost);
        $this->assertSame(400, $s['done'] + $s['pending'] + $s['leased'] + $s['dead'] + $gone['removed']);
        $this->assertNotContains('h3.com', array_column($q->listHosts()['hosts'], 'host'));
        $this->assertSame(1, $q->seed('http://h3.com/0')->duplicates, 'its URLs stay seen');
    }

    public function testAHostBudgetRefusesTheUrlsPastIt(): void
    {
        $q = $this->open();
        $this->assertSame(2, $q->setHostBudget('b.com', 2)['budget_remaining']);
        $report = $q->seed(['http://b.com/1', 'http://b.com/2', 'http://b.com/3', 'http://c.com/1']);
        $this->assertSame(3, $report->added);
        $this->assertSame([[2, 'http://b.com/3', 'budget_exhausted']],
            array_map(fn ($i) => [$i['index'], $i['input'], $i['code']], $report->invalid));
        $q->setDefaultHostBudget(10);
        $this->assertSame(10, $q->defaultHostBudget());
        $this->expectException(Crawlq\InvalidArgumentException::class);
        $q->setHostBudget('b.com', -1);
    }

    /**
     * 16 workers, each its own Queue (connection), take turns: each round every worker answers
     * what it holds (ack, release or nack, in turn) and leases again, so up to 16 leases are out
     * at once. A host of limit 1 and one of limit 2 never have more leased at once.
     */
    public function testInFlightLimitsHoldUnderSixteenWorkersAndAnswersFreeTheSlots(): void
    {
        $name = unique_name('flight');
        $q = new Queue(shared_redis()->url(), $name, ['host_in_flight' => 2]);
        $info = $q->setHostInFlight('one.com', 1);
        $this->assertSame([1, 0, false], [$info['in_flight_limit'], $info['in_flight'], $info['full']]);
        $urls = [];
        for ($i = 0; $i < 30; $i++) {
            $urls[] = "http://one.com/$i";
            $urls[] = "http://two.com/$i";
        }
        $q->seed($urls);
        $workers = [];
        for ($n = 0; $n < 16; $n++) {
            $workers[] = ['q' => new Queue(shared_redis()->url(), $name, ['host_in_flight' => 2]), 'held' => []];
        }
        $now = ['one.com' => 0, 'two.com' => 0];
        $most = $now;
        for ($round = 0; !$q->isFinished() && $round < 1000; $round++) {
            foreach ($workers as $n => &$w) {
                foreach ($w['held'] as $i => $lease) {
                    $now[$lease->host]--;
                    match (($round + $i) % 3) {
                        0 => $w['q']->ack($lease),
                        1 => $w['q']->release($lease),
                        2 => $w['q']->nack($lease, ['delay' => 0]),
                    };
                }
                $w['held'] = $w['q']->lease(1 + $n % 3, 0);
                foreach ($w['held'] as $lease) {
                    $now[$lease->host]++;
                    $most[$lease->host] = max($most[$lease->host], $now[$lease->host]);
                }
                $this->assertLessThanOrEqual(1, $q->hostInfo('one.com')['in_flight']);
                $this->assertLessThanOrEqual(2, $q->hostInfo('two.com')['in_flight']);
            }
            unset($w);
        }
        $this->assertTrue($q->isFinished(), 'every item acked');
        $this->assertSame(['one.com' => 1, 'two.com' => 2], $most);
        $this->assertSame(0, $q->hostInfo('one.com')['in_flight']);
        $this->assertNull($q->setHostInFlight('one.com', null)['in_flight_limit']);
        foreach ([-1, 1_000_001] as $bad) {
            try {
                $q->setHostInFlight('one.com', $bad);
                $this->fail("limit $bad accepted");
            } catch (Crawlq\InvalidArgumentException $e) {
                $this->assertSame('INVALID_ARGUMENT', $e->getCode());
            }
        }
        $this->expectException(Crawlq\ConfigException::class);
        new Queue(shared_redis()->url(), $name, ['host_in_flight' => -1]);
    }

    public function testTheSeenCacheAnswersRepeatedLinksAndCountsThem(): void
    {
        $q = $this->open(['seen_cache' => 1000]);
        $links = array_map(fn ($i) => "http://a.com/$i", range(0, 9));
        $this->assertSame(10, $q->seed($links)->added);
        $report = $q->seed($links);
        $this->assertSame([0, 10], [$report->added, $report->duplicates]);
        $this->assertSame(['entries' => 10, 'hits' => 10, 'misses' => 10, 'resent' => 0, 'resets' => 0], $q->seenCacheStats());
        // the queue counts them as it would without the cache, and as cache hits
        $stats = $q->stats();
        $this->assertSame([10, 10], [$stats['duplicates_total'], $stats['seen_cache_hits_total']]);
    }

    public function testAckWithLinksAnswersTheLeaseAndSeedsItsLinks(): void
    {
        $q = $this->open();
        $q->seed(['http://a.com/']);
        [$lease] = $q->lease(1, 0.0);
        try {
            $q->ackWithLinks($lease, ['http://a.com/x'], ['priority' => 1 << 20]);
            $this->fail('priority accepted');
        } catch (Crawlq\InvalidArgumentException $e) {
            $this->assertSame('INVALID_ARGUMENT', $e->getCode());
        }
        $r = $q->ackWithLinks($lease, ['http://a.com/x', 'http://a.com/'], ['priority' => 2]);
        $this->assertTrue($r['acked']);
        $this->assertSame([1, 1], [$r['links']->added, $r['links']->duplicates]);
        $this->assertSame(2, $q->lease(1, 0.0)[0]->priority);
        $this->expectException(\TypeError::class);
        $q->ackWithLinks([$lease], ['http://a.com/x']);
    }

    public function testAckWithRequestsAnswersThePageAndSeedsTheRequestsFoundOnIt(): void
    {
        $q = $this->open();
        $q->seed(['http://a.com/']);
        [$lease] = $q->lease(1, 0.0);
        try {
            $q->ackWithRequests($lease, [['url' => 'http://a.com/form']], ['priority' => 1 << 20]);
            $this->fail('priority accepted');
        } catch (Crawlq\InvalidArgumentException $e) {
            $this->assertSame('INVALID_ARGUMENT', $e->getCode());
        }
        $found = [
            ['url' => 'http://a.com/form', 'method' => 'POST', 'body' => 'q=1', 'label' => 'search'],
            ['url' => 'http://a.com/form'],
            ['url' => 'http://a.com/'],
        ];
        $r = $q->ackWithRequests($lease, $found, ['priority' => 2]);
        $this->assertTrue($r['acked']);
        $this->assertSame([2, 1], [$r['links']->added, $r['links']->duplicates]);
        $methods = array_map(fn ($l) => [Crawlq\request_of($l)['method'], $l->priority], $q->lease(5, 0.0));
        sort($methods);
        $this->assertSame([['GET', 2], ['POST', 2]], $methods);
        foreach ([fn () => $q->ackWithRequests($lease, [], ['payload' => 1]), fn () => $q->seedRequests([], ['payload' => 1])] as $call) {
            try {
                $call();
                $this->fail('a payload option accepted for crawl requests');
            } catch (Crawlq\InvalidArgumentException $e) {
                $this->assertStringContainsString('unknown seed option "payload"; known: priority, delay, force, crawl', $e->getMessage());
            }
        }
        $this->expectException(\TypeError::class);
        $q->ackWithRequests($lease, 'http://a.com/form');
    }

    public function testAPagesRelativeLinksAndRequestsResolveAgainstItsUrl(): void
    {
        $q = $this->open(['host_delay' => 0]);
        $q->seed(['https://a.com/docs/intro.html', 'https://b.com/list/']);
        $pages = [];
        foreach ($q->lease(2, 0.0) as $l) {
            $pages[$l->host] = $l;
        }
        $r = $q->ackWithLinks($pages['a.com'], ['next.html', '/about#team', '#top', 'mailto:x@a.com']);
        $this->assertSame([true, 2, 1], [$r['acked'], $r['links']->added, $r['links']->duplicates]);
        $this->assertSame([[3, 'unsupported_scheme']], array_map(fn ($i) => [$i['index'], $i['code']], $r['links']->invalid));
        $found = [['url' => 'search?q=1', 'method' => 'POST', 'body' => 'x'], ['url' => 'https://b.com/list/search?q=1']];
        $r = $q->ackWithRequestsAndLease($pages['b.com'], $found, 5, 0.0);
        $this->assertSame([true, 2], [$r['acked'], $r['links']->added], 'the POST and the GET are two requests');
        $leased = array_map(
            fn ($l) => [$l->url, Crawlq\request_of($l)['method'], Crawlq\request_of($l)['url']],
            array_merge($r['leases'], $q->lease(10, 0.0))
        );
        sort($leased);
        $this->assertSame([
            ['https://a.com/about', 'GET', 'https://a.com/about'],
            ['https://a.com/docs/next.html', 'GET', 'https://a.com/docs/next.html'],
            ['https://b.com/list/search?q=1', 'GET', 'https://b.com/list/search?q=1'],
            ['https://b.com/list/search?q=1', 'POST', 'https://b.com/list/search?q=1'],
        ], $leased);
    }

    public function testRemoveQueueRefusesWhileLeasedThenDeletesEveryShard(): void
    {
        $name = unique_name('remove');
        $q = new Crawlq\Queue(shared_redis()->url(), $name, ['shards' => 3, 'seen_cache' => 1000]);
        $urls = [];
        foreach (range(0, 5) as $h) {
            foreach (range(0, 4) as $i) {
                $urls[] = "http://h$h.com/$i";
            }
        }
        $q->seed($urls);
        [$lease] = $q->lease(1, 0.0);
        try {
            $q->removeQueue();
            $this->fail('removed while an item was leased');
        } catch (Crawlq\InvalidArgumentException $e) {
            $this->assertStringContainsString('has 1 leased items: stop its workers first', $e->getMessage());
        }
        $this->assertSame(29, $q->stats()['pending'], 'a refused removal changes nothing');
        $this->assertGreaterThan(3, $q->removeQueue(true));
        $this->assertFalse($q->ack($lease), 'a lease of the removed queue answers lost');
        $again = $q->seed($urls);
        $this->assertSame([30, 0], [$again->added, $again->duplicates], 'the same client seeds them into the queue made again');
    }

    public function testAckWithLinksAndLeaseAnswersThePageSeedsItsLinksAndLeasesTheNext(): void
    {
        $q = $this->open();
        $q->seed(['http://a.com/']);
        [$lease] = $q->lease(1, 0.0);
        $refused = [
            [0, 0.0, null, 'max must be within 1..=10000, got 0'],
            [1, 0.0, ['max' => 2], 'max is an argument of ackWithLinksAndLease, not an option'],
            [1, 0.0, ['wait' => 2], 'wait is an argument of ackWithLinksAndLease, not an option'],
            [1, -1.0, null, '"wait" must be a non-negative number of seconds'],
            // (the names $options may hold: max and wait are arguments)
            [1, 0.0, ['nope' => 1], 'unknown seed or lease option "nope"; known: priority, delay, payload, force, crawl, ttl'],
            [1, 0.0, ['ttl'], 'options must be a map of option names'],
        ];
        foreach ($refused as [$max, $wait, $options, $message]) {
            try {
                $q->ackWithLinksAndLease($lease, ['http://b.com/'], $max, $wait, $options);
                $this->fail('accepted: ' . json_encode([$max, $wait, $options]));
            } catch (Crawlq\InvalidArgumentException $e) {
                $this->assertSame('INVALID_ARGUMENT', $e->getCode());
                $this->assertStringContainsString($message, $e->getMessage());
            }
        }
        $r = $q->ackWithLinksAndLease($lease, ['http://b.com/', 'http://c.com/', 'http://a.com/'], 5, 0.0, ['priority' => 3, 'ttl' => 2.0]);
        $this->assertTrue($r['acked']);
        $this->assertSame([2, 1], [$r['links']->added, $r['links']->duplicates]);
        $urls = array_map(fn ($l) => $l->url, $r['leases']);
        sort($urls);
        $this->assertSame(['http://b.com/', 'http://c.com/'], $urls);
        foreach ($r['leases'] as $l) {
            $this->assertSame(3, $l->priority);
            $this->assertEqualsWithDelta(2.0, $l->expiresAt - $l->leasedAt, 0.001);
        }
        // the stale answer of an already answered lease: lost, and the lease still runs
        $q->seed(['http://d.com/']);
        $again = $q->ackWithLinksAndLease($lease, [], 1, 0.0);
        $this->assertFalse($again['acked']);
        $this->assertSame(['http://d.com/'], array_map(fn ($l) => $l->url, $again['leases']));
    }

    public function testAnswerLingerHoldsAPagesAnswerForOthersThenSendsIt(): void
    {
        // one PHP process answers one page at a time: its answer waits the linger, then goes
        $q = new Queue(shared_redis()->url(), unique_name('q'), ['answer_linger' => 0.2]);
        $q->seed(['http://a.com/', 'http://b.com/']);
        [$lease] = $q->lease(1, 0.0);
        $started = microtime(true);
        $r = $q->ackWithLinksAndLease($lease, ['http://c.com/'], 1, 0.0);
        $this->assertGreaterThanOrEqual(0.19, microtime(true) - $started, 'the answer lingered');
        $this->assertTrue($r['acked']);
        $this->assertSame([1, 1], [$r['links']->added, count($r['leases'])]);
    }

    public function testAckWithRequestsAndLeaseAnswersThePageSeedsItsRequestsAndLeasesTheNextInOneCall(): void
    {
        $server = new RedisServer();
        $q = new Queue($server->url(), unique_name('q'));
        $q->seed(['http://a.com/']);
        [$lease] = $q->lease(1, 0.0);
        $refused = [
            [0, 0.0, null, 'max must be within 1..=10000, got 0'],
            [1, 0.0, ['max' => 2], 'max is an argument of ackWithRequestsAndLease, not an option'],
            [1, -1.0, null, '"wait" must be a non-negative number of seconds'],
            [1, 0.0, ['nope' => 1], 'unknown seed or lease option "nope"'],
            // a request's payload is the request itself: the option would be ignored
            [1, 0.0, ['payload' => 1], 'unknown seed or lease option "payload"; known: priority, delay, force, crawl, ttl'],
        ];
        foreach ($refused as [$max, $wait, $options, $message]) {
            try {
                $q->ackWithRequestsAndLease($lease, [['url' => 'http://b.com/']], $max, $wait, $options);
                $this->fail('accepted: ' . json_encode([$max, $wait, $options]));
            } catch (Crawlq\InvalidArgumentException $e) {
                $this->assertSame('INVALID_ARGUMENT', $e->getCode());
                $this->assertStringContainsString($message, $e->getMessage());
            }
        }
        $found = [
            ['url' => 'http://b.com/form', 'method' => 'POST', 'body' => 'q=1', 'label' => 'search'],
            ['url' => 'http://b.com/form'],
            ['url' => 'http://a.com/'],
            ['url' => 'http://not a host/'],
        ];
        $server->cli('CONFIG', 'RESETSTAT');
        $r = $q->ackWithRequestsAndLease($lease, $found, 5, 0.0, ['priority' => 3, 'ttl' => 2.0]);
        $this->assertStringContainsString('cmdstat_fcall:calls=1,', $server->cli('INFO', 'commandstats'), 'one call');
        $this->assertTrue($r['acked']);
        $this->assertSame([2, 1], [$r['links']->added, $r['links']->duplicates]);
        $this->assertSame([[3, 'http://not a host/']], array_map(fn ($i) => [$i['index'], $i['input']], $r['links']->invalid));
        $methods = array_map(fn ($l) => [Crawlq\request_of($l)['method'], $l->priority], $r['leases']);
        sort($methods);
        $this->assertSame([['GET', 3], ['POST', 3]], $methods);
        foreach ($r['leases'] as $l) {
            $this->assertEqualsWithDelta(2.0, $l->expiresAt - $l->leasedAt, 0.001);
        }
        // the stale answer of an already answered lease: lost, its requests seeded, the lease runs
        $q->seed(['http://d.com/']);
        $again = $q->ackWithRequestsAndLease($lease, [['url' => 'http://e.com/']], 5, 0.0);
        $this->assertFalse($again['acked']);
        $this->assertSame(1, $again['links']->added);
        $urls = array_map(fn ($l) => $l->url, $again['leases']);
        sort($urls);
        $this->assertSame(['http://d.com/', 'http://e.com/'], $urls);
        $this->expectException(\TypeError::class);
        $q->ackWithRequestsAndLease($lease, 'http://a.com/form');
    }

    public function testATurnOfAFullHostComesOnlyToItsOwnLeaseUntilASlotFrees(): void
    {
        $q = $this->open();
        $q->setHostInFlight('t.com', 1);
        $q->seed(['http://t.com/1']);
        [$lease] = $q->lease(1, 0.0);
        // a redirect of the lease's own fetch runs in its slot; another request waits for one
        $this->assertTrue($q->waitHostTurn('http://t.com/x', $lease, 0.0));
        $started = microtime(true);
        $this->assertFalse($q->waitHostTurn('http://t.com/y', null, 0.3));
        $this->assertGreaterThanOrEqual(0.29, microtime(true) - $started);
        $q->ack($lease);
        $this->assertTrue($q->waitHostTurn('http://t.com/y', null, 0.0));
        foreach ([[[$lease], null, \TypeError::class], [null, -1.0, Crawlq\InvalidArgumentException::class]] as [$l, $t, $class]) {
            try {
                $q->waitHostTurn('http://t.com/x', $l, $t);
                $this->fail('accepted');
            } catch (\Throwable $e) {
                $this->assertInstanceOf($class, $e);
            }
        }
        $this->expectException(Crawlq\InvalidItemException::class);
        $q->waitHostTurn('not a url');
    }

    public function testNackWithRetryAfterHoldsTheItemAndTheHost(): void
    {
        $q = $this->open(['fixed_clock' => T0 / 1000, 'max_attempts' => 10]);
        $q->seed(['http://a.com/1', 'http://a.com/2']);
        [$lease] = $q->lease(1, 0.0);
        $this->assertSame('retried', $q->nack($lease, ['retry_after' => '120']));
        $this->assertSame((T0 + 120_000) / 1000.0, $q->hostInfo('a.com')['held_until']);
        $this->assertSame([], $q->lease(5, 0.0));
        $q->_setFixedClock(T0 + 120_000);
        [$again] = $q->lease(1, 0.0);
        // an HTTP-date (T0 is 2027-01-15T08:00:00Z), rate limited: the adaptive delay grows too
        $this->assertSame('retried', $q->nack($again, ['retry_after' => 'Fri, 15 Jan 2027 08:05:00 GMT', 'rate_limited' => true]));
        $info = $q->hostInfo('a.com');
        $this->assertSame([(T0 + 300_000) / 1000.0, 1.0], [$info['held_until'], $info['adaptive_extra']]);
        $q->_setFixedClock(T0 + 300_000);
        [$third] = $q->lease(1, 0.0);
        try {
            $q->nack($third, ['retry_after' => 'soon']);
            $this->fail('retry_after "soon" accepted');
        } catch (Crawlq\InvalidArgumentException $e) {
            $this->assertStringContainsString('HTTP-date', $e->getMessage());
        }
        $this->assertSame('retried', $q->nack($third, ['retry_after' => 2.5]));
        // the header as a server sent it (framework adapters): one that is neither seconds nor
        // a date is ignored, not refused
        $q->_setFixedClock(T0 + 302_500);
        [$fourth] = $q->lease(1, 0.0);
        $this->assertSame('retried', $q->nack($fourth, ['retry_after_header' => 'soon']));
        // (held by its lease alone: the 1 s adaptive delay of the rate limit above)
        $this->assertSame((T0 + 303_500) / 1000.0, $q->hostInfo('a.com')['held_until']);
        $q->_setFixedClock(T0 + 303_500);
        [$fifth] = $q->lease(1, 0.0);
        $this->assertSame('retried', $q->nack($fifth, ['retry_after_header' => '60']));
        $this->assertSame((T0 + 363_500) / 1000.0, $q->hostInfo('a.com')['held_until']);
    }

    public function testAckWithARevisitAtATime(): void
    {
        $q = $this->open(['fixed_clock' => T0 / 1000]);
        $q->seed(['http://r.com/1']);
        [$lease] = $q->lease(1, 0.0);
        $this->assertTrue($q->ack($lease, ['revisit_at' => (T0 + 3_000) / 1000]));
        $this->assertSame(1, $q->stats()['revisits']);
        $q->_setFixedClock(T0 + 2_999);
        $this->assertSame([], $q->lease(1, 0.0));
        $q->_setFixedClock(T0 + 3_000);
        [$again] = $q->lease(1, 0.0);
        $this->assertSame(['http://r.com/1', 1], [$again->url, $again->attempt]);
        $this->expectException(Crawlq\InvalidArgumentException::class);
        $q->ack($again, ['revisit_after' => 1.0, 'revisit_at' => T0 / 1000]);
    }

    public function testRateLimitedNackSlowsTheHost(): void
    {
        $q = $this->open(['fixed_clock' => T0 / 1000, 'adaptive_delay_step' => 4]);
        $q->seed(['http://busy.com/1']);
        [$lease] = $q->lease(1, 0.0);
        $this->assertSame('retried', $q->nack($lease, ['rate_limited' => true]));
        $this->assertSame(4.0, $q->hostInfo('busy.com')['adaptive_extra']);
        $this->assertSame([], $q->lease(1, 0.0));
        $q->_setFixedClock(T0 + 4_000);
        [$again] = $q->lease(1, 0.0);
        $this->assertSame(1, $again->attempt);
    }

    public function testStatsPeekAndOldestAge(): void
    {
        $q = $this->open(['fixed_clock' => T0 / 1000]);
        $q->seed(['http://a.com/1', 'http://a.com/2', 'http://b.com/1']);
        $q->_setFixedClock(T0 + 2_500);
        $stats = $q->stats();
        $this->assertSame(2.5, $stats['oldest_pending_age']);
        $this->assertSame([3, 3, 2, 3, 3], [$stats['pending'], $stats['ready'], $stats['hosts'], $stats['seen'], $stats['seeded_total']]);
        $peeked = $q->peek();
        $this->assertSame(['http://a.com/1', 'http://b.com/1'], array_column($peeked, 'url'));
        $this->assertSame(T0 / 1000.0, $peeked[0]['enqueued_at']);
        $this->assertSame(0, $q->stats()['leased']);
    }

    public function testWorkIteratesAndReleasesWhatItHolds(): void
    {
        $q = $this->open();
        $q->seed(array_map(fn ($i) => "http://h" . ($i % 3) . ".com/$i", range(0, 24)));
        $urls = [];
        foreach ($q->work(4, 0.1, null, true) as $i => $lease) {
            $this->assertSame(count($urls), $i);
            $urls[] = $lease->url;
            $q->ack($lease);
        }
        $this->assertCount(25, array_unique($urls));

        $q->seed(array_map(fn ($i) => "http://w.com/$i", range(0, 5)));
        $work = $q->work(6, 0.1);
        foreach ($work as $lease) {
            break; // holding the current lease and five prefetched ones
        }
        $this->assertSame(6, $q->stats()['leased']);
        $work->close();
        $stats = $q->stats();
        $this->assertSame([0, 6, 6], [$stats['leased'], $stats['ready'], $stats['released_total']]);
        unset($work);

        $other = $q->work(3, 0.1, null, true);
        $other->rewind();
        $this->assertTrue($other->valid());
        unset($other); // letting it go releases as well
        $this->assertSame(0, $q->stats()['leased']);
    }

    public function testRegistrableDomainMode(): void
    {
        $q = $this->open(['host_key' => 'domain', 'host_delay' => 60]);
        $q->seed(['http://www.shop.co.uk/', 'http://api.shop.co.uk/', 'http://other.org/']);
        $this->assertSame([['http://www.shop.co.uk/', 'shop.co.uk'], ['http://other.org/', 'other.org']],
            array_map(fn ($l) => [$l->url, $l->host], $q->lease(10, 0.0)));
    }

    public function testResolveUrl(): void
    {
        $this->assertSame('http://a.com/z?q', \Crawlq\resolve_url('http://a.com/x/y', '../z?q'));
        $this->assertSame('https://b.org/', \Crawlq\resolve_url('http://a.com/', 'https://b.org/'));
        $this->assertNull(\Crawlq\resolve_url('not a url', '/x'));
    }

    public function testACrawlsCapHoldsWithSixteenLeasesOutAndAPausedCrawlWaits(): void
    {
        $q = $this->open(['host_delay' => 0.0]);
        $spread = fn (string $p, int $hosts, int $per) => array_map(
            fn ($i) => sprintf('http://h%d.com/%s%d', $i % $hosts, $p, intdiv($i, $hosts)), range(0, $hosts * $per - 1));
        $q->seed($spread('big', 20, 4), ['crawl' => 'big']);
        $q->seed($spread('small', 20, 1), ['crawl' => 'small']);
        $stats = $q->setCrawlCap('big', 3);
        $this->assertSame([3, false], [$stats['cap'], $stats['paused']]);
        // sixteen workers' leases out at once: at most 3 of them of the capped crawl
        $out = [];
        for ($w = 0; $w < 16; $w++) {
            $out = array_merge($out, $q->lease(1, 0.0));
        }
        $crawls = array_count_values(array_map(fn ($l) => $l->crawl, $out));
        $this->assertSame(['big' => 3, 'small' => 13], [ 'big' => $crawls['big'], 'small' => $crawls['small']]);
        $this->assertSame(3, $q->crawlStats('big')['leased']);
        // an answer frees a slot: the next lease may take the capped crawl again
        $q->ack(array_values(array_filter($out, fn ($l) => $l->crawl === 'big'))[0]);
        $next = $q->lease(1, 0.0);
        $this->assertSame('big', $next[0]->crawl);

        $q->pauseCrawl('big');
        $this->assertTrue($q->crawlStats('big')['paused']);
        $rest = $q->lease(100, 0.0);
        $this->assertSame(['small'], array_values(array_unique(array_map(fn ($l) => $l->crawl, $rest))));
        $this->assertSame(['big', 'small'], $q->crawls());
        $q->resumeCrawl('big');
        $this->assertSame(null, $q->setCrawlCap('big', null)['cap']);
        $this->assertSame(2, $q->setCrawlWeight('big', 2)['weight']);
        $this->assertSame(2.5, $q->setCrawlRate('big', 2.5)['rate']);
        $this->assertSame(null, $q->setCrawlRate('big', null)['rate']);
        $this->assertCount(76, $q->lease(100, 0.0));
        try {
            $q->setCrawlCap('big', 0);
            $this->fail('a cap of 0 accepted');
        } catch (Crawlq\InvalidArgumentException $e) {
            $this->assertStringContainsString('at least 1', $e->getMessage());
        }
    }

    public function testDeletingACrawlWithLeasesOutLeavesTheOtherCrawlWhole(): void
    {
        $q = $this->open(['host_delay' => 0.0]);
        $urls = fn (string $p) => array_map(fn ($i) => sprintf('http://h%d.com/%s%d', $i % 5, $p, $i), range(0, 19));
        $q->seed($urls('d'), ['crawl' => 'doomed']);
        $q->seed($urls('k'), ['crawl' => 'kept']);
        $out = $q->lease(10, 0.0);
        $doomedOut = array_values(array_filter($out, fn ($l) => $l->crawl === 'doomed'));
        $keptOut = array_values(array_filter($out, fn ($l) => $l->crawl === 'kept'));
        $gone = $q->deleteCrawl('doomed');
        $this->assertSame(['crawl' => 'doomed', 'ready' => 20 - count($doomedOut), 'delayed' => 0,
            'leased' => count($doomedOut), 'dead' => 0, 'removed' => 20], $gone);
        // an ack of a removed lease answers lost
        $this->assertFalse($q->ack($doomedOut[0]));
        foreach ($keptOut as $lease) {
            $q->ack($lease);
        }
        $this->assertCount(20 - count($keptOut), $q->lease(100, 0.0));
        $this->assertSame(['kept'], $q->crawls());
        $this->assertSame(0, $q->crawlStats('doomed')['seeded_total']);
    }

    public function testALongSeedReportsItsProgressAndAThrowingCallbackStopsIt(): void
    {
        $q = $this->open(['host_delay' => 0.0, 'seed_batch' => 500]);
        $urls = fn (string $p, int $n) => array_map(fn ($i) => sprintf('http://p%d.example/%s%d', $i % 40, $p, $i), range(1, $n));
        $reports = [];
        $report = $q->seed(array_merge($urls('a', 2000), ['ftp://refused.example/']), null, function (array $soFar) use (&$reports) {
            $reports[] = $soFar;
        });
        $this->assertSame([500, 1000, 1500, 2000, 2001], array_column($reports, 'done'));
        $this->assertSame(['done' => 2001, 'total' => 2001, 'added' => 2000, 'duplicates' => 0, 'invalid' => 1], end($reports));
        $this->assertSame([2000, 1], [$report->added, count($report->invalid)]);

        try {
            $q->seed($urls('b', 3000), [], function (array $soFar) {
                if ($soFar['done'] >= 1000) {
                    throw new \DomainException('enough');
                }
            });
            $this->fail('the callback\'s exception did not reach the caller');
        } catch (\DomainException $e) {
            $this->assertSame('enough', $e->getMessage());
        }
        $seen = $q->stats()['seen'] - 2000;
        $this->assertTrue($seen >= 1000 && $seen <= 1500 && $seen % 250 === 0, "the round trips reported, and at most the one sent after: $seen");
        $again = $q->seed($urls('b', 3000));
        $this->assertSame([3000 - $seen, $seen], [$again->added, $again->duplicates]);

        $requestReports = [];
        $q->seedRequests(array_map(fn ($i) => ['url' => "http://r.example/$i", 'method' => 'POST', 'body' => 'x'], range(1, 600)), null,
            function (array $soFar) use (&$requestReports) {
                $requestReports[] = $soFar['done'];
            });
        $this->assertSame([500, 600], $requestReports);
        try {
            $q->seed(['http://x.example/'], null, 'no_such_function');
            $this->fail('a progress that is not callable accepted');
        } catch (\TypeError $e) {
            $this->assertStringContainsString('progress', $e->getMessage());
        }
        $this->assertSame(5600, $q->stats()['seen'], 'nothing of a refused call is sent');
    }

    public function testLongDeletionsReportTheirProgressAndAThrowingCallbackStopsThem(): void
    {
        $q = $this->open(['host_delay' => 0.0]);
        $urls = fn (string $p, int $n) => array_map(fn ($i) => sprintf('http://h%d.com/%s%d', $i % 40, $p, $i), range(1, $n));
        $q->seed($urls('a', 1200), ['crawl' => 'big']);
        $reports = [];
        $gone = $q->deleteCrawl('big', function (array $soFar) use (&$reports) {
            $reports[] = $soFar['removed'];
        });
        $this->assertSame(1200, $gone['removed']);
        $this->assertGreaterThanOrEqual(3, count($reports), 'one report per bounded step');
        $sorted = $reports;
        sort($sorted);
        $this->assertSame($sorted, $reports, 'totals so far only grow');
        $this->assertSame(1200, end($reports));

        // a callback that throws stops the deletion after its step; calling again finishes it
        $q->seed($urls('b', 1200), ['crawl' => 'big']);
        try {
            $q->deleteCrawl('big', function (array $soFar) {
                if ($soFar['removed'] > 0) {
                    throw new \DomainException("stop at {$soFar['removed']}");
                }
            });
            $this->fail('the callback\'s exception did not reach the caller');
        } catch (\DomainException $e) {
            $this->assertMatchesRegularExpression('/^stop at \d+$/', $e->getMessage());
            $stoppedAt = (int) substr($e->getMessage(), 8);
        }
        $this->assertGreaterThan(0, $stoppedAt);
        $this->assertLessThan(1200, $stoppedAt);
        $stopped = $q->crawlStats('big');
        $left = $stopped['ready'];
        $this->assertSame(1200 - $stoppedAt, $left);
        $this->assertSame([true, true], [$stopped['deleting'], $stopped['paused']], 'shown as being deleted');
        $this->assertSame($left, $q->deleteCrawl('big')['removed']);
        $this->assertFalse($q->crawlStats('big')['deleting']);

        // a host, with its URLs forgotten, and the queue
        $q->seed(array_map(fn ($i) => "http://one.example/p$i", range(1, 1200)));
        $hostReports = [];
        $host = $q->deleteHost('one.example', true, function (array $soFar) use (&$hostReports) {
            $hostReports[] = $soFar['removed'];
        });
        $this->assertSame(1200, $host['removed']);
        $this->assertGreaterThanOrEqual(3, count($hostReports));
        $this->assertSame(1200, end($hostReports));
        $q->seed($urls('c', 300));
        $keys = [];
        $deleted = $q->removeQueue(false, function (int $soFar) use (&$keys) {
            $keys[] = $soFar;
        });
        $this->assertNotEmpty($keys);
        $this->assertSame($deleted, end($keys));
        $this->assertSame(0, $q->stats()['pending']);
        // null is no callback; what is not callable is refused before anything is deleted
        $this->assertSame(0, $q->deleteCrawl('big', null)['removed']);
        try {
            $q->deleteCrawl('big', 'no_such_function');
            $this->fail('a progress that is not callable accepted');
        } catch (\TypeError $e) {
            $this->assertStringContainsString('progress', $e->getMessage());
        }
    }

    public function testAWorkerLeasesFromItsChosenCrawlsOnly(): void
    {
        $name = unique_name('chosen');
        $q = new Queue(shared_redis()->url(), $name, ['host_delay' => 0.0]);
        $q->seed(array_map(fn ($i) => sprintf('http://h%d.com/big%d', $i % 50, $i), range(0, 99)), ['crawl' => 'big']);
        $q->seed(['http://h49.com/small1', 'http://h48.com/small2'], ['crawl' => 'small']);
        $worker = new Queue(shared_redis()->url(), $name, ['host_delay' => 0.0, 'lease_crawls' => 'small']);
        $leased = $worker->lease(10, 0.5);
        $crawls = array_map(fn ($l) => $l->crawl, $leased);
        $this->assertSame(['small', 'small'], $crawls);
        $this->assertSame(0, $q->crawlStats('big')['leased']);
        // a list of names as well as one string of them; a name with a space in a list is refused
        $listed = new Queue(shared_redis()->url(), $name, ['host_delay' => 0.0, 'lease_crawls' => ['small', 'none-yet']]);
        $worker->release($leased);
        $this->assertSame(['small', 'small'], array_map(fn ($l) => $l->crawl, $listed->lease(10, 0.5)));
        try {
            new Queue(shared_redis()->url(), $name, ['lease_crawls' => ['sm all']]);
            $this->fail('a name with a space was taken');
        } catch (Crawlq\ConfigException $e) {
            $this->assertStringContainsString('got "sm all"', $e->getMessage());
        }
        $this->expectException(Crawlq\ConfigException::class);
        new Queue(shared_redis()->url(), $name, ['lease_crawls' => 'a:b']);
    }

    public function testACrawlsHostBudgetRefusesPerItemAndCountsOnlyItsOwnUrls(): void
    {
        $q = $this->open(['host_delay' => 0.0]);
        $this->assertSame(1, $q->setCrawlHostBudget('trial', 1)['host_budget']);
        $urls = ['http://a.com/1', 'http://a.com/2', 'http://b.com/1'];
        $report = $q->seed($urls, ['crawl' => 'trial']);
        $this->assertSame(2, $report->added);
        $this->assertSame([[1, 'http://a.com/2', 'budget_exhausted']],
            array_map(fn ($e) => [$e['index'], $e['input'], $e['code']], $report->invalid));
        $this->assertSame(3, $q->seed($urls, ['crawl' => 'full'])->added);
        $this->assertNull($q->setCrawlHostBudget('trial')['host_budget']);
        $this->assertSame(1, $q->seed($urls, ['crawl' => 'trial'])->added);
        try {
            $q->setCrawlHostBudget('trial', -1);
            $this->fail('a negative budget accepted');
        } catch (Crawlq\InvalidArgumentException $e) {
            $this->assertStringContainsString('urls', $e->getMessage());
        }
    }

    public function testNamedCrawlsKeepOneItemPerCrawlAndAPagesLinksInItsCrawl(): void
    {
        // (T0 starts a minute of the clock: the crawls' rates below are exact)
        $q = $this->open(['host_delay' => 0.0, 'fixed_clock' => T0 / 1000]);
        foreach ([null, 'red', 'blue'] as $crawl) {
            $this->assertSame(1, $q->seed(['http://a.com/x'], ['crawl' => $crawl])->added);
            $this->assertSame(1, $q->seed(['http://a.com/x'], ['crawl' => $crawl])->duplicates);
        }
        $crawls = array_map(fn ($l) => $l->crawl ?? '', $q->lease(10, 0.0));
        sort($crawls);
        $this->assertSame(['', 'blue', 'red'], $crawls);
        $q->seed(['http://b.com/'], ['crawl' => 'site']);
        [$page] = $q->lease(1, 0.0);
        $this->assertSame('site', $page->crawl);
        $r = $q->ackWithLinks($page, ['http://b.com/next']);
        $this->assertSame(1, $r['links']->added);
        $this->assertSame('site', $q->lease(1, 0.0)[0]->crawl);
        $this->assertSame(['pending' => 0, 'ready' => 0, 'delayed' => 0, 'leased' => 1, 'dead' => 0, 'done' => 1, 'seen' => 2, 'hosts' => 0, 'oldest_pending_age' => null, 'seeded_total' => 2, 'cap' => null, 'paused' => false, 'deleting' => false, 'held_hosts' => 0, 'weight' => 1, 'rate' => null, 'host_budget' => null,
            'done_per_second' => 0.016667, 'seeded_per_second' => 0.033333],
            $q->crawlStats('site'));
        try {
            $q->seed(['http://a.com/'], ['crawl' => 'a:b']);
            $this->fail('crawl name accepted');
        } catch (Crawlq\InvalidArgumentException $e) {
            $this->assertStringContainsString('crawl name', $e->getMessage());
        }
    }
}
