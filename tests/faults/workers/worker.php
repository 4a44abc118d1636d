<?php
// Fault-suite worker (PHP). Same behaviour and ledger as worker.py.
[, $url, $name, $ledgerPath, $stopFile, $slowMs] = $argv;
$options = json_decode(getenv('CRAWLQ_FAULT_OPTIONS'), true);
$ledger = fopen($ledgerPath, 'a');
$log = function (array $entry) use ($ledger): void {
    fwrite($ledger, json_encode($entry) . "\n");
    fflush($ledger);
};
$q = null;
while (!file_exists($stopFile)) {
    try {
        $q ??= new Crawlq\Queue($url, $name, $options);
        $leases = $q->lease(5, 0.5);
    } catch (Crawlq\Exception $e) {
        $log(['ev' => 'error', 'code' => $e->getCode(), 'during' => 'lease', 'message' => substr($e->getMessage(), 0, 200)]);
        usleep(100000);
        continue;
    }
    foreach ($leases as $l) {
        $log(['ev' => 'lease', 'id' => $l->id, 'url' => $l->url, 'token' => $l->token,
              'at' => (int) round($l->leasedAt * 1000), 'exp' => (int) round($l->expiresAt * 1000)]);
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
