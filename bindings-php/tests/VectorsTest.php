<?php

declare(strict_types=1);

use Crawlq\Lease;
use Crawlq\Queue;
use PHPUnit\Framework\TestCase;

/** The shared vectors of tests/vectors/, checked through the PHP extension. */
final class VectorsTest extends TestCase
{
    private const TIME_FIELDS = ['leased_at', 'expires_at', 'enqueued_at', 'died_at', 'held_until', 'paused_until', 'next_due', 'now', 'oldest_pending_age', 'delay', 'adaptive_extra'];

    private static function load(string $name): array
    {
        return json_decode((string) file_get_contents(__DIR__ . '/../../tests/vectors/' . $name), true, 512, JSON_THROW_ON_ERROR);
    }

    /** Vector names (`_ms` milliseconds) as PHP's (seconds); payloads left alone. */
    private static function toPhp(mixed $value): mixed
    {
        if (!is_array($value)) {
            return $value;
        }
        $out = [];
        foreach ($value as $k => $v) {
            if (is_string($k) && str_ends_with($k, '_ms')) {
                $out[substr($k, 0, -3)] = $v === null ? null : $v / 1000;
            } else {
                $out[$k] = $k === 'payload' ? $v : self::toPhp($v);
            }
        }
        return $out;
    }

    /** Results in vector units: seconds -> milliseconds for the time fields. */
    private static function toVector(mixed $value): mixed
    {
        if (!is_array($value)) {
            return $value;
        }
        $out = [];
        foreach ($value as $k => $v) {
            if (in_array($k, self::TIME_FIELDS, true) && is_float($v)) {
                $out[$k] = (int) round($v * 1000);
            } else {
                $out[$k] = $k === 'payload' ? $v : self::toVector($v);
            }
        }
        return $out;
    }

    private static function lease(Lease $l): array
    {
        return self::toVector(['id' => $l->id, 'url' => $l->url, 'host' => $l->host, 'key' => $l->key, 'payload' => $l->payload, 'priority' => $l->priority,
            'attempt' => $l->attempt, 'token' => $l->token, 'leased_at' => $l->leasedAt, 'expires_at' => $l->expiresAt,
            'enqueued_at' => $l->enqueuedAt, 'last_error' => $l->lastError, 'crawl' => $l->crawl]);
    }

    private static function matchesVector(mixed $expected, mixed $actual): bool
    {
        if (is_array($expected) && array_is_list($expected) && $expected !== []) {
            if (!is_array($actual) || count($actual) !== count($expected)) {
                return false;
            }
            foreach ($expected as $i => $e) {
                if (!array_key_exists($i, $actual) || !self::matchesVector($e, $actual[$i])) {
                    return false;
                }
            }
            return true;
        }
        if (is_array($expected)) {
            if ($expected === []) {
                return $actual === [];
            }
            foreach ($expected as $k => $e) {
                if (!is_array($actual) || !array_key_exists($k, $actual) || !self::matchesVector($e, $actual[$k])) {
                    return false;
                }
            }
            return true;
        }
        return is_int($expected) && is_float($actual) ? (float) $expected === $actual : $expected === $actual;
    }

    public function testBytesThatAreNotUtf8AreReplacedAsLoneSurrogatesAreElsewhere(): void
    {
        foreach (self::load('normalize.json')['invalid_text'] as $case) {
            $bytes = hex2bin($case['utf8_hex']);
            if (isset($case['error'])) {
                try {
                    Crawlq\normalize($bytes);
                    $this->fail('accepted ' . $case['utf8_hex']);
                } catch (Crawlq\InvalidItemException $e) {
                    $this->assertSame($case['error'], $e->reason, $case['utf8_hex']);
                }
            } else {
                $got = Crawlq\normalize($bytes);
                $this->assertSame([$case['kind'], $case['canonical'], $case['host'], $case['fingerprint']],
                    [$got['kind'], $got['canonical'], $got['host'], $got['fingerprint']], $case['utf8_hex']);
            }
        }
    }

    public function testShardVectors(): void
    {
        $cases = self::load('shards.json')['cases'];
        $this->assertGreaterThanOrEqual(100, count($cases));
        foreach ($cases as $case) {
            $this->assertSame($case['shard'], Crawlq\shard_of($case['input'], $case['shards']), json_encode($case));
        }
    }

