<?php
// The prebuilt extension as shipped: load it, seed, lease, ack, stats against REDIS_URL.
declare(strict_types=1);

$version = phpversion('crawlq');
$expected = $argv[1] ?? '';
if ($version !== $expected) {
    fwrite(STDERR, "extension version {$version}, expected {$expected}\n");
    exit(1);
}
$q = new Crawlq\Queue(getenv('REDIS_URL'), 'pkg-php-' . getmypid(), ['host_delay' => 0.0]);
$report = $q->seed(['https://example.com/a', 'https://example.org/b']);
$leases = $q->lease(2, 1.0);
$acked = $q->ack($leases);
$stats = $q->stats();
if ($report->added !== 2 || count($leases) !== 2 || $acked !== [true, true] || $stats['done'] !== 2) {
    fwrite(STDERR, "unexpected: " . var_export([$report->added, count($leases), $acked, $stats], true) . "\n");
    exit(1);
}
echo "extension=crawlq {$version}: ok\n";
