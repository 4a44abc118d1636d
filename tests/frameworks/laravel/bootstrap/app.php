<?php

// Storage and Laravel's caches in a scratch folder: the test runs from a read-only checkout too.
$storage = getenv('LARAVEL_STORAGE') ?: sys_get_temp_dir() . '/crawlq-laravel-storage';
foreach (['framework/cache', 'logs'] as $dir) {
    is_dir("$storage/$dir") || mkdir("$storage/$dir", 0777, true);
}
foreach (['PACKAGES', 'SERVICES', 'CONFIG', 'ROUTES', 'EVENTS'] as $cache) {
    $_SERVER["APP_{$cache}_CACHE"] ??= "$storage/framework/cache/" . strtolower($cache) . '.php';
}

$app = new Illuminate\Foundation\Application(dirname(__DIR__));
$app->useStoragePath($storage);
$app->singleton(Illuminate\Contracts\Console\Kernel::class, App\Console\Kernel::class);
$app->singleton(Illuminate\Contracts\Debug\ExceptionHandler::class, App\Exceptions\Handler::class);

return $app;
