'use strict'
// The installed npm package from require(): seed, lease, ack, stats against REDIS_URL.
const assert = require('node:assert')
const crawlq = require('crawlq')
const { version } = require('crawlq/package.json')

async function main () {
  const q = await crawlq.Queue.connect(process.env.REDIS_URL, `pkg-cjs-${process.pid}`, { hostDelayMs: 0 })
  const report = await q.seed(['https://example.com/a', 'https://example.org/b', 'https://example.com/a'])
  assert.deepStrictEqual([report.added, report.duplicates], [2, 1])
  const leases = await q.lease({ max: 2, waitMs: 1000 })
  assert.strictEqual(leases.length, 2)
  assert.deepStrictEqual(await q.ack(leases), [true, true])
  const stats = await q.stats()
  assert.deepStrictEqual([stats.done, stats.pending], [2, 0])
  await q.close?.()
  console.log(`require('crawlq') ${version}: ok`)
}

main().catch(err => { console.error(err); process.exit(1) })
