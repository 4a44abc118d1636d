// The installed npm package from an ES module: named imports, seed, lease, nack, dead letters.
import assert from 'node:assert'
import { Queue, normalize } from 'crawlq'

const q = await Queue.connect(process.env.REDIS_URL, `pkg-esm-${process.pid}`, { hostDelayMs: 0, maxAttempts: 1 })
assert.strictEqual(normalize('HTTPS://Example.COM/a#x').canonical, 'https://example.com/a')
await q.seed(['https://example.net/gone'])
const [lease] = await q.lease({ max: 1, waitMs: 1000 })
assert.strictEqual(await q.nack(lease, { reason: 'HTTP 404', retry: false }), 'dead')
const dead = await q.dead({ limit: 10 })
assert.strictEqual(dead[0].lastError, 'HTTP 404')
await q.close?.()
console.log("import { Queue } from 'crawlq': ok")
