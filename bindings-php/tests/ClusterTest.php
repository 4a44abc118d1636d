<?php
// One queue of 8 shards over a Redis Cluster (CRAWLQ_CLUSTER_URL, started by tools/test.sh).

use Crawlq\Queue;
use PHPUnit\Framework\TestCase;

final class ClusterTest extends TestCase
{
    public function testOneQueueOfEightShardsOverACluster(): void
    {
        $url = getenv('CRAWLQ_CLUSTER_URL');
        if (!$url) {
            $this->markTestSkipped('CRAWLQ_CLUSTER_URL is not set (tools/test.sh sets it)');
        }
        $name = unique_name('cluster');
        $q = new Queue($url, $name, ['shards' => 8]);
        $urls = [];
        for ($i = 0; $i < 300; $i++) {
            $urls[] = 'http://h' . ($i % 30) . ".cluster.example/$i";
        }
        $this->assertSame(300, $q->seed($urls)->added);
        $done = 0;
        foreach ($q->work(20, 0.3, null, true) as $lease) {
            $this->assertMatchesRegularExpression('/^\d+@\d$/', $lease->id);
            if (str_ends_with($lease->url, '/7')) {
                $q->nack($lease, ['retry' => false, 'reason' => 'gone']);
            } elseif ($q->ack($lease)) {
                $done++;
            }
        }
        $stats = $q->stats();
        $this->assertSame([299, 1, 0, 0], [$stats['done'], $stats['dead'], $stats['pending'], $stats['leased']]);
        $this->assertCount(8, $stats['shards']);
        $this->assertSame(299, $done);
        [$dead] = $q->dead();
        $this->assertSame(Crawlq\shard_of($dead['url'], 8), (int) explode('@', $dead['id'])[1]);
        $this->assertSame(1, $q->requeueDead([$dead['id']]));
        // the extension connects on first use: the other count is refused there
        $this->expectException(Crawlq\ConfigException::class);
        (new Queue($url, $name, ['shards' => 4]))->stats();
    }
}
