<?php

declare(strict_types=1);

use Crawlq\Lease;
use Crawlq\Queue;
use PHPUnit\Framework\TestCase;

/**
 * The hostile-input table shared by every binding (tests/vectors/hostile.json): each case's
 * answer, and a refused call leaves the data unchanged (DEBUG DIGEST).
 */
final class HostileTest extends TestCase
{
    public static function cases(): array
    {
        $table = json_decode((string) file_get_contents(__DIR__ . '/../../tests/vectors/hostile.json'), true);
        $out = [];
        foreach ($table['cases'] as $case) {
            $out[$case['name']] = [$case];
        }
        return $out;
    }

    /** A tagged value of the table as PHP's own. */
    private static function value(mixed $v): mixed
    {
        if (!is_array($v)) {
            return $v;
        }
        if (array_key_exists('$nan', $v)) {
            return NAN;
        }
        if (array_key_exists('$inf', $v)) {
            return $v['$inf'] * INF;
        }
        if (array_key_exists('$int', $v)) {
            // past 2^63 an integer is a float in PHP
            return (float) $v['$int'];
        }
        if (array_key_exists('$object', $v)) {
            return new stdClass();
        }
        if (array_key_exists('$bad_text', $v)) {
            return $v['$bad_text'] . "\xff";
        }
        return array_map([self::class, 'value'], $v);
    }

    private static function call(Queue $q, Lease $lease, array $raw): mixed
    {
        $c = array_map([self::class, 'value'], $raw);
        switch ($c['call']) {
            case 'seed':
                return $q->seed($c['items'], $c['options'] ?? null);
            case 'ack_with_links':
                return $q->ackWithLinks($lease, $c['items']);
            case 'lease':
                return $q->lease($c['max'], (float) $c['wait'], array_key_exists('ttl', $c) ? (float) $c['ttl'] : null);
            case 'nack':
                $options = [];
                foreach (['reason', 'delay'] as $k) {
                    if (array_key_exists($k, $c)) {
                        $options[$k] = $c[$k];
                    }
                }
                return $q->nack($lease, $options);
            case 'extend':
                return $q->extend($lease, (float) $c['ttl']);
            case 'set_host_delay':
                return $q->setHostDelay($c['host'], (float) $c['seconds']);
            case 'pause_host':
                return $q->pauseHost($c['host'], (float) $c['seconds']);
            case 'resume_host':
                return $q->resumeHost($c['host']);
            case 'host_info':
                return $q->hostInfo($c['host']);
            case 'delete_host':
                return $q->deleteHost($c['host']);
            case 'set_host_budget':
                return $q->setHostBudget($c['host'], $c['urls']);
            case 'list_hosts':
                return $q->listHosts($c['cursor'] ?? null, $c['limit']);
            case 'dead':
                return $q->dead($c['limit'], $c['offset']);
            case 'reclaim':
                return $q->reclaim($c['limit']);
            case 'open':
                return new Queue(shared_redis()->url(), $c['queue'], $c['options']);
        }
        throw new LogicException("no call {$c['call']}");
    }

    /** @dataProvider cases */
    public function testHostileInput(array $case): void
    {
        $redis = shared_redis();
        $q = new Queue($redis->url(), unique_name('hostile'));
        $q->seed(['http://held.example/1', 'http://queued.example/1']);
        [$lease] = $q->lease(1, 0.0);
        $this->assertSame('held.example', $lease->host);
        $before = $redis->cli('DEBUG', 'DIGEST');
        $expect = $case['expect_php'] ?? $case['expect'];
        if (isset($expect['error']) || isset($expect['type_error'])) {
            $thrown = null;
            try {
                self::call($q, $lease, $case);
            } catch (Throwable $e) {
                $thrown = $e;
            }
            $this->assertNotNull($thrown, 'the call is refused');
            if (isset($expect['error'])) {
                $this->assertInstanceOf(Crawlq\Exception::class, $thrown, $thrown->getMessage());
                $this->assertSame($expect['error'], $thrown->getCode(), $thrown->getMessage());
            } else {
                $this->assertInstanceOf(TypeError::class, $thrown, $thrown->getMessage());
            }
            $this->assertSame($before, $redis->cli('DEBUG', 'DIGEST'), 'a refused call changed nothing');
            return;
        }
        $answer = self::call($q, $lease, $case);
        if ($case['call'] === 'ack_with_links') {
            $this->assertSame($expect['acked'], $answer['acked']);
            $answer = $answer['links'];
        }
        if ($case['call'] === 'seed' || $case['call'] === 'ack_with_links') {
            $this->assertSame($expect['added'], $answer->added);
            $this->assertSame($expect['invalid'], array_map(fn ($i) => [$i['index'], $i['code']], $answer->invalid));
        }
        if (isset($expect['host'])) {
            $this->assertSame($expect['host'], $answer['host']);
        }
        if (isset($expect['outcome'])) {
            $this->assertSame($expect['outcome'], $answer);
        }
    }
}