    public function testNormalizationAndFingerprints(): void
    {
        $cases = self::load('normalize.json')['cases'];
        $this->assertGreaterThanOrEqual(300, count($cases));
        foreach ($cases as $case) {
            if (isset($case['error'])) {
                try {
                    Crawlq\normalize($case['input']);
                    $this->fail('accepted ' . json_encode($case['input']));
                } catch (Crawlq\InvalidItemException $e) {
                    $this->assertSame($case['error'], $e->reason, json_encode($case['input']));
                }
            } else {
                $got = Crawlq\normalize($case['input']);
                $this->assertSame([$case['kind'], $case['canonical'], $case['host'], $case['fingerprint']],
                    [$got['kind'], $got['canonical'], $got['host'], $got['fingerprint']], json_encode($case['input']));
            }
        }
    }

    private static function lines(string $text): array
    {
        return array_values(array_filter(explode("\n", $text), fn ($l) => $l !== ''));
    }

    public function testStoredRecords(): void
    {
        $file = self::load('records.json');
        foreach ($file['cases'] as $case) {
            $name = unique_name('records');
            $q = new Queue(shared_redis()->url(), $name, ['fixed_clock' => $file['clock'] / 1000]);
            $q->seed(self::toPhp($case['items']), self::toPhp($case['options']) ?: null);
            $base = "crawlq:{{$name}}";
            $records = [];
            foreach (self::lines(shared_redis()->cli('--scan', '--pattern', "$base:l:*")) as $lane) {
                array_push($records, ...self::lines(shared_redis()->cli('LRANGE', $lane, '0', '-1')));
            }
            array_push($records, ...self::lines(shared_redis()->cli('ZRANGE', "$base:delayed", '0', '-1')));
            usort($records, fn ($a, $b) => (int) json_decode($a, true)['id'] <=> (int) json_decode($b, true)['id']);
            $this->assertSame($case['expect'], $records, $case['name']);
        }
    }

    public function testKeyNames(): void
    {
        foreach (self::load('keys.json')['cases'] as $case) {
            $prefix = unique_name('vec');
            $q = new Queue(shared_redis()->url(), $case['queue'], ['key_prefix' => $prefix]);
            $q->seed(self::toPhp($case['items']));
            $keys = self::lines(shared_redis()->cli('--scan', '--pattern', "$prefix:*"));
            sort($keys);
            $this->assertSame(array_map(fn ($k) => str_replace('{prefix}', $prefix, $k), $case['expect']), $keys);
        }
    }

