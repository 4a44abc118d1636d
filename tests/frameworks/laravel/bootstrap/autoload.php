<?php
// Laravel from Debian's php-laravel-framework; the app and the crawlq driver by PSR-4 (what
// Composer's autoloader does in an application that requires crawlq/laravel).

require_once 'Illuminate/autoload.php';

$psr4 = [
    'App\\' => dirname(__DIR__) . '/app/',
    'Crawlq\\Laravel\\' => getenv('CRAWLQ_LARAVEL_SRC') ?: dirname(__DIR__, 4) . '/bindings-php/laravel/src/',
];
spl_autoload_register(function (string $class) use ($psr4): void {
    foreach ($psr4 as $prefix => $dir) {
        if (str_starts_with($class, $prefix)) {
            $file = $dir . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
            if (is_file($file)) {
                require $file;
            }
            return;
        }
    }
});
