<?php

// The worker reads its restart signal from the cache; one process's array store is enough here.
return ['default' => 'array', 'stores' => ['array' => ['driver' => 'array', 'serialize' => false]]];