    public function testScenarios(): void
    {
        $file = self::load('scenarios.json');
        foreach ($file['scenarios'] as $scenario) {
            $q = new Queue(shared_redis()->url(), unique_name('scenario'), ['fixed_clock' => $file['clock'] / 1000] + self::toPhp($scenario['options']));
            $leases = [];
            foreach ($scenario['steps'] as $i => $step) {
                $where = "{$scenario['name']}, step $i ({$step['op']})";
                $arg = array_key_exists('lease', $step) ? $leases[$step['lease']]
                    : (array_key_exists('leases', $step) ? array_map(fn ($j) => $leases[$j], $step['leases']) : null);
                $options = self::toPhp($step['options'] ?? []) ?: null;
                try {
                    $got = match ($step['op']) {
                        'clock' => $q->_setFixedClock($step['ms']),
                        'seed' => (fn ($r) => ['added' => $r->added, 'duplicates' => $r->duplicates, 'invalid' => $r->invalid, 'ids' => $r->ids])($q->seed(self::toPhp($step['items']), $options)),
                        'lease' => (function () use ($q, $step, &$leases) {
                            $fresh = $q->lease($step['max'], $step['wait_ms'] / 1000);
                            array_push($leases, ...$fresh);
                            return array_map(fn ($l) => self::lease($l), $fresh);
                        })(),
                        'ack' => $q->ack($arg, $options),
                        'ack_and_lease' => (function () use ($q, $step, $arg, &$leases) {
                            $r = $q->ackAndLease($arg, $step['max'], $step['wait_ms'] / 1000);
                            array_push($leases, ...$r['leases']);
                            return ['acked' => $r['acked'], 'leases' => array_map(fn ($l) => self::lease($l), $r['leases'])];
                        })(),
                        'nack' => $q->nack($arg, $options),
                        'extend' => (fn ($d) => is_array($d) ? array_map(fn ($t) => $t === null ? null : (int) round($t * 1000), $d) : (int) round($d * 1000))($q->extend($arg, $step['ttl_ms'] / 1000)),
                        'release' => $q->release($arg, $options),
                        'reclaim' => $q->reclaim($step['limit']),
                        'stats' => self::toVector($q->stats()),
                        'dead' => self::toVector($q->dead($step['limit'], $step['offset'])),
                        'requeue_dead' => $q->requeueDead($step['ids']),
                        'is_finished' => $q->isFinished(),
                        'purge_dead' => $q->purgeDead($step['ids'] ?? null),
                        'set_host_delay' => self::toVector($q->setHostDelay($step['host'], $step['delay_ms'] === null ? null : $step['delay_ms'] / 1000)),
                        'host_info' => self::toVector($q->hostInfo($step['host'])),
                        'ack_with_links' => (fn ($r) => ['acked' => $r['acked'], 'links' => ['added' => $r['links']->added, 'duplicates' => $r['links']->duplicates, 'invalid' => $r['links']->invalid, 'ids' => $r['links']->ids]])($q->ackWithLinks($arg, self::toPhp($step['links']), $options)),
                        'ack_with_links_and_lease' => (function () use ($q, $step, $arg, $options, &$leases) {
                            $r = $q->ackWithLinksAndLease($arg, self::toPhp($step['links']), $step['max'], $step['wait_ms'] / 1000, $options);
                            array_push($leases, ...$r['leases']);
                            $l = $r['links'];
                            return ['acked' => $r['acked'], 'links' => ['added' => $l->added, 'duplicates' => $l->duplicates, 'invalid' => $l->invalid, 'ids' => $l->ids], 'leases' => array_map(fn ($l) => self::lease($l), $r['leases'])];
                        })(),
                        'wait_host_turn' => $q->waitHostTurn($step['url'], $arg, $step['timeout_ms'] / 1000),
                        'set_host_crawl_delay' => self::toVector($q->setHostCrawlDelay($step['host'], $step['delay_ms'] === null ? null : $step['delay_ms'] / 1000)),
                        'set_host_delay_after' => self::toVector($q->setHostDelayAfter($step['host'], $step['after'], $step['factor'])),
                        'set_host_in_flight' => self::toVector($q->setHostInFlight($step['host'], $step['limit'])),
                        'set_host_budget' => self::toVector($q->setHostBudget($step['host'], $step['urls'])),
                        'set_default_host_budget' => $q->setDefaultHostBudget($step['urls']),
                        'default_host_budget' => $q->defaultHostBudget(),
                        'pause' => $q->pause($step['duration_ms'] === null ? null : $step['duration_ms'] / 1000),
                        'resume' => $q->resume(),
                        'is_paused' => $q->isPaused(),
                        'list_hosts' => self::toVector($q->listHosts($step['cursor'], $step['limit'])),
                        'remove_queue' => $q->removeQueue($step['even_if_leased'] ?? false),
                        'delete_host' => self::toVector($q->deleteHost($step['host'], $step['forget_seen'] ?? false)),
                        'pause_host' => self::toVector($q->pauseHost($step['host'], $step['duration_ms'] === null ? null : $step['duration_ms'] / 1000)),
                        'resume_host' => self::toVector($q->resumeHost($step['host'])),
                        'peek' => self::toVector($q->peek($step['limit'])),
                        'peek_host' => self::toVector($q->peekHost($step['host'], $step['limit'], $step['offset'])),
                        'crawl_stats' => self::toVector($q->crawlStats($step['crawl'])),
                        'set_crawl_cap' => self::toVector($q->setCrawlCap($step['crawl'], $step['cap'])),
                        'set_crawl_weight' => self::toVector($q->setCrawlWeight($step['crawl'], $step['weight'])),
                        'set_crawl_host_budget' => self::toVector($q->setCrawlHostBudget($step['crawl'], $step['urls'])),
                        'pause_crawl' => $q->pauseCrawl($step['crawl']),
                        'resume_crawl' => $q->resumeCrawl($step['crawl']),
                        'crawls' => $q->crawls(),
                        'delete_crawl' => self::toVector($q->deleteCrawl($step['crawl'])),
                    };
                } catch (Crawlq\Exception $e) {
                    $this->assertSame($step['expect_error'] ?? null, $e->getCode(), "$where: " . $e->getMessage());
                    continue;
                }
                $this->assertArrayNotHasKey('expect_error', $step, "$where: no error");
                if (array_key_exists('expect', $step)) {
                    $this->assertTrue(self::matchesVector($step['expect'], $got), "$where: expected " . json_encode($step['expect']) . ', got ' . json_encode($got));
                }
            }
        }
    }

