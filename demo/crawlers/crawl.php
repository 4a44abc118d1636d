<?php
// The demo's PHP crawler: same behaviour as crawl.py.
$origins = explode(',', getenv('SITE_ORIGINS'));
$q = new Crawlq\Queue(getenv('REDIS_URL'), getenv('CRAWLQ_QUEUE'), ['host_delay' => 0.1, 'max_attempts' => 2, 'backoff' => 'fixed', 'backoff_base' => 0.2,
    'seen_cache' => 100000]);
$fetched = $failed = 0;
while (true) {
    foreach ($q->work(max: 1, wait: 2.0, stop_when_empty: true) as $lease) {
        // the header tells the demo's web server when the queue handed this URL out
        $context = stream_context_create(['http' => ['timeout' => 5, 'ignore_errors' => true,
            'header' => 'X-Crawlq-Leased-At: ' . round($lease->leasedAt * 1000)]]);
        $html = @file_get_contents($lease->url, false, $context);
        if ($html === false) {
            $q->nack($lease, ['reason' => error_get_last()['message'] ?? 'fetch failed']);
            $failed++;
            continue;
        }
        preg_match('{^HTTP/\S+ (\d{3})}', $http_response_header[0] ?? '', $m);
        $status = (int) ($m[1] ?? 0);
        if ($status !== 200) {
            $q->nack($lease, ['retry' => $status >= 500, 'reason' => "HTTP $status"]);
            $failed++;
            continue;
        }
        preg_match_all('/href="([^"#]+)"/', $html, $links);
        $links = array_filter(array_map(fn ($href) => Crawlq\resolve_url($lease->url, $href), $links[1]),
            fn ($link) => $link !== null && array_filter($origins, fn ($o) => str_starts_with($link, $o)) !== []);
        // the page's ack and its links in one round trip; links the cache knows cost no Redis work
        $q->ackWithLinks($lease, array_values($links));
        $fetched++;
    }
    $stats = $q->stats();
    if ($stats['pending'] === 0 && $stats['leased'] === 0) {
        break;
    }
}
echo json_encode(['lang' => 'php', 'fetched' => $fetched, 'failed' => $failed]), "\n";
