<?php
// Test harness: the extension must be loaded (php -d extension=/path/to/crawlq.so), and
// redis-server processes are started by the tests themselves (free port, no persistence).

declare(strict_types=1);

error_reporting(E_ALL);
if (!extension_loaded('crawlq')) {
    fwrite(STDERR, "load the extension: php -d extension=/path/to/crawlq.so /usr/bin/phpunit\n");
    exit(2);
}

final class RedisServer
{
    public int $port;
    /** @var resource */
    private $process;
    private string $dir;

    public function __construct(string ...$extra)
    {
        $this->start('redis-server', $extra);
    }

    /** A server of another redis-server binary (an older Redis). */
    public static function ofBinary(string $binary, string ...$extra): self
    {
        $server = (new \ReflectionClass(self::class))->newInstanceWithoutConstructor();
        $server->start($binary, $extra);
        return $server;
    }

    /** @param list<string> $extra */
    private function start(string $binary, array $extra): void
    {
        for ($attempt = 0; $attempt < 20; $attempt++) {
            $probe = stream_socket_server('tcp://127.0.0.1:0');
            $this->port = (int) substr(strrchr(stream_socket_get_name($probe, false), ':'), 1);
            fclose($probe);
            $this->dir = sys_get_temp_dir() . '/crawlq-php-' . getmypid() . '-' . bin2hex(random_bytes(4));
            mkdir($this->dir);
            $cmd = array_merge([$binary, '--port', (string) $this->port, '--bind', '127.0.0.1', '--save', '',
                '--appendonly', 'no', '--dir', $this->dir], $extra);
            $this->process = proc_open($cmd, [0 => ['file', '/dev/null', 'r'], 1 => ['file', '/dev/null', 'w'], 2 => ['file', '/dev/null', 'w']], $pipes);
            $deadline = microtime(true) + 5;
            while (microtime(true) < $deadline) {
                if (!proc_get_status($this->process)['running']) {
                    break;
                }
                $socket = @stream_socket_client("tcp://127.0.0.1:{$this->port}", $errno, $error, 0.2);
                if ($socket) {
                    fclose($socket);
                    return;
                }
                usleep(20_000);
            }
            $this->stop();
        }
        throw new RuntimeException('could not start redis-server (apt-get install redis-server)');
    }

    public function url(): string
    {
        return "redis://127.0.0.1:{$this->port}/0";
    }

    public function cli(string ...$args): string
    {
        $cmd = array_merge(['redis-cli', '-p', (string) $this->port], $args);
        $process = proc_open($cmd, [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        $out = stream_get_contents($pipes[1]);
        proc_close($process);
        return trim((string) $out);
    }

    public function stop(): void
    {
        if (is_resource($this->process)) {
            proc_terminate($this->process, 9);
            proc_close($this->process);
        }
        if (is_dir($this->dir)) {
            array_map('unlink', glob($this->dir . '/*') ?: []);
            @rmdir($this->dir);
        }
    }

    public function __destruct()
    {
        $this->stop();
    }
}

/** The server shared by the tests of this run. */
function shared_redis(): RedisServer
{
    static $server = null;
    return $server ??= new RedisServer();
}

function unique_name(string $prefix): string
{
    static $n = 0;
    return sprintf('%s-%d-%d', $prefix, getmypid(), $n++);
}

/** A PHP command line with the same extension loaded (for subprocess tests). */
function php_command(): array
{
    $extension = getenv('CRAWLQ_PHP_EXTENSION');
    if ($extension === false || $extension === '') {
        throw new RuntimeException('set CRAWLQ_PHP_EXTENSION to the path of crawlq.so for subprocess tests');
    }
    return [PHP_BINARY, '-d', 'extension=' . $extension];
}

const T0 = 1_800_000_000_000;
