<?php

namespace Crawlq\Laravel;

/**
 * A job the crawlq driver cannot queue: it names no URL (it does not implement CrawlJob), or
 * its URL is refused by the frontier (`$code` is crawlq's refusal code, as in a SeedReport).
 */
final class InvalidCrawlJobException extends \InvalidArgumentException
{
    public function __construct(string $message, public readonly ?string $refusal = null, public readonly ?string $input = null)
    {
        parent::__construct($message);
    }

    /** @param array{index: int, input: string, code: string, reason: string} $invalid */
    public static function fromSeedReport(array $invalid): self
    {
        return new self("crawlq refused {$invalid['input']}: {$invalid['reason']}", $invalid['code'], $invalid['input']);
    }
}
