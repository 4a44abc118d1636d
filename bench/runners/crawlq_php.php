<?php
// crawlq through the PHP extension, for bench/run.py. Same commands and output as crawlq-bench
// (bench/src/main.rs); concurrency is worker processes (pcntl_fork), as PHP deployments scale.
//   php -d extension=crawlq.so crawlq_php.php seed  <redis-url> <queue> <file>
//   php -d extension=crawlq.so crawlq_php.php drain <redis-url> <queue> <concurrency> <batch> <host-delay-ms> <expected>
//   ... crawlq_php.php drain-next ...   the same, each ack sent with the next lease (ackAndLease)
//   ... crawlq_php.php crawl <redis-url> <queue> <concurrency> <pages-file>   (bench/src/crawl.rs)

const IDLE_WAIT = 0.3; // an idle worker's last wait; the reported time ends at the last item
const SEEN_CACHE = 100000; // entries of the known-seen cache (every crawlq runner the same)

[$_, $op, $url, $queue] = $argv;
if ($op === 'seed') {
    $urls = file($argv[4], FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES);
    $q = new Crawlq\Queue($url, $queue);
    $started = hrtime(true);
    $added = $q->seed($urls)->added;
    echo json_encode(['items' => $added, 'seconds' => (hrtime(true) - $started) / 1e9]), "\n";
    exit(0);
}

if ($op === 'crawl') {
    $concurrency = (int) $argv[4];
    $pages = array_map(fn ($line) => explode("\t", $line), file($argv[5], FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES));
} else {
    [$concurrency, $batch, $delayMs, $expected] = array_map('intval', array_slice($argv, 4, 4));
}
$started = hrtime(true);
$pipes = [];
for ($i = 0; $i < $concurrency; $i++) {
    $pair = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
    $pid = pcntl_fork();
    if ($pid === 0 && $op === 'crawl') {
        // worker i of c answers pages i, i + c, ... (a line each: the page's links), each with
        // ackWithLinksAndLease (links seeded, lease acked, next page leased: one call), the
        // last with ackWithLinks
        fclose($pair[0]);
        $q = new Crawlq\Queue($url, $queue, ['seen_cache' => SEEN_CACHE]);
        $mine = array_values(array_filter($pages, fn ($k) => $k % $concurrency === $i, ARRAY_FILTER_USE_KEY));
        $done = 0;
        $last = $started;
        [$lease] = $q->lease(1, IDLE_WAIT);
        foreach ($mine as $k => $links) {
            if ($k + 1 === count($mine)) {
                $r = $q->ackWithLinks($lease, $links);
            } else {
                $r = $q->ackWithLinksAndLease($lease, $links, 1, IDLE_WAIT);
                $lease = $r['leases'][0];
            }
            $done += $r['acked'] ? 1 : 0;
            $last = hrtime(true);
        }
        fwrite($pair[1], json_encode([$done, $last]));
        exit(0);
    }
    if ($pid === 0) {
        fclose($pair[0]);
        // the extension connects lazily, so each worker process has its own connection
        $q = new Crawlq\Queue($url, $queue, ['host_delay' => $delayMs / 1000]);
        $done = 0;
        $last = $started;
        $leases = $q->lease($batch, IDLE_WAIT);
        while ($leases) {
            // the last items (of a single worker): a plain ack, no wait after them
            if ($op === 'drain-next' && $done + count($leases) < $expected) {
                ['acked' => $acked, 'leases' => $leases] = $q->ackAndLease($leases, $batch, IDLE_WAIT);
                $done += count(array_filter($acked));
            } else {
                $done += count(array_filter($q->ack($leases)));
                $leases = null;
            }
            $last = hrtime(true);
            $leases = $leases ?? $q->lease($batch, IDLE_WAIT);
        }
        fwrite($pair[1], json_encode([$done, $last]));
        exit(0);
    }
    fclose($pair[1]);
    $pipes[] = $pair[0];
}
$done = 0;
$last = $started;
foreach ($pipes as $pipe) {
    [$n, $at] = json_decode(stream_get_contents($pipe));
    $done += $n;
    $last = max($last, $at);
}
while (pcntl_wait($status) > 0) {
}
echo json_encode(['items' => $done, 'seconds' => ($last - $started) / 1e9]), "\n";