    /** A vector value with ['$bytes' => base64] arrays as PHP byte strings (as the extension reads them). */
    private static function nativeBytes(mixed $value): mixed
    {
        if (!is_array($value)) {
            return $value;
        }
        if (array_keys($value) === ['$bytes']) {
            return base64_decode($value['$bytes'], true);
        }
        return array_map([self::class, 'nativeBytes'], $value);
    }

    public function testCrawlRequestsStoreReadAndKeyAsTheVectorsSay(): void
    {
        $file = self::load('requests.json');
        $name = unique_name('requests');
        $q = new Queue(shared_redis()->url(), $name, ['fixed_clock' => 1_800_000_000.0]);
        foreach ($file['cases'] as $c) {
            $request = self::nativeBytes($c['request']);
            $this->assertEquals(self::nativeBytes($c['payload']), Crawlq\request_payload($request), $c['name']);
            $this->assertSame(1, $q->seedRequests([$request])->added, $c['name']);
            [$lease] = $q->lease(1, 0.0);
            $this->assertSame($c['key'], $lease->key, $c['name']);
            $this->assertEquals(self::nativeBytes($c['read']), Crawlq\request_of($lease), $c['name']);
            $record = shared_redis()->cli('HGET', "crawlq:{{$name}}:leases", "{$lease->token}:{$lease->id}");
            $this->assertStringContainsString('"payload":' . $c['stored'] . '}', $record, $c['name']);
            $this->assertTrue($q->ack($lease));
        }
        foreach ($file['reads'] as $c) {
            if ($c['url'] === null) {
                continue; // a host item: no lease of one carries a URL to read
            }
            $q->seed([['url' => $c['url'], 'payload' => $c['payload']]]);
            [$lease] = $q->lease(1, 0.0);
            if (isset($c['error'])) {
                try {
                    Crawlq\request_of($lease);
                    $this->fail("{$c['name']}: read");
                } catch (Crawlq\ProtocolException $e) {
                    $this->assertSame($c['error'], $e->getCode());
                }
            } else {
                $this->assertEquals(self::nativeBytes($c['read']), Crawlq\request_of($lease), $c['name']);
            }
            $q->ack($lease);
        }
        foreach ($file['updates'] as $c) {
            // seeded as stored (its JSON text: PHP arrays would make {} a list), changed, stored
            // by a release: the record holds what every other runtime stores
            $q->seed([['url' => $c['url'], 'payload' => Crawlq\Payload::fromJson($c['payload_json'])]]);
            [$lease] = $q->lease(1, 0.0);
            if (isset($c['error'])) {
                try {
                    Crawlq\request_update($lease, $c['changes']);
                    $this->fail("{$c['name']}: changed");
                } catch (Crawlq\Exception $e) {
                    $this->assertSame($c['error'], $e->getCode(), $c['name']);
                }
                $q->ack($lease);
                continue;
            }
            $payload = Crawlq\request_update($lease, $c['changes']);
            $this->assertEquals(self::nativeBytes($c['result']), $payload->toArray(), $c['name']);
            $this->assertTrue($q->release($lease, ['payload' => $payload]));
            [$lease] = $q->lease(1, 0.0);
            $record = shared_redis()->cli('HGET', "crawlq:{{$name}}:leases", "{$lease->token}:{$lease->id}");
            $this->assertStringContainsString('"payload":' . $c['stored'] . '}', $record, $c['name']);
            $q->ack($lease);
        }
        $sorting = new Queue(shared_redis()->url(), $name . '-sorted', ['sort_query' => true]);
        foreach ($file['sort_query'] as $c) {
            if ($sorting->seed([$c['input']])->added === 0) {
                continue;
            }
            [$lease] = $sorting->lease(1, 0.0);
            $this->assertSame($c['canonical'], $lease->url, $c['input']);
            $sorting->ack($lease);
        }
    }
}
