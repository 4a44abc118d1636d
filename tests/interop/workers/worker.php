<?php
// Interop worker (PHP). Same modes, behaviour and ledger as worker.py.
[, $mode, $url, $name] = $argv;
$ledgerPath = $argv[4] ?? null;
$q = new Crawlq\Queue($url, $name, ['lease_ttl' => 3.0, 'host_delay' => 0.02]);
if ($mode === 'seed') {
    usleep(max(0, (int) ((((int) getenv('CRAWLQ_START_AT')) / 1000 - microtime(true)) * 1e6)));
    $report = $q->seed(array_slice(explode("\n", (string) file_get_contents($ledgerPath)), 0, -1));
    echo json_encode(['added' => $report->added, 'duplicates' => $report->duplicates]), "\n";
    exit(0);
}
if ($mode === 'bytes') {
    [$lease] = $q->lease(1, 2.0);
    $expected = implode('', array_map('chr', range(0, 255)));
    $q->nack($lease, ['retry' => false, 'payload' => ['body' => strrev($expected), 'by' => 'php']]);
    echo json_encode(['ok' => $lease->payload['body'] === $expected]), "\n";
    exit(0);
}
$slowMs = $argv[5];
$ledger = fopen($ledgerPath, 'a');
$log = function (array $entry) use ($ledger): void {
    fwrite($ledger, json_encode($entry) . "\n");
    fflush($ledger);
};
$idle = 0;
while (true) {
    $leases = $q->lease(5, 1.0);
    if ($leases === []) {
        $stats = $q->stats();
        if (++$idle >= 2 && $stats['pending'] === 0 && $stats['leased'] === 0) {
            break;
        }
        continue;
    }
    $idle = 0;
    foreach ($leases as $l) {
        $log(['ev' => 'lease', 'id' => $l->id, 'url' => $l->url, 'token' => $l->token, 'host' => $l->host,
            'at' => (int) round($l->leasedAt * 1000), 'exp' => (int) round($l->expiresAt * 1000)]);
    }
    foreach ($leases as $l) {
        usleep((int) (((int) $slowMs + mt_rand(0, 3000) / 1000) * 1000));
        if ($l->url !== null && str_ends_with($l->url, '/poison')) {
            $log(['ev' => 'nack', 'id' => $l->id, 'token' => $l->token, 'outcome' => $q->nack($l, ['retry' => false, 'reason' => 'forced by the scenario'])]);
        } else {
            $log(['ev' => 'ack', 'id' => $l->id, 'token' => $l->token, 'ok' => $q->ack($l)]);
        }
    }
}
fclose($ledger);
echo 'php worker ', getmypid(), " done\n";
