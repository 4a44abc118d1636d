<?php
// Prints, as JSON, every class and function of the Crawlq namespace as Reflection sees it.
// Run once against the built extension and once against crawlq.stub.php (without the
// extension): the two descriptions must be equal.
if (($argv[1] ?? '') === 'stub') {
    if (extension_loaded('crawlq')) {
        fwrite(STDERR, "describe the stub without the extension loaded\n");
        exit(2);
    }
    require __DIR__ . '/../crawlq.stub.php';
}

$type = fn (?ReflectionType $t) => $t === null ? null : (string) $t;
// Classes PHP code only receives from the extension: at runtime they have a placeholder
// constructor that throws; the stub leaves it out.
$returnedOnly = ['Crawlq\\Lease', 'Crawlq\\Payload', 'Crawlq\\SeedReport', 'Crawlq\\Work'];
$out = ['classes' => [], 'functions' => []];
$classes = array_filter(get_declared_classes(), fn ($c) => str_starts_with($c, 'Crawlq\\'));
sort($classes);
foreach ($classes as $name) {
    $class = new ReflectionClass($name);
    $methods = [];
    foreach ($class->getMethods() as $m) {
        if ($m->getDeclaringClass()->getName() !== $name) {
            continue;
        }
        if ($m->getName() === '__construct' && in_array($name, $returnedOnly, true)) {
            continue;
        }
        $params = [];
        foreach ($m->getParameters() as $p) {
            $params[] = [
                'name' => $p->getName(),
                'type' => $type($p->getType()),
                'optional' => $p->isOptional(),
                'default' => $p->isDefaultValueAvailable() ? var_export($p->getDefaultValue(), true) : null,
            ];
        }
        $methods[$m->getName()] = [
            'static' => $m->isStatic(),
            'params' => $params,
            'return' => $m->getName() === '__construct' ? null : $type($m->getReturnType()),
        ];
    }
    ksort($methods);
    $props = array_map(fn ($p) => $p->getName(), array_filter($class->getProperties(), fn ($p) => $p->getDeclaringClass()->getName() === $name));
    sort($props);
    $interfaces = $class->getInterfaceNames();
    sort($interfaces);
    $out['classes'][$name] = [
        'final' => $class->isFinal(),
        'parent' => $class->getParentClass() ? $class->getParentClass()->getName() : null,
        'interfaces' => $interfaces,
        'methods' => $methods,
        'properties' => array_values($props),
    ];
}
$functions = array_filter(array_merge(get_defined_functions()['internal'], get_defined_functions()['user']), fn ($f) => str_starts_with($f, 'crawlq\\'));
sort($functions);
foreach ($functions as $f) {
    $r = new ReflectionFunction($f);
    $out['functions'][$r->getName()] = [
        'params' => array_map(fn ($p) => ['name' => $p->getName(), 'type' => $type($p->getType())], $r->getParameters()),
        'return' => $type($r->getReturnType()),
    ];
}
echo json_encode($out, JSON_PRETTY_PRINT | JSON_UNESCAPED_SLASHES), "\n";
