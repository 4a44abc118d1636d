<?php
// The local site the examples crawl (php -S 127.0.0.1:PORT site-router.php).
$path = parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH);
$pages = getenv('SITE_MODE') === 'readme' ? [
    // the site every language's README worker crawls
    '/' => '<a href="/a">a</a> <a href="/b#top">b</a>',
    '/a' => '<a href="/b">b</a> <a href="c">c</a>',
    '/b' => '<a href="/">home</a>',
    '/c' => '<a href="/missing">gone</a>',
] : [
    '/' => '<a href="/a">a</a> <a href="/b#top">b</a> <a href="/e500">e</a> <a href="/e404">n</a>'
        . ' <a href="/private/x">p</a> <a href="/slow">s</a> <a href="/e429">r</a>',
    '/a' => '<a href="/b">b</a> <a href="c">c</a>',
    '/b' => '<a href="/">home</a>',
    '/c' => 'leaf',
    '/private/x' => 'should never be fetched',
];
if ($path === '/robots.txt' && getenv('SITE_ROBOTS') === '1') {
    echo "User-agent: *\nDisallow: /private/\n";
    return;
}
if ($path === '/slow') {
    sleep(3);
}
if ($path === '/e500') {
    http_response_code(500);
    return;
}
if ($path === '/e429') {
    // rate limited twice, then served
    $counter = sys_get_temp_dir() . '/crawlq-site-' . getenv('SITE_ID') . '-429';
    $seen = (int) @file_get_contents($counter);
    file_put_contents($counter, (string) ($seen + 1));
    if ($seen < 2) {
        http_response_code(429);
        return;
    }
    echo 'finally';
    return;
}
if (!isset($pages[$path])) {
    http_response_code(404);
    echo 'not found';
    return;
}
echo $pages[$path];
