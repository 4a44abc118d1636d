<?php
// Fault-suite worker (PHP). Same behaviour and ledger as worker.py, and the same crawl when
// CRAWLQ_FAULT_CRAWL is set (one task: a PHP process answers one page at a time).
[, $url, $name, $ledgerPath, $stopFile, $slowMs] = $argv;
$options = json_decode(getenv('CRAWLQ_FAULT_OPTIONS'), true);
$crawl = json_decode(getenv('CRAWLQ_FAULT_CRAWL') ?: 'null', true);
$ledger = fopen($ledgerPath, 'a');
$log = function (array $entry) use ($ledger): void {
    fwrite($ledger, json_encode($entry) . "\n");
    fflush($ledger);
};
$logLeases = function (array $leases) use ($log): void {
    foreach ($leases as $l) {
        $log(['ev' => 'lease', 'id' => $l->id, 'url' => $l->url, 'token' => $l->token,
              'at' => (int) round($l->leasedAt * 1000), 'exp' => (int) round($l->expiresAt * 1000)]);
    }
};
// The links of page i of the crawl, as worker.py's links().
$links = function (string $pageUrl) use ($crawl): array {
    [$n, $s] = [$crawl['items'], $crawl['seeds']];
    $i = (int) substr($pageUrl, strrpos($pageUrl, '/') + 1);
    $domain = explode('.', parse_url($pageUrl, PHP_URL_HOST), 2)[1];
    $found = [2 * $i + 1, 2 * $i + 2, 0, $s - 1, $i % $s, ($i + 3) % $s, ($i * 5) % $s];
    $out = [];
    foreach ($found as $k) {
        if ($k < $n) {
            $out[] = sprintf('http://h%d.%s/page/%d', $k % $crawl['hosts'], $domain, $k);
        }
    }
    return $out;
};
$q = null;
$held = null;
while (!file_exists($stopFile)) {
    if ($crawl !== null && $held !== null) {
        usleep((int) $slowMs * 1000);
        try {
            $answer = $q->ackWithLinksAndLease($held, $links($held->url), 1, 0.5);
        } catch (Crawlq\Exception $e) {
            // the page, its links and the next lease may or may not have been applied
            $log(['ev' => 'ack', 'id' => $held->id, 'token' => $held->token, 'ok' => null, 'code' => $e->getCode()]);
            $held = null;
            usleep(100000);
            continue;
        }
        $log(['ev' => 'ack', 'id' => $held->id, 'token' => $held->token, 'ok' => $answer['acked']]);
        $logLeases($answer['leases']);
        $held = $answer['leases'][0] ?? null;
        continue;
    }
    try {
        $q ??= new Crawlq\Queue($url, $name, $options);
        $leases = $q->lease($crawl !== null ? 1 : 5, 0.5);
    } catch (Crawlq\Exception $e) {
        $log(['ev' => 'error', 'code' => $e->getCode(), 'during' => 'lease', 'message' => substr($e->getMessage(), 0, 200)]);
        usleep(100000);
        continue;
    }
    $logLeases($leases);
    if ($crawl !== null) {
        $held = $leases[0] ?? null;
        continue;
    }
    foreach ($leases as $l) {
        usleep((int) $slowMs * 1000);
        try {
            $log(['ev' => 'ack', 'id' => $l->id, 'token' => $l->token, 'ok' => $q->ack($l)]);
        } catch (Crawlq\Exception $e) {
            $log(['ev' => 'ack', 'id' => $l->id, 'token' => $l->token, 'ok' => null, 'code' => $e->getCode()]);
        }
    }
}
